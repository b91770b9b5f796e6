"""Fault injection for the reference backend: parse ``ACCELENV_REFDEV_FAULTS`` into a plan.

The list is comma-separated; each entry is ``KIND`` or ``KIND:TARGET``:

============================  ============================================================================
``missing:aten::OP``          no refdev kernel for OP, so the dispatcher raises its own "Could not run
                              'aten::OP' with arguments from the 'refdev' backend". Without an overload
                              (``aten::mm``) the whole family goes (``mm``, ``mm.out``, ...): structured
                              ops reach the ``.out`` kernel. ``aten::mm.out`` removes that overload only.
``wrong:aten::OP``            OP's floating-point results are off by ``WRONG_RELATIVE_ERROR`` (relative).
``wrong:promotion:aten::OP``  OP's out-of-place results come back in the wrong dtype (``WRONG_PROMOTION``:
                              float32 -> float64, float16 -> float32, int64 -> int32, ...), the bug a
                              backend's type promotion can have. In-place and ``out=`` results keep theirs.
``leak``                      freed blocks never go back to the pool: allocated and reserved never shrink.
``oom`` / ``oom:BYTES``       the device capacity is ``OOM_CAPACITY`` (16 KiB) or BYTES (over
                              ``ACCELENV_REFDEV_CAPACITY``): a training step runs out of memory with a real
                              ``torch.OutOfMemoryError``.
``hang:aten::OP``             OP's kernel sleeps forever.
``crash:aten::OP``            OP's kernel kills the process with SIGABRT (``os.abort()``).
``fallback:aten::OP``         OP warns, as MPS and vendor plugins do, that it "will fall back to run on the
                              CPU" (refdev runs everything on CPU; this makes it say so for OP).
``rng``                       ``torch.refdev.set_rng_state`` returns without restoring anything, the bug
                              that breaks ``fork_rng`` and reproducible dropout.
``collective``                torch.distributed maps refdev to gloo (``default_device_backend_map``), which
                              cannot take refdev tensors: a process-group backend claimed but not there.
============================  ============================================================================

What refdev cannot have from Python on torch 2.13 (``torch._C._acc`` lacks the hooks), and so reports
honestly absent: pinned memory (``getPinnedMemoryAllocator``), a device ``Generator``
(``getNewGenerator``), profiler activity, and by default any process-group backend.

A family target (``aten::OP``) whose plain overload is composite is refused with the reason, as a composite
op (``aten::linear``) is: only the ops the dispatcher reaches have refdev kernels to fault.

Parsing needs no torch; whether an OP exists is checked at install time against the live dispatcher.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

ENV_VAR = "ACCELENV_REFDEV_FAULTS"
OP_KINDS = ("missing", "wrong", "hang", "crash", "fallback")
FLAG_KINDS = ("leak", "rng", "collective")
KINDS = ("missing", "wrong", "wrong:promotion", "leak", "oom", "hang", "crash", "fallback", "rng", "collective")
USAGE = (
    "valid faults: missing:aten::OP, wrong:aten::OP, wrong:promotion:aten::OP, leak, oom, oom:BYTES, "
    "hang:aten::OP, crash:aten::OP, fallback:aten::OP, rng, collective (comma-separated)"
)
WRONG_RELATIVE_ERROR = 1e-2
OOM_CAPACITY = 16 * 1024
#: dtype name -> the dtype name a promotion-faulty op returns instead
WRONG_PROMOTION = {
    "float16": "float32",
    "bfloat16": "float32",
    "float32": "float64",
    "float64": "float32",
    "int8": "int16",
    "uint8": "int16",
    "int16": "int32",
    "int32": "int64",
    "int64": "int32",
    "bool": "uint8",
    "complex64": "complex128",
    "complex128": "complex64",
}

_OP_NAME = re.compile(r"^aten::[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)?$")


class FaultPlan:
    """The faults for one process. ``*_ops`` hold op names as written: a family or one overload."""

    def __init__(self) -> None:
        self.missing_ops: List[str] = []
        self.wrong_ops: List[str] = []
        self.promotion_ops: List[str] = []
        self.hang_ops: List[str] = []
        self.crash_ops: List[str] = []
        self.fallback_ops: List[str] = []
        self.leak = False
        self.rng = False
        self.collective = False
        self.oom_capacity: Optional[int] = None
        self.entries: List[str] = []

    def op_faults(self) -> Dict[str, List[str]]:
        return {
            "missing": self.missing_ops,
            "wrong": self.wrong_ops,
            "wrong:promotion": self.promotion_ops,
            "hang": self.hang_ops,
            "crash": self.crash_ops,
            "fallback": self.fallback_ops,
        }

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __repr__(self) -> str:
        return "FaultPlan(%s)" % ",".join(self.entries)


def _bad(entry: str, why: str) -> ValueError:
    return ValueError("bad refdev fault %r: %s; %s" % (entry, why, USAGE))


def _op(entry: str, target: str) -> str:
    if not _OP_NAME.match(target):
        raise _bad(entry, "the target must be an operator name like aten::mm or aten::add.Tensor")
    return target


def _oom_capacity(entry: str, target: str) -> int:
    if not target:
        return OOM_CAPACITY
    if target.isdigit() and int(target) > 0:
        return int(target)
    raise _bad(entry, "oom:BYTES needs a positive whole number of bytes")


def _add_op_fault(plan: FaultPlan, entry: str, kind: str, target: str) -> None:
    if kind == "wrong" and target.startswith("promotion:"):
        plan.promotion_ops.append(_op(entry, target[len("promotion:"):]))
    elif kind in OP_KINDS:
        if not target:
            raise _bad(entry, "%s needs an operator, e.g. %s:aten::mm" % (kind, kind))
        plan.op_faults()[kind].append(_op(entry, target))
    else:
        raise _bad(entry, "unknown kind %r" % kind)


def parse_faults(spec: Optional[str]) -> FaultPlan:
    """Parse the comma-separated fault list; raise ValueError naming the first bad entry."""
    plan = FaultPlan()
    for raw in (spec or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        kind, _, target = entry.partition(":")
        if kind in FLAG_KINDS:
            if target:
                raise _bad(entry, "%s takes no target" % kind)
            setattr(plan, kind, True)
        elif kind == "oom":
            plan.oom_capacity = _oom_capacity(entry, target)
        else:
            _add_op_fault(plan, entry, kind, target)
        plan.entries.append(entry)
    return plan
