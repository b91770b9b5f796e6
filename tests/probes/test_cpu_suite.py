"""The real suite on this machine's torch (CPU device): every group runs and the report is valid."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from probes.checks import op_table
from probes.checks import outcome as probe_checks
from tests.probes.conftest import ProbeRun, quiet_torch, run_probe, validate_report

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> ProbeRun:
    return run_probe(tmp_path_factory.mktemp("cpu"), "--device", "cpu")


def test_exit_code_and_summary_say_ok(cpu_run: ProbeRun) -> None:
    assert cpu_run.returncode == 0, cpu_run.stderr
    summary = cpu_run.report["summary"]
    assert summary["ok"] is True
    assert summary["total"] == len(cpu_run.report["checks"])
    assert sum(summary["counts"].values()) == summary["total"]
    assert set(summary["counts"]) == set(probe_checks.STATUSES)


def test_report_validates_against_published_schema_and_model(cpu_run: ProbeRun) -> None:
    validate_report(cpu_run.report)
    assert cpu_run.report["schema_version"] == "1"


def test_every_group_ran(cpu_run: ProbeRun) -> None:
    from probes.checks import registry

    groups = {c["group"] for c in cpu_run.report["checks"]}
    assert groups == set(registry.DEFAULT)


def test_models_train_and_infer_on_cpu_and_perf_reports_figures(cpu_run: ProbeRun) -> None:
    for model in ("resnet", "transformer"):
        for kind in ("train.float32", "train.autocast", "inference"):
            check = cpu_run.check(f"models.{model}.{kind}")
            assert check["status"] == "passed", check
    figures = {f["name"]: f for f in cpu_run.report["perf"]["figures"]}
    assert figures["matmul.float32"]["value"] > 0 and figures["matmul.float32"]["unit"] == "FLOP/s"
    assert figures["models.resnet.step"]["value"] > 0
    assert figures["profile.sync_points"]["value"] >= 1  # the loss.item() of the profiled step at least
    for name in ("matmul.float32", "elementwise.bandwidth"):
        figure = figures[name]
        # no datasheet applies to a CPU: its peak is the fastest sample of the same figure, measured here
        assert figure["peak_source"].startswith("measured on this host")
        assert 0 < figure["peak_fraction"] <= 1
        # the CPU time the worker got while measuring; under 0.75 the figure says it is not the CPU's speed
        assert figure["cpu_share"] > 0
        shared = figure["cpu_share"] < 0.75
        assert shared == ("other processes were running on the same cores" in (figure.get("invalid_reason") or ""))
        assert not shared or figure["valid"] is False
    assert "perf (device | this host's CPU" in cpu_run.stderr  # the summary printed them


def test_environment_describes_this_torch(cpu_run: ProbeRun) -> None:
    import platform

    torch = quiet_torch()

    env = cpu_run.report["environment"]
    assert env["torch_version"] == torch.__version__
    assert env["torch_build"] == "cpu"
    assert env["backend"] == "cpu"
    assert env["python_version"] == platform.python_version()
    assert env["os"] == "linux" and env["arch"] == platform.machine()
    assert env["runtime_version"] is None and env["driver_version"] is None
    assert re.fullmatch(r"[0-9a-f]{64}", env["host_fingerprint"])
    assert cpu_run.report["devices"][0]["type"] == "cpu"


def test_report_carries_no_hostname_or_user(cpu_run: ProbeRun) -> None:
    import getpass

    dumped = json.dumps(cpu_run.report)
    assert socket.gethostname() not in dumped
    assert f'"{getpass.getuser()}"' not in dumped and f"/home/{getpass.getuser()}" not in dumped


def test_ops_cover_the_table_for_every_dtype_cpu_claims(cpu_run: ProbeRun) -> None:
    ids = {c["id"] for c in cpu_run.report["checks"] if c["group"] == "ops"}
    for case in op_table.OP_CASES:
        for dtype, kind in op_table.KIND_OF_DTYPE.items():
            if kind in case.kinds:
                assert f"ops.{case.name}.{dtype}" in ids
    assert "ops.random.randn.bfloat16" in ids


def test_ops_pass_on_cpu_and_say_the_reference_is_the_same_device(cpu_run: ProbeRun) -> None:
    for check in (c for c in cpu_run.report["checks"] if c["group"] == "ops"):
        assert check["status"] == "passed", check
        assert "same device" in check["detail"]
    conv = cpu_run.check("ops.conv2d.bfloat16")
    assert conv["data"]["backward"] is True and conv["data"]["grad_max_abs_err"] is not None


def test_smoke_trains_and_agrees(cpu_run: ProbeRun) -> None:
    step = cpu_run.check("smoke.train_step")
    assert step["status"] == "passed"
    assert step["data"]["losses"][-1] < step["data"]["losses"][0]
    assert cpu_run.check("smoke.cpu_agreement")["data"]["max_param_abs_err"] == 0.0
    assert cpu_run.check("smoke.checkpoint")["status"] == "passed"


def test_allocator_is_skipped_on_cpu_with_the_reason(cpu_run: ProbeRun) -> None:
    for check in (c for c in cpu_run.report["checks"] if c["group"] == "allocator"):
        assert check["status"] == "skipped"
        assert "no device allocator statistics" in check["detail"]


def test_cpu_bf16_autocast_is_a_real_check(cpu_run: ProbeRun) -> None:
    matmul = cpu_run.check("amp.autocast_matmul")
    assert matmul["status"] == "passed"
    assert matmul["data"]["output_dtype"] == "bfloat16"
    assert cpu_run.check("amp.train_step")["status"] == "passed"


def test_distributed_uses_gloo_on_cpu(cpu_run: ProbeRun) -> None:
    check = cpu_run.check("distributed.all_reduce")
    assert check["status"] == "passed"
    assert check["data"]["backend"] == "gloo" and check["data"]["ranks"] == 2
    assert check["data"]["all_reduce"] == [[3.0, 6.0, 9.0, 12.0]] * 2  # rank r gave (r + 1) * [1, 2, 3, 4]
    assert check["data"]["broadcast"] == [[10.0, 20.0, 30.0, 40.0]] * 2
    ddp = cpu_run.check("distributed.ddp_step")
    assert ddp["status"] == "passed" and ddp["data"]["max_diff_across_ranks"] <= 1e-6


def test_grad_scaler_skips_an_inf_step_on_cpu(cpu_run: ProbeRun) -> None:
    check = cpu_run.check("amp.grad_scaler_skip")
    assert check["status"] == "passed"
    assert check["data"]["skipped_inf_step"] and check["data"]["scale_after_inf"] < check["data"]["scale_before"]


@pytest.mark.parametrize("stage", ["eager", "aot_eager", "inductor"])
def test_each_compile_stage_matches_eager_on_cpu(cpu_run: ProbeRun, stage: str) -> None:
    check = cpu_run.check(f"compile.{stage}")
    assert check["status"] == "passed", check
    assert check["data"]["stage"] == stage


@pytest.mark.parametrize(("check_id", "status"), [
    ("runtime.pin_memory", "skipped"), ("runtime.profiler", "skipped"), ("runtime.memory_functions", "skipped"),
    ("runtime.non_blocking", "passed"), ("runtime.generator", "passed"), ("runtime.rng_state", "passed"),
    ("runtime.fork_rng", "passed"), ("runtime.checkpoint_load", "passed"),
    ("runtime.activation_checkpointing", "passed"),
])
def test_runtime_apis_on_cpu(cpu_run: ProbeRun, check_id: str, status: str) -> None:
    assert cpu_run.check(check_id)["status"] == status


def test_the_default_suite_includes_the_bounded_opinfo_sweep(cpu_run: ProbeRun) -> None:
    summary = cpu_run.report["summary"]["groups"]["opinfo"]
    assert summary["status"] == "passed" and summary["op_dtypes_checked"] > 50


def test_detect_skips_driver_and_kernel_verdict_on_cpu(cpu_run: ProbeRun) -> None:
    assert cpu_run.check("detect.driver")["status"] == "skipped"
    assert cpu_run.check("detect.kernels_for_device")["status"] == "skipped"
    assert cpu_run.check("detect.device")["status"] == "passed"


ACCELERATORS_ONLY = "torch.accelerator covers accelerators only"


@pytest.mark.parametrize(
    ("check_id", "reason"),
    [
        pytest.param("detect.streams_events", "cpu has no streams", id="streams"),
        pytest.param("detect.multi_device", "one device", id="multi-device"),
        pytest.param("detect.accelerator_synchronize", ACCELERATORS_ONLY, id="sync"),
        pytest.param("detect.accelerator_capability", ACCELERATORS_ONLY, id="capability"),
        pytest.param("detect.accelerator_memory", ACCELERATORS_ONLY, id="memory"),
    ],
)
def test_device_capabilities_are_skipped_on_cpu_with_the_reason(cpu_run: ProbeRun, check_id: str,
                                                                 reason: str) -> None:
    check = cpu_run.check(check_id)
    assert check["status"] == "skipped" and check["group"] == "detect"
    assert reason in check["detail"]


def test_progress_line_per_check_and_summary_table(cpu_run: ProbeRun) -> None:
    lines = [line for line in cpu_run.stderr.splitlines() if re.match(r"^\[\s*\d+/\d+\] ", line)]
    assert len(lines) == cpu_run.report["summary"]["total"]
    assert re.search(r"^group\s+passed\s+failed", cpu_run.stderr, re.MULTILINE)
    assert "OK: " in cpu_run.stderr


def test_unavailable_device_fails_detect_and_skips_the_rest(tmp_path: Path) -> None:
    run = run_probe(tmp_path, "--device", "cuda", "--checks", "detect,smoke")
    assert run.returncode == 1
    validate_report(run.report)
    device = run.check("detect.device")
    assert device["status"] == "failed" and "not available" in device["detail"]
    assert run.check("smoke.device_unavailable")["status"] == "skipped"
    assert run.report["environment"]["backend"] == "cuda"


@pytest.mark.parametrize("variable", ["ACCELENV_GPU_ARCH", "ACCELENV_DEVICE_ARCH"], ids=["name", "deprecated-alias"])
def test_the_probe_honours_the_gpu_arch_override(tmp_path: Path, variable: str) -> None:
    """The probe reads the override variables of the one host detection (probes/host/facts.py)."""
    run = run_probe(tmp_path, "--device", "cpu", "--checks", "detect", env={variable: "sm_90"})
    validate_report(run.report)
    assert run.report["environment"]["device_arch"] == "sm_90"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--checks", "detect,bogus"], "unknown check group", id="unknown-group"),
        pytest.param(["--device", "cu da"], "is not a device name", id="bad-device"),
        pytest.param(["--timeout", "0"], "timeout must be a positive number", id="zero-timeout"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    run = run_probe(tmp_path, *args)
    assert run.returncode == 2
    assert message in run.stderr
    assert "Traceback" not in run.stderr
