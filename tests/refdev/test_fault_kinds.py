"""Each injected fault does what it says, at the backend level (the probe suite's view is in
test_probe_faults.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from probes.refdev.faults import OOM_CAPACITY
from tests.refdev.conftest import REPO_ROOT, result, snippet_env

RunPython = Callable[..., subprocess.CompletedProcess[str]]

MISSING = """
import json, sys, torch, torch.nn.functional as F, probes.refdev
probes.refdev.install()
def error(fn):
    try:
        fn()
        return None
    except NotImplementedError as exc:
        return str(exc).splitlines()[0]
x = torch.randn(2, 3, 4, 4, device="refdev", requires_grad=True)
a = torch.randn(3, 3, device="refdev")
pooled = {}
def pool():
    pooled["y"] = F.adaptive_avg_pool2d(x, (2, 2))
print(json.dumps({
    "pool_forward": error(pool),
    "pool_backward": error(lambda: pooled["y"].sum().backward()),
    "matmul": error(lambda: a @ a),
    "mm_out": error(lambda: torch.mm(a, a, out=torch.empty(3, 3, device="refdev"))),
    "add": error(lambda: a + a),
}))
"""


def test_missing_backward_op_fails_only_in_backward(refdev_python: RunPython) -> None:
    faults = {"ACCELENV_REFDEV_FAULTS": "missing:aten::_adaptive_avg_pool2d_backward"}
    out = result(refdev_python(MISSING, env=faults))
    assert out["pool_forward"] is None
    assert out["pool_backward"].startswith(
        "Could not run 'aten::_adaptive_avg_pool2d_backward' with arguments from the 'refdev' backend."
    )
    assert out["matmul"] is None and out["add"] is None


def test_missing_op_family_removes_every_overload(refdev_python: RunPython) -> None:
    out = result(refdev_python(MISSING, env={"ACCELENV_REFDEV_FAULTS": "missing:aten::mm"}))
    # a @ b reaches the structured kernel aten::mm.out: the dispatcher names the innermost op
    assert out["matmul"].startswith("Could not run 'aten::mm.out' with arguments from the 'refdev' backend.")
    assert out["mm_out"].startswith("Could not run 'aten::mm.out' with arguments from the 'refdev' backend.")
    assert out["add"] is None and out["pool_backward"] is None


WRONG = """
import json, torch, probes.refdev
probes.refdev.install()
a = torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
b = torch.randn(8, 8, generator=torch.Generator().manual_seed(1))
mm = (a.to("refdev") @ b.to("refdev")).cpu()
ratio = (mm / (a @ b))
h = torch.ones(2, dtype=torch.float16, device="refdev")
print(json.dumps({
    "mm_rel_err_min": ratio.min().item() - 1, "mm_rel_err_max": ratio.max().item() - 1,
    "add_dtype": str((h + h).dtype), "add_value": (h + h).cpu().tolist(),
    "add_inplace_dtype": str(h.add_(h).dtype),
    "sub_dtype": str((h - h).dtype),
}))
"""


def test_wrong_numerics_scale_results_by_the_documented_relative_error(refdev_python: RunPython) -> None:
    out = result(refdev_python(WRONG, env={"ACCELENV_REFDEV_FAULTS": "wrong:aten::mm"}))
    assert out["mm_rel_err_min"] == pytest.approx(1e-2, abs=1e-4)
    assert out["mm_rel_err_max"] == pytest.approx(1e-2, abs=1e-4)
    assert out["add_dtype"] == "torch.float16"


def test_wrong_promotion_returns_the_next_wider_dtype(refdev_python: RunPython) -> None:
    out = result(refdev_python(WRONG, env={"ACCELENV_REFDEV_FAULTS": "wrong:promotion:aten::add"}))
    assert out["add_dtype"] == "torch.float32" and out["add_value"] == [2.0, 2.0]
    assert out["add_inplace_dtype"] == "torch.float16"  # in place cannot change its argument's dtype
    assert out["sub_dtype"] == "torch.float16"
    assert out["mm_rel_err_max"] == pytest.approx(0.0, abs=1e-5)


ALLOCATOR = """
import json, torch, torch.nn as nn, torch.nn.functional as F, probes.refdev
probes.refdev.install()
m = torch.refdev
seen = {"capacity": m.get_memory_capacity()}
allocated = []
try:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to("refdev")
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(3):
        x = torch.randn(128, 64, device="refdev")
        loss = F.cross_entropy(model(x), torch.zeros(128, dtype=torch.long, device="refdev"))
        opt.zero_grad()
        loss.backward()
        opt.step()
        allocated.append(m.memory_allocated())
    del model, opt, x, loss
    m.empty_cache()
    seen["after_cleanup"] = (m.memory_allocated(), m.memory_reserved())
except torch.OutOfMemoryError as exc:
    seen["oom"] = str(exc)
seen["allocated_per_step"] = allocated
seen["num_ooms"] = m.memory_stats()["num_ooms"]
print(json.dumps(seen))
"""


def test_without_faults_a_training_loop_returns_its_memory(refdev_python: RunPython) -> None:
    out = result(refdev_python(ALLOCATOR))
    steady = out["allocated_per_step"]
    assert len(steady) == 3 and steady[1] == steady[2]
    assert out["after_cleanup"] == [0, 0]


def test_leak_keeps_every_block(refdev_python: RunPython) -> None:
    out = result(refdev_python(ALLOCATOR, env={"ACCELENV_REFDEV_FAULTS": "leak"}))
    steps = out["allocated_per_step"]
    assert steps[0] < steps[1] < steps[2]
    allocated, reserved = out["after_cleanup"]
    assert allocated >= steps[2] and reserved >= allocated


@pytest.mark.parametrize(
    ("spec", "capacity"), [("oom", OOM_CAPACITY), ("oom:200000", 200000)], ids=["default", "bytes"]
)
def test_oom_fault_makes_the_training_step_run_out_of_memory(
    refdev_python: RunPython, spec: str, capacity: int
) -> None:
    out = result(refdev_python(ALLOCATOR, env={"ACCELENV_REFDEV_FAULTS": spec}))
    assert out["capacity"] == capacity
    assert out["oom"].startswith("refdev out of memory. Tried to allocate")
    assert out["num_ooms"] == 1


CALL_OP = """
import sys, torch, probes.refdev
probes.refdev.install()
a = torch.ones(2, 2, device="refdev")
print("before", flush=True)
(a + a).sum().item()
print("added", flush=True)
torch.mm(a, a)
print("after", flush=True)
"""


def test_crash_kills_the_process_with_sigabrt_in_the_named_op(refdev_python: RunPython) -> None:
    proc = refdev_python(CALL_OP, env={"ACCELENV_REFDEV_FAULTS": "crash:aten::mm"})
    assert proc.returncode == -signal.SIGABRT
    assert proc.stdout.split() == ["before", "added"]


def test_hang_never_returns_from_the_named_op(refdev_available: None) -> None:
    env = snippet_env({"ACCELENV_REFDEV_FAULTS": "hang:aten::mm"})
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CALL_OP)], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        printed = [proc.stdout.readline().strip(), proc.stdout.readline().strip()]  # waits out torch's import
        assert printed == ["before", "added"]
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=3)  # inside aten::mm now, and staying there
    finally:
        proc.kill()
        _, err = proc.communicate()
    assert "refdev: injected hang in aten::mm" in err


FALLBACK = """
import json, torch, probes.refdev
from probes.checks import dispatcher
probes.refdev.install("missing:aten::neg")
relevant = dispatcher.backend_relevant(torch)
before = dispatcher.own_kernels(torch, relevant)
def refuse(op, *args, **kwargs):  # registered only to be found by the dispatcher query, never called here
    raise NotImplementedError(str(op))
library = torch.library.Library("_", "IMPL")
library.fallback(refuse, "PrivateUse1")
after = dispatcher.own_kernels(torch, relevant)
exercised = ["aten::neg", "aten::mm", "aten::add.Tensor"]
print(json.dumps({"total": len(relevant), "before": [len(before[0]), before[1]], "after": [len(after[0]), after[1]],
                  "lacking": after[0],
                  "without": dispatcher.summarise(relevant, exercised, [], *before),
                  "with": dispatcher.summarise(relevant, exercised, [], *after)}))
"""


def test_dispatcher_names_the_overloads_a_backend_fallback_takes(refdev_python: RunPython) -> None:
    out = result(refdev_python(FALLBACK))
    # refdev registers a kernel for every backend-relevant overload but the missing neg family
    assert "aten::neg" in out["lacking"] and "aten::mm" not in out["lacking"]
    assert out["before"] == [len(out["lacking"]), False] and out["after"] == [len(out["lacking"]), True]
    without, with_fallback = out["without"], out["with"]
    assert without["own_kernels"] == out["total"] - len(out["lacking"])
    assert without["backend_fallback_registered"] is False and without["via_backend_fallback"] == []
    assert with_fallback["backend_fallback_registered"] is True
    assert with_fallback["via_backend_fallback"] == ["aten::neg"]
    assert "aten::neg" in with_fallback["fell_back"] and without["fell_back"] == []
