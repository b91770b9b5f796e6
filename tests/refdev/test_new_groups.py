"""The opinfo, compile and runtime groups and the honest verdicts on refdev, each new fault kind caught by the
group it targets, and a hang or crash in an aten op costing one timeout (or crash), named by the op.

Each run is the real probe (``python -m probes``) in a subprocess with a small ``--checks`` subset.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.refdev.conftest import REPO_ROOT, run_probe
from tests.refdev.test_probe_faults import by_id

# the fixed refdev bugs the opinfo sweep found: conj().clone() (SIGSEGV), copysign.Scalar (a wrapped
# scalar reaching copysign.Tensor), sgn backward (ZeroTensor: "invalid python storage"), rad2deg in bf16
REGRESSIONS = "conj,copysign,sgn,rad2deg,mm,bmm,mul"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, refdev_available: None) -> tuple[Any, dict[str, Any]]:
    out = tmp_path_factory.mktemp("clean") / "r.json"
    return run_probe(["--checks", "opinfo,compile,runtime,amp,distributed", "--opinfo-ops", REGRESSIONS], out)


def test_fixed_refdev_bugs_now_match_cpu(clean: tuple[Any, dict[str, Any]]) -> None:
    _, report = clean
    checks = by_id(report)
    for op in REGRESSIONS.split(","):
        assert checks[f"opinfo.{op}"]["status"] == "passed", checks[f"opinfo.{op}"]
    assert "complex64" in checks["opinfo.conj"]["data"]["dtypes"]
    assert clean[1]["summary"]["groups"]["opinfo"]["status"] == "passed"


def test_compile_stages_each_have_a_verdict(clean: tuple[Any, dict[str, Any]]) -> None:
    checks = by_id(clean[1])
    assert checks["compile.eager"]["status"] == "passed"
    assert checks["compile.aot_eager"]["status"] == "passed"
    inductor = checks["compile.inductor"]
    assert inductor["status"] == "unsupported" and "no code generator registered for refdev" in inductor["detail"]


@pytest.mark.parametrize(("check_id", "status", "phrase"), [
    pytest.param("runtime.pin_memory", "unsupported", "getPinnedMemoryAllocator", id="pin"),
    pytest.param("runtime.dataloader_pin_memory", "unsupported", "getPinnedMemoryAllocator", id="dataloader"),
    pytest.param("runtime.generator", "unsupported", "getNewGenerator", id="generator"),
    pytest.param("runtime.rng_state", "passed", "replay the refdev RNG", id="rng-state"),
    pytest.param("runtime.fork_rng", "unsupported", "has no generator of its own", id="fork-rng"),
    pytest.param("runtime.manual_seed", "unsupported", "has no generator of its own", id="manual-seed"),
    pytest.param("runtime.profiler", "unsupported", "recorded no refdev activity", id="profiler"),
    pytest.param("runtime.checkpoint_load", "passed", "cpu/device RNG states saved and loaded back onto refdev",
                 id="checkpoint"),
    pytest.param("runtime.activation_checkpointing", "passed", "same gradients", id="activation-checkpointing"),
    pytest.param("runtime.memory_functions", "passed", "memory_summary absent", id="memory-functions"),
])
def test_runtime_apis_are_present_absent_or_wrong(clean: tuple[Any, dict[str, Any]], check_id: str, status: str,
                                                  phrase: str) -> None:
    check = by_id(clean[1])[check_id]
    assert check["status"] == status, check
    assert phrase in check["detail"]


def test_memory_functions_say_present_absent_or_raises(clean: tuple[Any, dict[str, Any]]) -> None:
    functions = by_id(clean[1])["runtime.memory_functions"]["data"]["functions"]
    assert functions["memory_allocated"] == "present" and functions["memory_stats"] == "present"
    assert functions["set_per_process_memory_fraction"] == "absent"


def test_honest_verdicts_where_only_the_cpu_did_the_work(clean: tuple[Any, dict[str, Any]]) -> None:
    checks = by_id(clean[1])
    for cid in ("distributed.all_reduce", "distributed.ddp_step"):
        assert checks[cid]["status"] == "unsupported"
        assert checks[cid]["data"]["cpu_fallback"] is True and checks[cid]["data"]["gloo_cpu"] == "passed"
        assert "no collective backend for refdev" in checks[cid]["detail"]
    for cid in ("amp.autocast_matmul", "amp.train_step", "amp.grad_scaler_overflow"):
        assert checks[cid]["status"] == "unsupported", checks[cid]  # a no-op autocast is a gap
        assert "autocast is a no-op on refdev" in checks[cid]["detail"]
    scaler = checks["amp.grad_scaler_skip"]
    assert scaler["status"] == "passed" and scaler["data"]["skipped_inf_step"] is True


def test_strict_exits_3_when_something_is_unsupported(clean: tuple[Any, dict[str, Any]], tmp_path: Path) -> None:
    proc, _ = clean
    assert proc.returncode == 0, proc.stderr[-2000:]  # unsupported is not a failure ...
    proc, report = run_probe(["--checks", "distributed", "--strict"], tmp_path / "r.json")
    assert report["summary"]["ok"] is True
    assert proc.returncode == 3  # ... but --strict says so with its own exit code


@pytest.mark.parametrize(("faults", "checks_arg", "expect"), [
    # refdev's kernels draw from the CPU generator: fork_rng, which also restores that one, would pass for the
    # wrong reason, so it says the device has no generator of its own instead of passing
    pytest.param("rng", "runtime", {"runtime.rng_state": "failed", "runtime.fork_rng": "unsupported",
                                    "runtime.checkpoint_load": "passed"}, id="rng"),
    pytest.param("collective", "distributed", {"distributed.all_reduce": "failed", "distributed.ddp_step": "failed"},
                 id="collective"),
    pytest.param("fallback:aten::mul", "ops,opinfo",
                 {"ops.mul.Tensor.float32": "failed", "opinfo.mul": "failed", "opinfo.mm": "passed"},
                 id="cpu-fallback"),
    pytest.param("missing:aten::mm", "opinfo", {"opinfo.mm": "unsupported", "opinfo.add": "passed"}, id="missing"),
])
def test_each_new_fault_is_caught_by_its_group(refdev_available: None, tmp_path: Path, faults: str, checks_arg: str,
                                               expect: dict[str, str]) -> None:
    _, report = run_probe(["--checks", checks_arg, "--opinfo-ops", "mm,mul,add"], tmp_path / "r.json", faults=faults)
    checks = by_id(report)
    assert {cid: checks[cid]["status"] for cid in expect} == expect
    if faults == "collective":
        assert "gloo backend torch.distributed uses for refdev failed" in checks["distributed.all_reduce"]["detail"]
    if faults.startswith("fallback"):
        assert checks["ops.mul.Tensor.float32"]["data"]["cpu_fallback"] is True
        assert checks["opinfo.mul"]["data"]["missing_aten_ops"] == ["aten::mul.Tensor"]
    if faults.startswith("missing"):
        # structured ops reach the .out kernel: the dispatcher names aten::mm.out
        assert report["summary"]["groups"]["opinfo"]["missing_aten_ops"] == ["aten::mm.out"]
        assert checks["opinfo.mm"]["data"]["first_failure"]["sample"].startswith("input float32[")


def test_a_composite_family_fault_is_refused_with_the_reason(refdev_available: None, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_REFDEV")}
    env.update(PYTHONPATH=str(REPO_ROOT), ACCELENV_REFDEV_FAULTS="missing:aten::adaptive_avg_pool2d")
    proc = subprocess.run([sys.executable, "-m", "probes", "--device", "refdev", "--checks", "smoke", "--quiet"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "aten::adaptive_avg_pool2d has no refdev kernel of its own" in proc.stderr


def test_a_hang_in_an_op_costs_one_timeout_and_names_the_op(refdev_available: None, tmp_path: Path) -> None:
    """topk hangs: the first check that calls it times out naming it; every later one (ops and opinfo
    checks alike) is marked without calling it, so the suite pays one timeout, not one per check.

    (Forward ops: a device's backward pass runs untraced, see probes/harness/breadcrumbs.py.)"""
    # 15 s: on a loaded host a fresh worker's first check can outlive 5 s, and the suite then loses checks
    # that did not hang to timeouts
    proc, report = run_probe(["--checks", "ops,opinfo", "--timeout", "15", "--opinfo-ops", "topk,add"],
                             tmp_path / "r.json", faults="hang:aten::topk")
    checks = by_id(report)
    timed_out = [c for c in checks.values() if c["status"] == "timeout"]
    first = [c for c in timed_out if c["data"].get("ran", True)]
    # the opinfo worker runs beside the ops worker: it may reach topk before it learns of the block, but
    # then the two timeouts overlapped in time; each worker pays at most one
    assert 1 <= len(first) <= 2 and len({c["group"] for c in first}) == len(first), [c["id"] for c in first]
    for c in first:
        assert c["data"]["aten_op"] == "aten::topk" and "it was inside aten::topk" in c["detail"]
    blocked = [c for c in timed_out if c["data"].get("ran") is False]
    assert {c["id"] for c in blocked} >= {"ops.topk.float16", "ops.topk.bfloat16", "ops.topk.int64"}
    for c in blocked:
        assert c["data"]["blocked_in"] in {f["id"] for f in first} and c["duration_s"] < 15
    assert checks["ops.add.Tensor.float32"]["status"] == "passed" and checks["opinfo.add"]["status"] == "passed"
    assert proc.returncode == 1


def test_a_crash_in_an_op_keeps_the_innermost_frames_and_no_host_paths(refdev_available: None,
                                                                       tmp_path: Path) -> None:
    """Issue 14 item 8: the bundle runs from a temporary directory under a home directory; neither appears."""
    home = tmp_path / "home-of-someone"
    workdir = home / "accelenv-probe-private"
    workdir.mkdir(parents=True)
    bundle = workdir / "accelenv_probe.py"
    from probes.harness.bundle import write_bundle

    write_bundle(str(bundle))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON"))}
    env.update(HOME=str(home), TMPDIR=str(workdir), ACCELENV_CONFIG_DIR=str(home / "config"),
               ACCELENV_REFDEV_FAULTS="crash:aten::addmm", ACCELENV_PROBE_OPINFO_OPS="mm")
    proc = subprocess.run([sys.executable, "-I", str(bundle), "--device", "refdev", "--checks", "smoke", "--quiet"],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=240)
    text = proc.stdout
    report = json.loads(text)
    crashed = [c for c in report["checks"] if c["status"] == "crashed" and c["data"].get("ran", True)]
    assert crashed and crashed[0]["data"]["aten_op"] == "aten::addmm"
    frames = crashed[0]["data"]["faulthandler"]
    assert frames[0].startswith("Fatal Python error: Aborted") and any("kernels.py" in f for f in frames)
    for private in (str(home), str(workdir), str(REPO_ROOT), os.path.expanduser("~")):
        assert private not in text
    assert "<bundle>/probes/refdev/kernels.py" in text or "<accelenv-bundle>/probes/refdev/kernels.py" in text
