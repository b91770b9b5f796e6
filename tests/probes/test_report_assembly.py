"""The probe's report assembly: what it writes validates against the service's schema."""

from __future__ import annotations

import json

from compat_service.domain.evidence.report import ProbeReport, nul_character_paths
from probes.harness import relay
from probes.harness import report as report_assembly


def test_nul_characters_from_host_text_are_replaced_visibly() -> None:
    environment = report_assembly.fallback_environment("cuda", "nvidia-smi printed \x00\x00 garbage")
    entries = [
        {"id": "detect.driver", "group": "detect", "status": "error", "duration_s": 0.0,
         "detail": "read \x00 from /proc", "data": {"raw\x00key": "v\x00"}},
    ]
    report = report_assembly.assemble(environment, [], entries, "f" * 64, True)
    body = json.dumps(report).encode()
    assert b"\\u0000" not in body
    assert report["checks"][0]["detail"] == "read \ufffd from /proc"
    assert report["checks"][0]["data"] == {"raw\ufffdkey": "v\ufffd"}
    parsed = ProbeReport.model_validate_json(body)
    assert nul_character_paths(parsed, body) == []


def _entry(check_id: str, status: str, detail: str | None = None) -> dict:
    return {"id": check_id, "group": check_id.split(".")[0], "status": status, "duration_s": 0.25,
            "detail": detail, "data": {}}


def test_ci_relay_block_carries_the_relay_callback_inputs() -> None:
    # pytorch/test-infra's cross-repo-ci-relay-callback action: status, conclusion, test-results (counts),
    # failed-tests-detail (name, classname, message <= 1 KB, duration), job-name
    environment = report_assembly.fallback_environment("npu", "test")
    entries = [_entry("smoke.train_step", "passed"), _entry("ops.mm.float32", "failed", "x" * 3000),
               _entry("ops.sort.float32", "unsupported", "no kernel"), _entry("smoke.checkpoint", "unsupported"),
               _entry("perf.copies", "skipped", "cpu")]
    report = report_assembly.assemble(environment, [], entries, "f" * 64, True)
    relay = report["ci_relay"]
    assert relay["status"] == "completed" and relay["conclusion"] == "failure"
    assert relay["job_name"] == "accelenv-probe-npu"
    # smoke's unsupported makes the run not ok (it counts as failed); ops' unsupported does not
    assert relay["test_results"] == {"passed": 1, "failed": 2, "skipped": 2}
    assert [f["name"] for f in relay["failed_tests_detail"]] == ["ops.mm.float32", "smoke.checkpoint"]
    first = relay["failed_tests_detail"][0]
    assert first["classname"] == "accelenv-probe.ops" and first["duration"] == 0.25
    assert first["message"].startswith("failed: xxx") and len(first["message"].encode()) == 1024
    assert "cross-repo-ci-relay-callback" in relay["source"]
    parsed = ProbeReport.model_validate_json(json.dumps(report))
    assert parsed.ci_relay is not None and parsed.ci_relay.conclusion == "failure"


def test_ci_relay_conclusion_is_success_for_an_ok_run_and_inputs_are_json() -> None:
    environment = report_assembly.fallback_environment("cuda", "test")
    report = report_assembly.assemble(environment, [], [_entry("smoke.train_step", "passed")], "f" * 64, True)
    inputs = relay.action_inputs(report["ci_relay"])
    assert inputs["conclusion"] == "success" and inputs["status"] == "completed"
    assert json.loads(inputs["test-results"]) == {"passed": 1, "failed": 0, "skipped": 0}
    assert json.loads(inputs["failed-tests-detail"]) == []
    ProbeReport.model_validate_json(json.dumps(report))
