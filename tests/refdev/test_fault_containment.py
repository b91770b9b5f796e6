"""One bad kernel costs the whole default suite one worker: the full refdev suite with aten::mm crashing (or
hanging) has exactly one check that died in it, named, and every later check that reaches mm (composite ops,
backward passes, the untraced compile and perf groups, workers running beside the one that died, even while
it hangs) is marked without calling it, naming the op and the check that died. One probe run per fault,
shared by the assertions (the full suite takes a minute or two)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.refdev.conftest import run_probe
from tests.refdev.test_probe_faults import by_id

DIED = {"crash": "crashed", "hang": "timeout"}
# groups whose checks reach mm on the device: each must show a check marked from the one death
REACHING_MM = ("smoke", "models", "ops", "compile", "perf")


@pytest.fixture(scope="module", params=["crash", "hang"])
def suite(request: pytest.FixtureRequest, refdev_available: None,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, dict[str, dict[str, Any]]]:
    kind = request.param
    out = tmp_path_factory.mktemp(f"contain-{kind}") / "r.json"
    proc, report = run_probe(["--timeout", "20"], out, faults=f"{kind}:aten::mm", timeout=900)
    return kind, proc.returncode, by_id(report)


def _died(checks: dict[str, dict[str, Any]]) -> list[str]:
    return [cid for cid, c in checks.items()
            if c["status"] in ("crashed", "timeout") and c["data"].get("ran", True)]


def _deaths(checks: dict[str, dict[str, Any]]) -> str:
    return "; ".join(f"{cid}: {checks[cid]['detail'][:300]}" for cid in _died(checks))


def test_exactly_one_check_dies_and_it_names_the_op(suite: tuple[str, int, dict[str, dict[str, Any]]]) -> None:
    kind, returncode, checks = suite
    # which check reaches mm first depends on the workers' pace (smoke's training step, or an OpInfo's
    # backward pass in the worker beside it); exactly one does
    died = _died(checks)
    assert len(died) == 1, _deaths(checks)
    first = checks[died[0]]
    assert first["status"] == DIED[kind]
    assert first["data"]["aten_op"] == "aten::mm"
    assert "inside aten::mm" in first["detail"]
    assert returncode == 1


def test_every_later_check_reaching_mm_is_marked_naming_the_op_and_the_death(
        suite: tuple[str, int, dict[str, dict[str, Any]]]) -> None:
    kind, _, checks = suite
    died = _died(checks)
    assert len(died) == 1, _deaths(checks)
    marked = {cid: c for cid, c in checks.items() if c["data"].get("ran") is False}
    assert marked
    for cid, c in marked.items():
        assert c["status"] == DIED[kind], cid
        assert c["data"]["aten_op"].startswith("aten::mm"), cid
        assert c["data"]["blocked_in"] == died[0], cid
        how = "crashed the worker" if kind == "crash" else "timed out"
        assert f"which {how} earlier (in {died[0]})" in c["detail"], cid
    groups = {c["group"] for c in marked.values()} | {checks[died[0]]["group"]}
    assert set(REACHING_MM) <= groups
    # reached through another op: addmm's backward calls mm (named with its node), a compiled model, perf
    assert marked["ops.addmm.float32"]["data"]["backward_node"] == "AddmmBackward0"
    assert {"compile.eager", "perf.matmul", "ops.mm.float32"} <= set(marked)


def test_checks_that_never_reach_mm_still_pass(suite: tuple[str, int, dict[str, dict[str, Any]]]) -> None:
    _, _, checks = suite
    assert checks["ops.topk.float32"]["status"] == "passed"
    assert checks["runtime.rng_state"]["status"] == "passed"
    assert checks["runtime.memory_functions"]["status"] == "passed"


def test_an_op_reached_first_in_backward_is_named_and_blocked_for_the_forward_after(
        refdev_available: None, tmp_path: Path) -> None:
    # smoke's Linear calls addmm forward and mm only in its backward pass: the death there names aten::mm (the
    # device's backward pass is traced op by op), so ops.mm's forward after it is refused, not a second death
    _, report = run_probe(["--checks", "smoke,ops", "--timeout", "20"], tmp_path / "r.json", faults="crash:aten::mm")
    checks = by_id(report)
    assert _died(checks) == ["smoke.train_step"], _deaths(checks)
    assert checks["smoke.train_step"]["data"]["aten_op"] == "aten::mm"
    mm = checks["ops.mm.float32"]
    assert mm["status"] == "crashed" and mm["data"]["ran"] is False
    assert mm["data"]["blocked_in"] == "smoke.train_step"
    assert "it needs aten::mm, which crashed the worker earlier (in smoke.train_step)" in mm["detail"]
