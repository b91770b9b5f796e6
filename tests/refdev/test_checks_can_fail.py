"""Checks that used to pass without being able to fail, each run against a stub that does nothing; blame
that lands on the faulty op only; and the probe's verdict rules pinned to the service's.

Stubs run the real check functions in a fresh interpreter (refdev installs irreversibly), with the piece
under test replaced by one that does nothing; the check must say ``failed`` (or ``unsupported`` where the
piece is absent), never ``passed``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.refdev.conftest import REPO_ROOT, result, run_probe, run_python
from tests.refdev.test_probe_faults import by_id

RunPython = Callable[..., subprocess.CompletedProcess[str]]

RUN_CHECK = """
import json
import torch
from probes.checks import context
from probes.harness import worker
ctx = context.build_context(torch, %(device)r)
%(stub)s
from probes.checks import %(module)s as group
planned = group.plan(ctx, []) if group.__name__.endswith("capabilities") else group.plan(ctx)
check = [c for c in planned if c.id == %(check)r][0]
print(json.dumps(worker.run_check(ctx, check, [])))
"""


def _run_check(run: RunPython, device: str, module: str, check: str, stub: str) -> dict:
    return result(run(RUN_CHECK % {"device": device, "module": module, "check": check, "stub": stub}))


CACHES_NOTHING = """
mod = torch.refdev
mod.memory_reserved = lambda *a, **k: 0          # a backend that caches nothing reports reserved 0
mod.max_memory_reserved = lambda *a, **k: 0
"""


def test_cache_reuse_fails_for_an_allocator_that_caches_nothing(refdev_python: RunPython) -> None:
    entry = _run_check(refdev_python, "refdev", "allocator", "allocator.cache_reuse", CACHES_NOTHING)
    assert entry["status"] == "failed", entry
    assert "the allocator caches nothing" in entry["detail"]
    # and the real refdev allocator, which caches, passes the same check
    real = _run_check(refdev_python, "refdev", "allocator", "allocator.cache_reuse", "")
    assert real["status"] == "passed", real


DO_NOTHING_STREAMS = """
class Stream(object):                             # streams and events that do nothing
    def __init__(self, *a, **k): pass
    def wait_stream(self, other): pass
    def wait_event(self, event): pass
    def synchronize(self): pass
    def query(self): return True
    def __enter__(self): return self
    def __exit__(self, *exc): return False
class Event(object):
    def __init__(self, *a, **k): pass
    def record(self, stream=None): pass
    def synchronize(self): pass
    def query(self): return True
    def elapsed_time(self, other): return 0.0
torch.refdev.Stream, torch.refdev.Event = Stream, Event
torch.refdev.current_stream = lambda *a: Stream()
torch.refdev.stream = lambda s: s
"""


def test_streams_and_events_that_do_nothing_fail(refdev_python: RunPython) -> None:
    entry = _run_check(refdev_python, "refdev", "capabilities", "detect.streams_events", DO_NOTHING_STREAMS)
    assert entry["status"] == "failed", entry
    assert "the events record nothing" in entry["detail"]
    assert entry["data"]["elapsed_ms"] == 0.0


def test_streams_refdev_lacks_are_unsupported_not_skipped(refdev_python: RunPython) -> None:
    entry = _run_check(refdev_python, "refdev", "capabilities", "detect.streams_events", "")
    assert entry["status"] == "unsupported", entry
    assert "Backend doesn't support synchronizing events" in entry["detail"]


NO_OP_FORK = """
import contextlib
torch.random.fork_rng = lambda *a, **k: contextlib.nullcontext()   # a fork_rng that saves and restores nothing
"""


def test_fork_rng_that_restores_nothing_fails() -> None:
    entry = _run_check(run_python, "cpu", "runtime_api", "runtime.fork_rng", NO_OP_FORK)
    assert entry["status"] == "failed", entry
    assert "did not restore the device RNG" in entry["detail"]
    assert _run_check(run_python, "cpu", "runtime_api", "runtime.fork_rng", "")["status"] == "passed"


def test_fork_rng_and_manual_seed_need_the_devices_own_generator(refdev_python: RunPython) -> None:
    # refdev draws from the CPU generator: fork_rng would restore that one and pass for the wrong reason
    for check in ("runtime.fork_rng", "runtime.manual_seed"):
        entry = _run_check(refdev_python, "refdev", "runtime_api", check, "")
        assert entry["status"] == "unsupported", entry
        assert "has no generator of its own" in entry["detail"]


NO_SCALER = """
from probes.checks import amp
class DoNothingScaler(object):                   # a GradScaler that never looks for inf
    def scale(self, loss): return loss
    def step(self, opt): opt.step()
    def update(self): pass
    def get_scale(self): return 1.0
amp._grad_scaler = lambda *a, **k: DoNothingScaler()
"""


def test_grad_scaler_that_ignores_an_overflow_fails() -> None:
    entry = _run_check(run_python, "cpu", "amp", "amp.grad_scaler_overflow", NO_SCALER)
    assert entry["status"] == "failed", entry
    assert "applied a step whose float16 gradients overflowed" in entry["detail"]
    real = _run_check(run_python, "cpu", "amp", "amp.grad_scaler_overflow", "")
    assert real["status"] == "passed", real
    assert real["data"]["scaled_grads_finite"] is False and real["data"]["step_skipped"] is True


def test_an_all_reduce_that_does_nothing_fails_across_two_ranks(tmp_path: Path) -> None:
    stub = tmp_path / "stub"
    stub.mkdir()
    # every process of the run (the worker and both ranks) gets an all_reduce that returns without reducing
    (stub / "sitecustomize.py").write_text(
        "import torch.distributed as dist\ndist.all_reduce = lambda tensor, *a, **k: None\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env.update(PYTHONPATH=os.pathsep.join([str(stub), str(REPO_ROOT)]), PYTHONWARNINGS="ignore::UserWarning",
               OMP_NUM_THREADS="1")
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "probes", "--device", "cpu", "--checks", "distributed", "--quiet",
                           "--output", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    checks = {c["id"]: c for c in json.loads(out.read_text())["checks"]}
    reduce = checks["distributed.all_reduce"]
    assert reduce["status"] == "failed", reduce
    assert "all_reduce(SUM) gave [[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]]" in reduce["detail"]
    assert proc.returncode == 1


def test_wrong_mul_is_blamed_on_mul_only(refdev_available: None, tmp_path: Path) -> None:
    """The ops harness builds no device-side loss: a faulty multiply fails the mul checks, not the backward
    of every other op."""
    proc, report = run_probe(["--checks", "ops"], tmp_path / "r.json", faults="wrong:aten::mul")
    checks = by_id(report)
    failed = {cid: c for cid, c in checks.items() if c["status"] == "failed"}
    assert "ops.mul.Tensor.float32" in failed
    # beyond mul itself only div, whose backward formula multiplies (grad * a / b**2): it depends on mul, and
    # the failure names mul as the first op whose device result differs from CPU on the same inputs
    others = {cid: c for cid, c in failed.items() if not cid.startswith(("ops.mul.", "ops.mul_."))}
    assert set(others) <= {"ops.div.Tensor.float32", "ops.div.Tensor.float16", "ops.div.Tensor.bfloat16"}, \
        sorted(failed)
    assert all(c["data"]["phase"] == "backward" for c in others.values())
    assert all(c["data"]["blamed_op"] == "aten::mul.Tensor" for c in others.values())
    for cid in ("ops.add.Tensor.float32", "ops.mm.float32", "ops.conv2d.float32", "ops.layer_norm.float32",
                "ops.softmax.float32"):
        assert checks[cid]["status"] == "passed", checks[cid]
    assert proc.returncode == 1


def test_a_fallback_warned_once_marks_every_check_of_the_op(refdev_available: None, tmp_path: Path) -> None:
    """refdev, like real backends, warns once per process; every later check reaching the op is still told."""
    _, report = run_probe(["--checks", "ops"], tmp_path / "r.json", faults="fallback:aten::add.Tensor")
    checks = by_id(report)
    adds = {cid: c for cid, c in checks.items() if cid.startswith("ops.add.Tensor.")}
    assert len(adds) >= 3
    for c in adds.values():
        assert c["status"] == "failed", c
        assert c["data"]["cpu_fallback"] is True and c["data"]["fallback_op"] == "aten::add.Tensor"
    assert checks["ops.mul.Tensor.float32"]["status"] == "passed"


def test_fallback_fails_the_run_naming_the_op_whatever_ran_first(refdev_available: None, tmp_path: Path) -> None:
    """The smoke step reaches mm first (and looks at no warning); mm's checks, the smoke step, the models and
    the perf figures taken through it all fail naming aten::mm, and the figure says it is invalid."""
    proc, report = run_probe(["--checks", "smoke,models,ops,perf"], tmp_path / "r.json", faults="fallback:aten::mm")
    checks = by_id(report)
    assert proc.returncode == 1 and report["summary"]["ok"] is False
    for cid in ("smoke.train_step", "models.resnet.train.float32", "ops.mm.float32", "ops.mm.bfloat16",
                "perf.matmul"):
        assert checks[cid]["status"] == "failed", checks[cid]
        assert "aten::mm" in checks[cid]["detail"], checks[cid]
    assert checks["ops.add.Tensor.float32"]["status"] == "passed"
    matmul = [f for f in report["perf"]["figures"] if f["name"] == "matmul.float32"][0]
    assert matmul["valid"] is False and "CPU fallback of aten::mm" in matmul["invalid_reason"]


def test_the_blocklist_refuses_the_op_on_the_device_only() -> None:
    code = """
import json, torch
from probes.harness import breadcrumbs
blocked = {"aten::sort": "crashed the worker in ops.sort.float32"}
outcome = {}
with breadcrumbs.make_mode(torch, None, blocked, "meta"):
    outcome["cpu"] = torch.sort(torch.tensor([3.0, 1.0, 2.0]))[0].tolist()   # the harness's own CPU sort
    try:
        torch.sort(torch.empty(3, device="meta"))
        outcome["device"] = "ran"
    except breadcrumbs.BlockedOp as exc:
        outcome["device"] = "blocked"
print(json.dumps(outcome))
"""
    out = result(run_python(code))
    assert out == {"cpu": [1.0, 2.0, 3.0], "device": "blocked"}


def test_inject_is_refused_off_refdev(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env.update(PYTHONWARNINGS="ignore::UserWarning", OMP_NUM_THREADS="1")
    for device in ("cpu", "auto"):
        proc = subprocess.run([sys.executable, "-m", "cli.main", "probe", "--device", device, "--inject",
                               "missing:aten::mm", "--output", str(tmp_path / "r.json")], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert f"--inject works only with --device refdev (the reference backend), not {device}" in proc.stderr
    # the probe itself refuses the variable on another device (exit 2, no report)
    probe_env = dict(env, PYTHONPATH=str(REPO_ROOT), ACCELENV_REFDEV_FAULTS="missing:aten::mm")
    out = tmp_path / "p.json"
    proc = subprocess.run([sys.executable, "-m", "probes", "--device", "cpu", "--checks", "smoke", "--output",
                           str(out)], cwd=REPO_ROOT, env=probe_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "only the refdev reference device has" in proc.stderr
    assert not out.exists()


def test_probe_and_service_verdict_rules_agree() -> None:
    """probes/ cannot import the domain: each keeps its own copy, pinned equal here."""
    import typing

    from compat_service.domain.evidence import report, status
    from probes.checks import registry

    assert set(registry.FAILING_STATUSES) == status.BAD_STATUSES
    assert set(registry.REQUIRED) == status.TRAIN_GROUPS
    assert set(registry.REQUIRED) <= status.REQUIRED_GROUPS
    assert registry.NAMES == typing.get_args(report.CheckGroup)
    for group in registry.NAMES:
        for state in report.CHECK_STATUSES:
            assert registry.is_failing(group, state) == status.is_bad(group, state), (group, state)


def test_torch_refusing_the_device_type_is_unsupported_not_failed(refdev_available: None, tmp_path: Path) -> None:
    """torch.mode's own gate ("mode only supports CPU, CUDA and XPU device type") refuses refdev before any
    kernel runs: a gap, not a numeric failure, and the group's summary does not fail with it."""
    proc, report = run_probe(["--checks", "opinfo", "--opinfo-ops", "mode,add"], tmp_path / "r.json")
    checks = by_id(report)
    assert checks["opinfo.mode"]["status"] == "unsupported", checks["opinfo.mode"]
    assert "torch refuses the device type" in checks["opinfo.mode"]["detail"]
    assert checks["opinfo.add"]["status"] == "passed"
    assert report["summary"]["groups"]["opinfo"]["status"] == "unsupported"
    assert proc.returncode == 0


@pytest.mark.parametrize(("faults", "checks_arg", "expected"), [
    pytest.param("leak", "smoke,models,allocator",
                 {"allocator.stats_move", "allocator.cache_reuse", "allocator.empty_cache"}, id="leak"),
    pytest.param("rng", "smoke,models,runtime", {"runtime.rng_state"}, id="rng"),
])
def test_a_fault_fails_only_the_checks_that_depend_on_it(refdev_available: None, tmp_path: Path, faults: str,
                                                         checks_arg: str, expected: set[str]) -> None:
    """The training step and the models do not depend on a leaking allocator or a broken set_rng_state:
    they still pass, and the run fails on the checks that do."""
    from probes.checks.registry import is_failing

    proc, report = run_probe(["--checks", checks_arg], tmp_path / "r.json", faults=faults)
    checks = by_id(report)
    assert {cid for cid, c in checks.items() if is_failing(c["group"], c["status"])} == expected
    for c in checks.values():
        if c["group"] in ("smoke", "models"):
            assert c["status"] in ("passed", "skipped"), c
    assert proc.returncode == 1
