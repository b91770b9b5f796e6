"""The report's ``ci_relay`` block: the fields PyTorch's Cross-Repository CI Relay takes from a downstream run.

The relay (RFC-0050, https://github.com/pytorch/rfcs/pull/90) forwards PyTorch pull-request events to an
out-of-tree backend's repository and takes its result back through the ``cross-repo-ci-relay-callback``
action of pytorch/test-infra (``.github/actions/cross-repo-ci-relay-callback/action.yml`` and
``report_callback.py``: https://github.com/pytorch/test-infra/tree/main/.github/actions/cross-repo-ci-relay-callback).
That action's inputs, as the probe fills them:

- ``status``: ``completed`` (the probe reports a finished run; ``in_progress`` is the workflow's own step);
- ``conclusion``: passed to the check run as-is, a value GitHub accepts: ``success`` when the report is ok,
  else ``failure``;
- ``test-results``: a JSON summary of counts, ``passed`` / ``failed`` / ``skipped`` (a check that makes the
  run not ok counts as failed, see ``probes.checks.registry.is_failing``; the others that did not pass as
  skipped);
- ``failed-tests-detail``: a JSON array, one object per failed test with ``name`` (the check id),
  ``classname`` (``accelenv-probe.<group>``), ``message`` (status and detail) and ``duration`` (seconds);
  the action caps it at 1000 entries and a message at 1 KB, so the probe does too;
- ``job-name``: names the upstream check run (``crcr/<repo>/<workflow>/<job-name>``); the probe suggests
  ``accelenv-probe-<backend>``.

``schema_version`` is the callback payload's (``SCHEMA_VERSION: 1`` in the action). A vendor's workflow passes
the block's fields to the action's inputs of the same names (``test_results`` -> ``test-results``).
"""

import json

from probes.checks import registry

SCHEMA_VERSION = "1"
MAX_FAILED = 1000
MAX_MESSAGE = 1024
SOURCE = ("https://github.com/pytorch/test-infra/blob/main/.github/actions/cross-repo-ci-relay-callback/"
          "action.yml (inputs status, conclusion, test-results, failed-tests-detail, job-name); "
          "https://github.com/pytorch/rfcs/pull/90 (RFC-0050 Cross-Repository CI Relay)")


def _message(entry):
    text = "%s: %s" % (entry["status"], entry.get("detail") or "")
    data = text.encode("utf-8")
    if len(data) <= MAX_MESSAGE:
        return text
    return data[:MAX_MESSAGE].decode("utf-8", "ignore")


def block(report):
    """The ``ci_relay`` block of an assembled report (its ``summary`` and ``checks``)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed = []  # type: list
    for entry in report["checks"]:
        if entry["status"] == "passed":
            counts["passed"] += 1
        elif registry.is_failing(entry["group"], entry["status"]):
            counts["failed"] += 1
            if len(failed) < MAX_FAILED:
                failed.append({"name": entry["id"], "classname": "accelenv-probe.%s" % entry["group"],
                               "message": _message(entry), "duration": entry["duration_s"]})
        else:
            counts["skipped"] += 1
    backend = (report.get("environment") or {}).get("backend") or "unknown"
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "completed",
        "conclusion": "success" if report["summary"]["ok"] else "failure",
        "job_name": "accelenv-probe-%s" % backend,
        "test_results": counts,
        "failed_tests_detail": failed,
        "source": SOURCE,
    }


def action_inputs(relay):
    """The block as the callback action's inputs (JSON strings where the action takes JSON)."""
    return {"status": relay["status"], "conclusion": relay["conclusion"], "job-name": relay["job_name"],
            "test-results": json.dumps(relay["test_results"], sort_keys=True),
            "failed-tests-detail": json.dumps(relay["failed_tests_detail"])}
