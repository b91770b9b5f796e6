"""The suite on refdev, the pure-Python PrivateUse1 reference backend, with faults injected in its kernels.

This is where the probe proves it can tell a working device from a broken one: a missing kernel (also
only in backward) must be ``unsupported`` naming the aten op and backend, a wrong result ``failed``, a
dying kernel ``crashed``, and the allocator checks must run against the device module's statistics.
"""

from __future__ import annotations

import pytest

from tests.probes.conftest import ProbeRun, needs_refdev, run_probe, validate_report

pytestmark = [pytest.mark.torch, needs_refdev]

FAULTS = ",".join([
    "missing:aten::_adaptive_avg_pool2d_backward",
    "wrong:aten::bmm",
    "wrong:promotion:aten::cumsum",
    "crash:aten::topk",
])


@pytest.fixture(scope="module")
def refdev_run(tmp_path_factory: pytest.TempPathFactory) -> ProbeRun:
    return run_probe(tmp_path_factory.mktemp("refdev"), "--device", "refdev", "--timeout", "60",
                     env={"ACCELENV_REFDEV_FAULTS": FAULTS})


def test_report_is_valid_and_not_ok(refdev_run: ProbeRun) -> None:
    assert refdev_run.returncode == 1, refdev_run.stderr
    validate_report(refdev_run.report)


def test_detect_names_the_privateuse1_backend(refdev_run: ProbeRun) -> None:
    env = refdev_run.report["environment"]
    assert env["backend"] == "refdev" and env["device_arch"] == "refdev"
    assert env["extra"]["privateuse1_backend"] == "refdev"
    assert env["extra"]["accelerator_api"]["current"] == "refdev"
    module = refdev_run.check("detect.accelerators")["data"]["device_module"]
    assert module["module"] == "probes.refdev.device_module" and "memory_stats" in module["has"]
    assert refdev_run.check("detect.device")["status"] == "passed"
    assert refdev_run.check("detect.driver")["status"] == "skipped"


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_op_missing_only_in_backward_is_unsupported_naming_it(refdev_run: ProbeRun, dtype: str) -> None:
    check = refdev_run.check(f"ops.adaptive_avg_pool2d.{dtype}")
    assert check["status"] == "unsupported"
    assert check["data"]["aten_op"] == "aten::_adaptive_avg_pool2d_backward"
    assert check["data"]["backend"] == "refdev"
    assert check["data"]["phase"] == "backward"


def test_wrong_results_fail_with_the_error_size(refdev_run: ProbeRun) -> None:
    check = refdev_run.check("ops.bmm.float32")
    assert check["status"] == "failed"
    assert check["data"]["phase"] == "forward" and check["data"]["max_abs_err"] > 1e-3


def test_wrong_type_promotion_fails_naming_both_dtypes(refdev_run: ProbeRun) -> None:
    check = refdev_run.check("ops.cumsum.int64")
    assert check["status"] == "failed"
    assert "torch.int32" in check["detail"] and "torch.int64" in check["detail"]


def test_a_kernel_that_aborts_is_crashed_and_later_checks_run(refdev_run: ProbeRun) -> None:
    check = refdev_run.check("ops.topk.float32")
    assert check["status"] == "crashed" and check["data"]["signal"] == "SIGABRT"
    assert refdev_run.check("ops.random.rand.float32")["status"] == "passed"


def test_healthy_ops_pass_on_the_device(refdev_run: ProbeRun) -> None:
    for check_id in ("ops.conv2d.float32", "ops.mm.bfloat16", "ops.add.promotion.bool", "ops.scatter.src.int64"):
        check = refdev_run.check(check_id)
        assert check["status"] == "passed", check
        assert "same device" not in check["detail"]


def test_allocator_checks_use_the_device_module(refdev_run: ProbeRun) -> None:
    for name in ("stats_move", "cache_reuse", "empty_cache", "oom_recovery"):
        check = refdev_run.check(f"allocator.{name}")
        assert check["status"] == "passed", check
    assert refdev_run.check("allocator.stats_move")["data"]["source"] == "torch.refdev"
    assert refdev_run.check("allocator.oom_recovery")["data"]["error_type"] == "torch.OutOfMemoryError"
    assert refdev_run.check("allocator.alloc_conf")["status"] == "skipped"


def test_autocast_that_does_nothing_is_unsupported_not_skipped(refdev_run: ProbeRun) -> None:
    # refdev's autocast runs and changes nothing: a gap (no autocast kernels), not "not applicable"
    check = refdev_run.check("amp.autocast_matmul")
    assert check["status"] == "unsupported"
    assert check["detail"].startswith("autocast is a no-op on refdev: matmul under ")
    assert check["data"]["output_dtype"] == "float32"
    assert check["data"]["autocast_dtype"] != "float32"


def test_smoke_trains_on_the_device(refdev_run: ProbeRun) -> None:
    assert refdev_run.check("smoke.train_step")["status"] == "passed"
    assert refdev_run.check("smoke.cpu_agreement")["status"] == "passed"
