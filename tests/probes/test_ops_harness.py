"""The ops harness in-process on CPU with table rows written for the test (the table is data): a CPU
fallback warning is reported as such, an undeclared dtype is skipped with its reason, and a reference
that cannot run is an error of the probe, not of the device."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from probes.checks import op_table, ops
from probes.checks import outcome as checks
from probes.checks.context import ProbeContext
from tests.probes.conftest import quiet_torch

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def ctx() -> ProbeContext:
    torch = quiet_torch()
    return ProbeContext(torch, torch.device("cpu"))


def _falls_back(torch: Any, x: Any) -> Any:
    warnings.warn("The operator 'aten::linalg_qr.out' is not currently supported on the MPS backend and will "
                  "fall back to run on the CPU. This may have performance implications.", UserWarning,
                  stacklevel=2)
    return x * 2


FALLBACK = op_table.OpCase("fallback_demo", "aten::mul.Tensor", op_table.F,
                           lambda t, d, g: (op_table.rand(t, g, (4,), d),), _falls_back)
REF_BROKEN = op_table.OpCase("ref_broken", "aten::mm", op_table.F,
                             lambda t, d, g: (op_table.rand(t, g, (2, 3), d), op_table.rand(t, g, (4, 5), d)),
                             lambda t, a, b: t.mm(a, b))


def test_cpu_fallback_fails_the_op_naming_it(ctx: ProbeContext) -> None:
    outcome = ops.run_case(ctx, FALLBACK, "float32")
    assert outcome.status == "failed"
    assert outcome.data["cpu_fallback"] is True and outcome.data["fallback_op"] == "aten::linalg_qr.out"
    assert "ran on the CPU fallback" in outcome.detail


def test_a_reference_that_cannot_run_is_a_probe_error(ctx: ProbeContext) -> None:
    outcome = ops.run_case(ctx, REF_BROKEN, "float32")
    assert outcome.status == "error"
    assert outcome.detail.startswith("CPU reference failed")


def test_dtype_the_device_does_not_hold_is_skipped_with_the_reason(ctx: ProbeContext) -> None:
    run = ops._bound(ops.run_case, FALLBACK, "bfloat16", {"bfloat16": "cannot create a bfloat16 tensor"})
    outcome = run(ctx)
    assert outcome.status == "skipped" and "does not claim bfloat16" in outcome.detail


def test_plan_has_one_check_per_case_and_applicable_dtype(ctx: ProbeContext) -> None:
    planned = ops.plan(ctx)
    ids = [c.id for c in planned]
    assert len(ids) == len(set(ids))
    assert all(isinstance(c, checks.Check) and c.group == "ops" for c in planned)
    assert "ops.mm.int64" not in ids and "ops.where.self.bool" in ids
