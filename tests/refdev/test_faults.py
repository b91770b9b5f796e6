"""Parsing the fault list (pure Python; the op names are checked against torch at install time)."""

from __future__ import annotations

import pytest

from probes.refdev.faults import OOM_CAPACITY, parse_faults


def test_empty_and_none_mean_no_faults() -> None:
    assert not parse_faults(None)
    assert not parse_faults(" , ")


def test_every_kind_parses() -> None:
    plan = parse_faults(
        "missing:aten::mm, wrong:aten::mm,wrong:promotion:aten::add.Tensor,leak,oom:4096,"
        "hang:aten::sum.dim_IntList,crash:aten::relu"
    )
    assert plan.missing_ops == ["aten::mm"]
    assert plan.wrong_ops == ["aten::mm"]
    assert plan.promotion_ops == ["aten::add.Tensor"]
    assert plan.hang_ops == ["aten::sum.dim_IntList"]
    assert plan.crash_ops == ["aten::relu"]
    assert plan.leak and plan.oom_capacity == 4096
    assert len(plan.entries) == 7


def test_bare_oom_uses_the_small_default_capacity() -> None:
    assert parse_faults("oom").oom_capacity == OOM_CAPACITY


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("explode", "unknown kind 'explode'"),
        ("missing", "missing needs an operator"),
        ("missing:mm", "must be an operator name"),
        ("wrong:promotion:", "must be an operator name"),
        ("oom:lots", "positive whole number of bytes"),
        ("oom:0", "positive whole number of bytes"),
        ("leak:aten::mm", "leak takes no target"),
    ],
    ids=["unknown-kind", "no-target", "not-aten", "promotion-no-op", "oom-text", "oom-zero", "leak-target"],
)
def test_bad_entries_name_the_entry_and_the_valid_kinds(spec: str, named: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_faults("leak," + spec)
    message = str(info.value)
    assert repr(spec) in message and named in message
    assert "valid faults: missing:aten::OP" in message
