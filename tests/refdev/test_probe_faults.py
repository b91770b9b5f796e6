"""The real probe suite on refdev: a clean run passes what refdev supports, and each injected fault shows
up in the report as exactly the status and op it should. Each run uses a small ``--checks`` subset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compat_service.domain.evidence.report import ProbeReport
from probes.refdev.faults import OOM_CAPACITY
from tests.refdev.conftest import REPO_ROOT, result, run_probe

BAD = ("failed", "timeout", "crashed", "error")


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ProbeReport.model_validate(report)  # the contract the service enforces
    assert report["environment"]["backend"] == "refdev"
    return {c["id"]: c for c in report["checks"]}


def others(checks: dict[str, dict[str, Any]], prefix: str) -> set[str]:
    """Statuses of every check not under ``prefix``."""
    return {c["status"] for cid, c in checks.items() if not cid.startswith(prefix)}


def test_clean_run_passes_everything_refdev_supports(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe([], tmp_path / "report.json")
    checks = by_id(report)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report["summary"]["ok"] is True
    assert not [cid for cid, c in checks.items() if c["status"] in BAD]
    for group in ("detect", "smoke", "models", "ops", "opinfo", "compile", "runtime", "privateuse1", "allocator",
                  "perf"):
        assert any(c["group"] == group and c["status"] == "passed" for c in checks.values()), group
    # refdev has no collective backend: gloo on CPU tensors is not the device's collective
    assert {c["status"] for c in checks.values() if c["group"] == "distributed"} == {"unsupported"}
    # autocast is a no-op on refdev: a gap, so unsupported, never "not applicable"
    assert checks["amp.autocast_matmul"]["status"] == "unsupported"
    opinfo = report["summary"]["groups"]["opinfo"]  # the summary is part of the report, not a check
    assert "opinfo.summary" not in checks and opinfo["op_dtypes_checked"] > 0 and opinfo["status"] != "failed"
    # refdev leaves UntypedStorage.refdev out (torch's generated wrapper crashes on its storages): a gap, named
    methods = checks["privateuse1.tensor_methods"]
    assert methods["status"] == "unsupported" and methods["data"]["missing"] == [
        "UntypedStorage.refdev", "UntypedStorage.is_refdev"]
    names = {f["name"] for f in report["perf"]["figures"]}
    assert {"matmul.float32", "elementwise.bandwidth", "copy.h2d.pageable", "latency.launch",
            "models.resnet.step", "profile.sync_points"} <= names
    for cid in ("smoke.train_step", "smoke.cpu_agreement", "smoke.checkpoint", "allocator.stats_move",
                "allocator.cache_reuse", "allocator.empty_cache", "allocator.oom_recovery"):
        assert checks[cid]["status"] == "passed", checks[cid]
    assert checks["allocator.stats_move"]["data"]["source"] == "torch.refdev"
    # what refdev lacks is reported, with a reason, not failed
    for c in checks.values():
        if c["status"] in ("skipped", "unsupported"):
            assert c["detail"]
    assert report["devices"][0]["type"] == "refdev"


# What refdev does not implement, in the backend's own words (c10's defaults; torch.accelerator's lookup).
CAPABILITY_GAPS = {
    "detect.streams_events": "Backend doesn't support synchronizing events.",
    "detect.accelerator_synchronize": "Backend doesn't support synchronizing all streams on device.",
    "detect.accelerator_capability": "Backend doesn't support getting device capabilities.",
    "detect.accelerator_memory": "Allocator for refdev is not a DeviceAllocator",
}


def test_capabilities_refdev_lacks_are_unsupported_with_the_backends_reason(refdev_available: None,
                                                                              tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "detect"], tmp_path / "r.json")
    checks = by_id(report)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for cid, phrase in CAPABILITY_GAPS.items():
        assert checks[cid]["status"] == "unsupported", checks[cid]
        assert checks[cid]["data"]["declined"] == phrase
        assert phrase in checks[cid]["detail"]
    memory = checks["detect.accelerator_memory"]["detail"]
    assert "the allocator group uses torch.refdev's memory API" in memory
    multi = checks["detect.multi_device"]
    assert multi["status"] == "skipped" and multi["detail"].startswith("one device")
    assert multi["data"]["device_count"] == 1


GENUINE_FAILURE = """
import json
import torch
from probes.checks import capabilities
from probes.checks import context
from probes.harness import worker
ctx = context.build_context(torch, "refdev")

def broken(*args):
    raise RuntimeError(%r)

torch.accelerator.synchronize = broken  # the device boundary: a backend that has the API and fails in it
check = [c for c in capabilities.plan(ctx, []) if c.id == "detect.accelerator_synchronize"][0]
print(json.dumps(worker.run_check(ctx, check, [])))
"""


@pytest.mark.parametrize(
    ("raised", "status"),
    [
        pytest.param("refdev: the device was lost during synchronize", "error",
                     id="genuine-failure-is-error"),
        pytest.param("Backend doesn't support synchronizing all streams on device.", "unsupported",
                     id="declined-is-unsupported"),
    ],
)
def test_only_the_backend_declining_an_api_is_unsupported(
    refdev_python: Callable[..., subprocess.CompletedProcess[str]], raised: str, status: str
) -> None:
    entry = result(refdev_python(GENUINE_FAILURE % raised))
    assert entry["status"] == status, entry
    assert raised.rstrip(".") in entry["detail"]


def test_missing_backward_op_is_unsupported_in_backward_only(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "ops"], tmp_path / "r.json",
                             faults="missing:aten::_adaptive_avg_pool2d_backward")
    checks = by_id(report)
    pool = {cid: c for cid, c in checks.items() if cid.startswith("ops.adaptive_avg_pool2d.")}
    assert set(pool) == {"ops.adaptive_avg_pool2d.float32", "ops.adaptive_avg_pool2d.float16",
                         "ops.adaptive_avg_pool2d.bfloat16"}
    for c in pool.values():
        assert c["status"] == "unsupported"
        assert c["data"]["aten_op"] == "aten::_adaptive_avg_pool2d_backward"
        assert c["data"]["backend"] == "refdev"
        assert c["data"]["phase"] == "backward"  # the forward ran and matched CPU
    assert others(checks, "ops.adaptive_avg_pool2d.") == {"passed"}
    assert proc.returncode == 0  # unsupported is an answer, not a failure


def test_missing_op_family_is_reported_wherever_it_is_reached(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "smoke,ops"], tmp_path / "r.json", faults="missing:aten::mm")
    checks = by_id(report)
    for cid in ("ops.mm.float32", "ops.mm.out.float32", "ops.matmul.broadcast.float32", "smoke.train_step",
                "smoke.cpu_agreement", "smoke.checkpoint"):
        # the op checks and the training steps, which need mm, all say unsupported naming it
        assert checks[cid]["status"] == "unsupported", checks[cid]
        assert checks[cid]["data"]["aten_op"] == "aten::mm.out"  # the innermost op the dispatcher names
        assert checks[cid]["data"]["backend"] == "refdev"
    step = checks["smoke.train_step"]["detail"]
    assert "needs aten::mm.out, which is not implemented for backend refdev" in step
    assert checks["ops.add.Tensor.float32"]["status"] == "passed"
    assert checks["ops.conv2d.float32"]["status"] == "passed"
    # a device that cannot run the training step fails the run, whatever else passed
    assert report["summary"]["ok"] is False
    assert proc.returncode == 1


def test_missing_pooling_backward_fails_the_models_and_the_run(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "smoke,models"], tmp_path / "r.json",
                             faults="missing:aten::max_pool2d_with_indices_backward")
    checks = by_id(report)
    step = checks["models.resnet.train.float32"]
    assert step["status"] == "unsupported", step
    # structured: the dispatcher names the innermost kernel, the .grad_input overload
    assert step["data"]["aten_op"] == "aten::max_pool2d_with_indices_backward.grad_input"
    assert "needs aten::max_pool2d_with_indices_backward.grad_input" in step["detail"]
    # the forward-only inference and the models without max pooling still pass: only what needs the op fails
    assert checks["models.resnet.inference"]["status"] == "passed"
    for cid in ("models.transformer.train.float32", "models.transformer.inference", "smoke.train_step",
                "smoke.cpu_agreement", "smoke.checkpoint"):
        assert checks[cid]["status"] == "passed", checks[cid]
    assert report["summary"]["ok"] is False
    assert proc.returncode == 1


def test_wrong_numerics_fail_with_the_observed_error(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "ops"], tmp_path / "r.json", faults="wrong:aten::mm")
    checks = by_id(report)
    mm = checks["ops.mm.float32"]
    assert mm["status"] == "failed"
    assert "differs from CPU: max abs err" in mm["detail"]
    assert mm["data"]["phase"] == "forward" and mm["data"]["max_abs_err"] > 1e-3
    assert checks["ops.add.Tensor.float32"]["status"] == "passed"
    assert proc.returncode == 1


def test_wrong_promotion_fails_naming_the_dtypes(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "ops"], tmp_path / "r.json", faults="wrong:promotion:aten::add")
    checks = by_id(report)
    add = checks["ops.add.Tensor.float16"]
    assert add["status"] == "failed"
    assert "output 0 has dtype torch.float32, CPU gives torch.float16" in add["detail"]
    assert checks["ops.mul.Tensor.float16"]["status"] == "passed"


def test_leak_fails_the_allocator_group(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "allocator"], tmp_path / "r.json", faults="leak")
    checks = by_id(report)
    assert checks["allocator.stats_move"]["status"] == "failed"
    assert "did not shrink after free" in checks["allocator.stats_move"]["detail"]
    assert checks["allocator.cache_reuse"]["status"] == "failed"
    assert checks["allocator.empty_cache"]["status"] == "failed"
    assert proc.returncode == 1


def test_oom_fails_the_training_step_and_the_allocator(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "smoke,allocator"], tmp_path / "r.json", faults="oom")
    checks = by_id(report)
    for cid in ("smoke.train_step", "allocator.stats_move"):
        assert checks[cid]["status"] == "failed", checks[cid]
        assert "refdev out of memory" in checks[cid]["detail"]
        assert checks[cid]["data"]["out_of_memory"] is True
    assert report["devices"][0]["total_memory_bytes"] == OOM_CAPACITY


def test_hang_is_a_timeout_and_the_rest_still_runs(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "ops", "--timeout", "5"], tmp_path / "r.json",
                             faults="hang:aten::randperm")
    checks = by_id(report)
    assert checks["ops.random.randperm.int64"]["status"] == "timeout"
    assert others(checks, "ops.random.randperm.") == {"passed"}
    assert proc.returncode == 1


def test_crash_is_crashed_with_its_signal_and_the_rest_runs(refdev_available: None, tmp_path: Path) -> None:
    proc, report = run_probe(["--checks", "ops"], tmp_path / "r.json", faults="crash:aten::argmax")
    checks = by_id(report)
    crashed = {cid: c for cid, c in checks.items() if cid.startswith("ops.argmax.")}
    assert len(crashed) == 3
    first = [c for c in crashed.values() if c["data"].get("ran", True)]
    assert len(first) == 1 and first[0]["data"]["signal"] == "SIGABRT"
    assert first[0]["data"]["aten_op"] == "aten::argmax"
    for c in crashed.values():  # the later ones are marked without calling argmax again
        assert c["status"] == "crashed"
        assert c is first[0] or c["data"]["blocked_by"] == "aten::argmax"
    # the checks after the crash ran in a fresh worker
    assert checks["ops.topk.float32"]["status"] == "passed"
    assert others(checks, "ops.argmax.") == {"passed"}
    assert proc.returncode == 1


BAD_FAULTS = [
    pytest.param("explode", "bad refdev fault 'explode': unknown kind 'explode'", id="unknown-kind"),
    pytest.param("leak,oom:lots", "bad refdev fault 'oom:lots': oom:BYTES needs a positive whole number",
                 id="bad-oom-size"),
    pytest.param("missing:aten::linear",
                 "bad refdev fault 'missing:aten::linear': aten::linear has no refdev kernel",
                 id="composite-op"),
]


def _probe_env(faults: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env.update({"PYTHONWARNINGS": "ignore::UserWarning", "OMP_NUM_THREADS": "1"})
    env["ACCELENV_REFDEV_FAULTS"] = faults
    return env


def _assert_rejected(proc: subprocess.CompletedProcess[str], message: str, report: Path) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "accelenv-probe: error: invalid ACCELENV_REFDEV_FAULTS" in proc.stderr
    assert message in proc.stderr
    assert "valid faults: missing:aten::OP, wrong:aten::OP" in proc.stderr  # the kinds it could have used
    assert "Traceback" not in proc.stderr
    assert not report.exists()  # nothing was probed, so no report claims anything


@pytest.mark.parametrize(("faults", "message"), BAD_FAULTS)
def test_bad_fault_exits_2_naming_it(refdev_available: None, tmp_path: Path, faults: str,
                                     message: str) -> None:
    out = tmp_path / "r.json"
    argv = [sys.executable, "-m", "probes", "--device", "refdev", "--checks", "smoke", "--output", str(out)]
    env = {**_probe_env(faults), "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    _assert_rejected(proc, message, out)


def test_bundle_rejects_a_bad_fault_the_same_way(refdev_available: None, tmp_path: Path) -> None:
    from probes.harness.bundle import BUNDLE_NAME, write_bundle

    bundle = tmp_path / BUNDLE_NAME
    write_bundle(str(bundle))
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-I", str(bundle), "--device", "refdev", "--output", str(out)],
                          cwd=tmp_path, env=_probe_env("missing:aten::linear"), capture_output=True,
                          text=True, timeout=300)
    _assert_rejected(proc, "bad refdev fault 'missing:aten::linear'", out)


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env.update({"PYTHONWARNINGS": "ignore::UserWarning", "OMP_NUM_THREADS": "1"})
    return subprocess.run([sys.executable, "-m", "cli.main", "probe", "--device", "refdev", "--quiet", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_cli_inject_is_repeatable_and_reaches_the_worker(refdev_available: None, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = _cli(["--checks", "ops", "--inject", "missing:aten::_adaptive_avg_pool2d_backward",
                 "--inject", "wrong:aten::mm", "--output", str(out)], tmp_path)
    checks = by_id(json.loads(out.read_text()))
    assert checks["ops.adaptive_avg_pool2d.float32"]["status"] == "unsupported"
    assert checks["ops.mm.float32"]["status"] == "failed"
    assert proc.returncode == 1


def test_cli_rejects_a_bad_inject_before_probing(tmp_path: Path) -> None:
    proc = _cli(["--inject", "explode:aten::mm", "--output", str(tmp_path / "r.json")], tmp_path)
    assert proc.returncode == 2
    assert "bad refdev fault 'explode:aten::mm': unknown kind 'explode'" in proc.stderr
    assert not (tmp_path / "r.json").exists()


def test_cli_exits_2_when_the_probe_rejects_an_inject_only_torch_can_judge(refdev_available: None,
                                                                            tmp_path: Path) -> None:
    # syntax is fine, so the CLI passes it on; the probe finds aten::linear is composite and refuses
    proc = _cli(["--inject", "missing:aten::linear", "--output", str(tmp_path / "r.json")], tmp_path)
    assert proc.returncode == 2
    assert "bad refdev fault 'missing:aten::linear'" in proc.stderr
    assert "rejected its settings" in proc.stderr
    assert not (tmp_path / "r.json").exists()



@pytest.mark.parametrize("kind", ["crash", "hang"])
def test_one_bad_kernel_costs_one_worker_forward_and_backward(refdev_available: None, tmp_path: Path,
                                                             kind: str) -> None:
    # aten::mm dies in ops.mm's forward pass; addmm's and linear's backward passes (AddmmBackward0 calls mm on
    # the device, untraced) are refused before they start, from what the CPU references taught about the node
    proc, report = run_probe(["--checks", "ops", "--timeout", "15"], tmp_path / "r.json", faults=f"{kind}:aten::mm")
    checks = by_id(report)
    status = "crashed" if kind == "crash" else "timeout"
    died = [cid for cid, c in checks.items() if c["status"] in ("crashed", "timeout") and c["data"].get("ran", True)]
    assert died == ["ops.mm.float32"]
    assert checks["ops.mm.float32"]["status"] == status
    assert checks["ops.mm.float32"]["data"]["aten_op"] == "aten::mm"
    for cid in ("ops.addmm.float32", "ops.linear.float32"):
        marked = checks[cid]
        assert marked["status"] == status and marked["data"]["ran"] is False
        assert marked["data"]["aten_op"] == "aten::mm"
        assert marked["data"]["backward_node"] == "AddmmBackward0"
        assert "AddmmBackward0" in marked["detail"]
    assert checks["ops.topk.float32"]["status"] == "passed"
    assert proc.returncode == 1
