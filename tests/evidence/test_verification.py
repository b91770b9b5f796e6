"""The status rules of compat_service.domain.evidence.status, one case per row of its tables."""

from __future__ import annotations

import pytest

from compat_service.domain.evidence.report import CheckResult
from compat_service.domain.evidence.status import CellTally, cell_health, cell_status, classify_report


def _check(check_id: str, status: str) -> CheckResult:
    return CheckResult(id=check_id, group=check_id.split(".")[0], status=status, duration_s=0.0)


@pytest.mark.parametrize(
    ("checks", "passed", "required_bad", "other_bad", "failing"),
    [
        pytest.param([("detect.device", "passed"), ("smoke.train_step", "passed")], True, False, False, [],
                     id="all-pass"),
        pytest.param([("smoke.train_step", "passed"), ("ops.mm", "failed")], True, False, True, ["ops.mm"],
                     id="op-fails-report-still-passes-required"),
        pytest.param([("smoke.train_step", "crashed")], False, True, False, ["smoke.train_step"],
                     id="smoke-crash"),
        pytest.param([("detect.device", "error"), ("smoke.train_step", "skipped")], False, True, False,
                     ["detect.device"], id="detect-error"),
        pytest.param([("smoke.train_step", "skipped"), ("amp.autocast", "unsupported")], False, False, False, [],
                     id="nothing-ran-is-not-a-pass"),
        pytest.param([("smoke.train_step", "passed"), ("allocator.oom", "timeout")], True, False, True,
                     ["allocator.oom"], id="allocator-timeout-is-bad"),
    ],
)
def test_classify_report(checks, passed, required_bad, other_bad, failing) -> None:
    verdict = classify_report([_check(i, s) for i, s in checks])
    assert (verdict.passed, verdict.required_bad, verdict.other_bad) == (passed, required_bad, other_bad)
    assert verdict.failing_checks == failing


@pytest.mark.parametrize(
    ("tally", "expected"),
    [
        pytest.param(None, "none", id="no-tally"),
        pytest.param(CellTally(), "none", id="zero-reports"),
        pytest.param(CellTally(reports=5, hosts=3, passing_hosts=2, required_bad_reports=1, smoke_passed_reports=4),
                     "broken", id="one-broken-report-wins"),
        pytest.param(CellTally(reports=3, hosts=3, passing_hosts=3, other_bad_reports=1, smoke_passed_reports=3),
                     "partial", id="op-failure-partial"),
        pytest.param(CellTally(reports=1, hosts=1, other_bad_reports=1), "unconfirmed",
                     id="op-failure-without-smoke-pass"),
        pytest.param(CellTally(reports=2, hosts=2, passing_hosts=2, submitters=2, passing_submitters=2,
                               smoke_passed_reports=2), "verified", id="two-passing-hosts"),
        pytest.param(CellTally(reports=2, hosts=2, passing_hosts=2, submitters=1, passing_submitters=1,
                               smoke_passed_reports=2), "unconfirmed", id="two-hosts-one-submitter"),
        pytest.param(CellTally(reports=9, hosts=1, passing_hosts=1, smoke_passed_reports=9), "unconfirmed",
                     id="many-reports-one-host"),
    ],
)
def test_cell_health(tally: CellTally | None, expected: str) -> None:
    assert cell_health(tally, min_hosts=2, min_submitters=2) == expected


def test_min_hosts_and_submitters_are_settings() -> None:
    tally = CellTally(reports=1, hosts=1, passing_hosts=1, submitters=1, passing_submitters=1,
                      smoke_passed_reports=1)
    assert cell_health(tally, min_hosts=1, min_submitters=1) == "verified"
    assert cell_health(tally, min_hosts=3, min_submitters=1) == "unconfirmed"
    assert cell_health(tally, min_hosts=1, min_submitters=2) == "unconfirmed"


@pytest.mark.parametrize(
    ("health", "declared", "expected"),
    [
        pytest.param("none", True, "declared", id="declared-no-reports"),
        pytest.param("unconfirmed", True, "declared", id="declared-not-enough-hosts"),
        pytest.param("verified", True, "verified", id="verified"),
        pytest.param("partial", True, "partial", id="partial"),
        pytest.param("broken", True, "broken", id="broken"),
        pytest.param("verified", False, "observed", id="undeclared-is-observed-even-when-healthy"),
        pytest.param("broken", False, "observed", id="undeclared-broken-still-observed"),
    ],
)
def test_cell_status(health: str, declared: bool, expected: str) -> None:
    assert cell_status(health, declared=declared) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("checks", "other_bad", "failing"),
    [
        pytest.param([("smoke.train_step", "passed"), ("ops.sort.float32", "unsupported")], True,
                     ["ops.sort.float32"], id="missing-kernel-is-a-gap"),
        pytest.param([("smoke.train_step", "passed"), ("allocator.stats_move", "unsupported")], True,
                     ["allocator.stats_move"], id="missing-allocator-feature-is-a-gap"),
        pytest.param([("smoke.train_step", "passed"), ("amp.autocast_matmul", "unsupported")], False, [],
                     id="no-autocast-kernels-is-neutral"),
        pytest.param([("smoke.train_step", "passed"), ("ops.sort.float32", "skipped")], False, [],
                     id="skipped-op-is-neutral"),
    ],
)
def test_unsupported_counts_as_a_gap_only_in_ops_and_allocator(checks, other_bad, failing) -> None:
    verdict = classify_report([_check(i, s) for i, s in checks])
    assert (verdict.passed, verdict.other_bad, verdict.failing_checks) == (True, other_bad, failing)
