"""The nine false passes of issue 33, each reproduced by patching the wrong implementation in: the check
that claims to verify the thing must now fail (never pass), and the real implementation still passes.

Stubs run the real check functions in a fresh interpreter (``tests.refdev.test_checks_can_fail``'s harness);
``manual_seed`` drawing from the CPU generator is ``test_fork_rng_and_manual_seed_need_the_devices_own_generator``
there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.refdev.conftest import run_probe, run_python
from tests.refdev.test_checks_can_fail import DO_NOTHING_STREAMS, _run_check
from tests.refdev.test_probe_faults import by_id

RunPython = Callable[..., subprocess.CompletedProcess[str]]

POSITIVE_ELAPSED = DO_NOTHING_STREAMS + """
Event.elapsed_time = lambda self, other: 5.0      # ... and a plausible positive elapsed_time
"""


def test_events_that_return_a_positive_constant_fail(refdev_python: RunPython) -> None:
    entry = _run_check(refdev_python, "refdev", "capabilities", "detect.streams_events", POSITIVE_ELAPSED)
    assert entry["status"] == "failed", entry
    assert "the events do not measure the work" in entry["detail"]


EVERY_FUNCTION_A_NO_OP = """
from probes.checks import privateuse1
for name in privateuse1.DEVICE_MODULE_FUNCTIONS:    # present, but each does nothing and returns None
    if name not in ("is_available", "device_count", "current_device"):
        setattr(torch.refdev, name, lambda *a, **k: None)
"""


def test_a_device_module_with_do_nothing_functions_fails(refdev_python: RunPython) -> None:
    entry = _run_check(refdev_python, "refdev", "privateuse1", "privateuse1.device_module", EVERY_FUNCTION_A_NO_OP)
    assert entry["status"] == "failed", entry
    assert "they do not work" in entry["detail"]
    wrong = entry["data"]["misbehaving"]
    for phrase in ("get_device_name(0) gave None", "memory_allocated() gave None", "get_rng_state() gave None"):
        assert phrase in wrong, wrong


LINEAR_OUTSIDE_AUTOCAST = """
def fp32_linear(self, x):                          # autocast does nothing for the Linear: it stays float32
    with torch.autocast(device_type="cpu", enabled=False):
        return torch.nn.functional.linear(x.float(), self.weight.float(), self.bias.float())
torch.nn.Linear.forward = fp32_linear
"""


def test_an_overflow_under_an_autocast_that_does_nothing_fails() -> None:
    entry = _run_check(run_python, "cpu", "amp", "amp.grad_scaler_overflow", LINEAR_OUTSIDE_AUTOCAST)
    assert entry["status"] == "failed", entry
    assert "autocast did nothing for it" in entry["detail"]
    real = _run_check(run_python, "cpu", "amp", "amp.grad_scaler_overflow", "")
    assert real["status"] == "passed", real
    # float16, whose range is narrow: the same step in float32 stays finite, so the overflow is the half dtype's
    assert real["data"]["autocast_dtype"] == "float16" and real["data"]["float32_grads_finite"] is True


HALVING_SCALER = """
update = torch.amp.GradScaler.update
def halving(self, new_scale=None):                 # a GradScaler that halves its scale every step
    update(self, new_scale)
    self._scale.mul_(0.5)
torch.amp.GradScaler.update = halving
"""


def test_a_grad_scaler_that_halves_every_step_fails() -> None:
    entry = _run_check(run_python, "cpu", "amp", "amp.grad_scaler_skip", HALVING_SCALER)
    assert entry["status"] == "failed", entry
    assert "lowered its scale after a step with finite gradients" in entry["detail"]
    assert _run_check(run_python, "cpu", "amp", "amp.grad_scaler_skip", "")["status"] == "passed"


STEP_LOADS_AS_ZERO = """
load = torch.load
def forgetful(*a, **k):                            # the loop's step and AdamW's step counts load back as 0
    obj = load(*a, **k)
    obj["step"] = 0
    for state in obj["optim"]["state"].values():
        state["step"] = torch.zeros_like(state["step"])
    return obj
torch.load = forgetful
"""


def test_a_checkpoint_whose_step_loads_back_zero_fails() -> None:
    for module, check in (("smoke", "smoke.checkpoint"), ("runtime_api", "runtime.checkpoint_load")):
        entry = _run_check(run_python, "cpu", module, check, STEP_LOADS_AS_ZERO)
        assert entry["status"] == "failed", entry
        assert "differs from what was saved" in entry["detail"] and "['step']" in entry["detail"], entry
        real = _run_check(run_python, "cpu", module, check, "")
        assert real["status"] == "passed", real
        if module == "runtime_api":  # the training state includes the RNG, on CPU the CPU's alone
            assert real["data"]["rng"] == ["cpu"] and "step and the cpu RNG states" in real["detail"], real


RNG_NOT_RESTORED = """
torch.set_rng_state = lambda state: None          # a resumed run that keeps drawing where it was
"""
RNG_LEFT_OUT = """
load = torch.load
def without_rng(*a, **k):                         # a checkpoint that loads back without its RNG states
    obj = load(*a, **k)
    del obj["rng"]
    return obj
torch.load = without_rng
"""


def test_a_checkpoint_that_does_not_resume_the_rng_fails() -> None:
    not_restored = _run_check(run_python, "cpu", "runtime_api", "runtime.checkpoint_load", RNG_NOT_RESTORED)
    assert not_restored["status"] == "failed", not_restored
    assert "the checkpoint's RNG state does not resume the run" in not_restored["detail"]
    left_out = _run_check(run_python, "cpu", "runtime_api", "runtime.checkpoint_load", RNG_LEFT_OUT)
    assert left_out["status"] == "failed", left_out
    assert "keys" in left_out["detail"] and "'rng'" in left_out["detail"], left_out


SYNC_RAISES = """
def sync(*a, **k):
    raise RuntimeError("device lost")
torch.refdev.synchronize = sync
"""


def test_perf_fails_when_synchronize_raises(refdev_python: RunPython) -> None:
    entry = _run_check(refdev_python, "refdev", "perf", "perf.matmul", SYNC_RAISES)
    assert entry["status"] == "failed", entry
    assert "synchronize() on refdev raised RuntimeError: device lost" in entry["detail"]
    assert entry["data"]["figures"] == []


def test_a_one_percent_wrong_matmul_fails_in_half_precision_and_is_blamed_on_mm(refdev_available: None,
                                                                                tmp_path: Path) -> None:
    _, report = run_probe(["--checks", "ops,models"], tmp_path / "r.json", faults="wrong:aten::mm")
    checks = by_id(report)
    for cid in ("ops.mm.float16", "ops.mm.bfloat16", "ops.linear.bfloat16", "ops.addmm.float16",
                "ops.matmul.broadcast.bfloat16", "models.resnet.train.float32", "models.transformer.train.float32"):
        assert checks[cid]["status"] == "failed", checks[cid]
        # mm's consumers (linear, addmm's backward, the models' training steps) name mm, the kernel at fault
        assert checks[cid]["data"]["blamed_op"] == "aten::mm", checks[cid]
    assert "normwise relative error" in checks["ops.mm.bfloat16"]["detail"]
    assert checks["ops.add.Tensor.bfloat16"]["status"] == "passed"


def test_a_64_mib_device_fails_the_capacity_check(refdev_available: None, tmp_path: Path) -> None:
    # oom:BYTES gives refdev that capacity (ACCELENV_REFDEV_CAPACITY's effect)
    proc, report = run_probe(["--checks", "allocator"], tmp_path / "r.json", faults=f"oom:{64 << 20}")
    entry = by_id(report)["allocator.capacity"]
    assert entry["status"] == "failed", entry
    assert "reports 64 MiB of memory" in entry["detail"]
    assert proc.returncode == 1


def test_a_crash_in_mm_is_contained_in_forward_and_backward(refdev_available: None, tmp_path: Path) -> None:
    """The backward pass (untraced on a device) is followed op by op: a crash in mm's kernel, reached first from
    AddmmBackward0 in smoke's training step, is one worker death naming aten::mm; every later check that
    reaches mm, forward or backward, is marked without calling it (13 deaths at first, then two, now one)."""
    _, report = run_probe(["--checks", "smoke,models,ops,runtime"], tmp_path / "r.json", faults="crash:aten::mm")
    checks = by_id(report)
    died = {cid: c for cid, c in checks.items() if c["status"] == "crashed" and c["data"].get("ran") is not False}
    # workers run side by side: whichever check reaches mm first is the one death
    assert len(died) == 1, sorted(died)
    [(first, death)] = died.items()
    assert "inside aten::mm" in death["detail"], death
    marked = {cid: c for cid, c in checks.items() if c["data"].get("ran") is False}
    assert len(marked) > 10 and all(c["data"]["blocked_in"] == first for c in marked.values()), marked
    assert {c["data"].get("backward_node") for c in marked.values()} >= {"AddmmBackward0"}
    assert {c["status"] for c in marked.values()} == {"crashed"}


def test_rank_r_runs_on_device_r_where_the_host_has_them() -> None:
    from probes.checks.distributed import rank_device

    assert [rank_device("cuda:*", r) for r in range(2)] == ["cuda:0", "cuda:1"]
    assert [rank_device("refdev", r) for r in range(2)] == ["refdev", "refdev"]  # one device: shared, and said so
