"""A hanging, crashing or aborting check is contained: it is marked, and the suite goes on.

Faults are injected into named checks with ACCELENV_PROBE_TEST_FAULTS (probes/harness/faults.py), inside the
real worker process; the runner must notice, kill or bury the worker, and start a fresh one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.probes.conftest import ProbeRun, run_probe, validate_report

pytestmark = pytest.mark.torch

FAULTS = "hang:smoke.train_step,crash:smoke.checkpoint,abort:amp.train_step,raise:detect.driver"


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> ProbeRun:
    return run_probe(
        tmp_path_factory.mktemp("faults"), "--device", "cpu", "--checks", "detect,smoke,amp,distributed",
        "--timeout", "10", env={"ACCELENV_PROBE_TEST_FAULTS": FAULTS},
    )


def test_the_suite_finishes_with_a_valid_report_and_exit_1(faulty_run: ProbeRun) -> None:
    assert faulty_run.returncode == 1, faulty_run.stderr
    validate_report(faulty_run.report)
    assert faulty_run.report["summary"]["ok"] is False


def test_a_hanging_check_is_a_timeout(faulty_run: ProbeRun) -> None:
    hung = faulty_run.check("smoke.train_step")
    assert hung["status"] == "timeout"
    assert hung["data"]["timeout_s"] == 10.0
    assert 10.0 <= hung["duration_s"] < 20


@pytest.mark.parametrize(
    ("check_id", "signal"),
    [pytest.param("smoke.checkpoint", "SIGSEGV", id="segfault"), pytest.param("amp.train_step", "SIGABRT", id="abort")],
)
def test_a_dying_check_is_crashed_with_its_signal(faulty_run: ProbeRun, check_id: str, signal: str) -> None:
    crashed = faulty_run.check(check_id)
    assert crashed["status"] == "crashed"
    assert crashed["data"]["signal"] == signal
    assert f"killed by {signal}" in crashed["detail"]


def test_an_exception_in_a_check_is_an_error_not_a_crash(faulty_run: ProbeRun) -> None:
    errored = faulty_run.check("detect.driver")
    assert errored["status"] == "error"
    assert "InjectedFault" in errored["detail"]


def test_checks_after_each_fault_still_ran(faulty_run: ProbeRun) -> None:
    statuses = faulty_run.statuses()
    assert statuses["detect.kernels_for_device"] == "skipped"  # after the raising check, same worker
    assert statuses["smoke.cpu_agreement"] == "passed"  # first check of the worker after the hang
    assert statuses["amp.autocast_matmul"] == "passed"  # after the segfault
    assert statuses["distributed.all_reduce"] == "passed"  # after the abort
    assert list(statuses) == [
        "detect.torch_build", "detect.accelerators", "detect.device", "detect.driver", "detect.kernels_for_device",
        "detect.streams_events", "detect.multi_device", "detect.accelerator_synchronize",
        "detect.accelerator_capability", "detect.accelerator_memory", "smoke.train_step",
        "smoke.cpu_agreement", "smoke.checkpoint", "amp.autocast_matmul", "amp.train_step",
        "amp.grad_scaler_skip", "amp.grad_scaler_overflow", "distributed.all_reduce", "distributed.ddp_step",
    ]


def test_bad_fault_spec_is_an_error_naming_the_variable(tmp_path: Path) -> None:
    run = run_probe(tmp_path, "--device", "cpu", "--checks", "detect",
                    env={"ACCELENV_PROBE_TEST_FAULTS": "explode:detect.torch_build"})
    assert run.returncode == 1
    start = run.check("detect.worker_start")
    assert start["status"] == "crashed"
    assert "ACCELENV_PROBE_TEST_FAULTS" in start["detail"]
