"""The opinfo group on CPU over a bounded op list (ACCELENV_PROBE_OPINFO_OPS, set in tests/conftest.py).

CPU against CPU proves the harness: every declared dtype is compared, the artefacts OpInfo itself skips or
that return uninitialised memory are skipped with the reason, the summary counts op x dtype pairs, and the
group says why it cannot run where numpy or expecttest is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from probes.checks import opinfo
from tests.conftest import TEST_OPINFO_OPS
from tests.probes.conftest import ProbeRun, quiet_torch, run_probe, validate_report

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def opinfo_run(tmp_path_factory: pytest.TempPathFactory) -> ProbeRun:
    return run_probe(tmp_path_factory.mktemp("opinfo"), "--device", "cpu", "--checks", "opinfo")


def test_every_bounded_op_is_one_check_and_the_report_is_valid(opinfo_run: ProbeRun) -> None:
    assert opinfo_run.returncode == 0, opinfo_run.stderr[-3000:]
    validate_report(opinfo_run.report)
    names = {c["data"].get("opinfo") for c in opinfo_run.report["checks"] if c["id"] != "opinfo.summary"}
    for pattern in TEST_OPINFO_OPS.split(","):
        assert pattern in names, pattern


@pytest.mark.parametrize(("op", "dtypes"), [
    pytest.param("add", {"float32", "float64", "float16", "bfloat16", "complex64", "int64", "int32", "uint8", "bool"},
                 id="add-every-dtype"),
    pytest.param("mm", {"float32", "float64", "float16", "bfloat16", "complex64", "int64", "int32", "uint8"}, id="mm"),
    pytest.param("sgn", {"float32", "complex64", "bool"}, id="sgn-real-gradient-is-a-zero-tensor"),
])
def test_ops_match_cpu_in_every_declared_dtype(opinfo_run: ProbeRun, op: str, dtypes: set[str]) -> None:
    check = opinfo_run.check(f"opinfo.{op}")
    assert check["status"] == "passed", check
    assert dtypes <= set(check["data"]["dtypes"]), check["data"]["dtypes"]
    assert set(check["data"]["dtypes"].values()) == {"passed"}
    assert "proves the harness" in check["detail"]


def test_out_and_inplace_variants_run_where_opinfo_lists_them(opinfo_run: ProbeRun) -> None:
    variants = opinfo_run.check("opinfo.add")["data"]["variants"]
    assert variants["out"]["float32"] == "passed" and variants["inplace"]["float32"] == "passed"


@pytest.mark.parametrize(("op", "reason"), [
    pytest.param("empty", "uninitialised memory", id="uninitialised"),
    pytest.param("bernoulli", "OpInfo skips test_compare_cpu for this op", id="random"),
])
def test_harness_artefacts_are_skipped_with_the_reason(opinfo_run: ProbeRun, op: str, reason: str) -> None:
    check = opinfo_run.check(f"opinfo.{op}")
    assert check["status"] == "skipped"
    assert reason in check["detail"]


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory: pytest.TempPathFactory) -> ProbeRun:
    return run_probe(tmp_path_factory.mktemp("opinfo-deep"), "--device", "cpu", "--checks", "opinfo", "--deep",
                     "--opinfo-ops", "istft,where")


def test_deep_gradients_are_taken_with_respect_to_the_same_leaves_on_both_sides(deep_run: ProbeRun) -> None:
    # istft's window[:8] is made under no_grad as a view of another sample's window: as made it has no grad
    # accumulator (its gradient is None), while the device's copy is a leaf with a gradient. Both runs now
    # take fresh leaves, so the backward comparison compares two window gradients.
    assert deep_run.returncode == 0, deep_run.stderr[-3000:]
    check = deep_run.check("opinfo.istft")
    assert check["status"] == "passed", check
    assert check["data"]["dtypes"] == {"complex64": "passed"}
    assert check["data"]["samples_run"] == 10  # every sample, the two windowed ones included


def test_deep_runs_the_reference_inputs_test_compare_cpu_runs(deep_run: ProbeRun) -> None:
    # where's sample_inputs give 6 per dtype; its reference_inputs add extremal, non-contiguous and broadcast ones
    check = deep_run.check("opinfo.where")
    assert check["status"] == "passed", check
    assert check["data"]["inputs"] == "reference_inputs"
    compared = [d for d, s in check["data"]["dtypes"].items() if s != "skipped"]
    assert check["data"]["samples_run"] > 6 * len(compared), check["data"]


class _Sample:
    """The part of OpInfo's SampleInput the harness uses (the real one needs torch's test-suite imports)."""

    def __init__(self, input: Any, *args: Any) -> None:
        self.input, self.args = input, args
        self.kwargs: dict[str, Any] = {}

    def transform(self, fn: Any) -> _Sample:
        return _Sample(fn(self.input), *[fn(a) for a in self.args])

    @staticmethod
    def output_process_fn_grad(out: Any) -> Any:
        return out


def test_the_device_inputs_are_copied_before_the_cpu_run() -> None:
    torch = quiet_torch()

    def writes_its_input(x: Any) -> Any:
        return x.add_(1.0).clone()

    sample = _Sample(torch.zeros(4))
    verdict = opinfo.run_sample(torch, writes_its_input, sample, "cpu", opinfo.DEFAULT_TOLERANCE, False)
    assert verdict.status == "passed", verdict.why  # the device got zeros as CPU did, not CPU's ones


def test_summary_counts_op_dtype_pairs(opinfo_run: ProbeRun) -> None:
    summary = opinfo_run.report["summary"]["groups"]["opinfo"]  # part of the report, not a check
    ops = [c for c in opinfo_run.report["checks"] if c["group"] == "opinfo"]
    assert "opinfo.summary" not in {c["id"] for c in ops}
    assert summary["status"] == "passed"
    assert summary["ops"] == len(ops)
    assert summary["op_dtypes_checked"] == sum(
        sum(1 for s in c["data"].get("dtypes", {}).values() if s != "skipped") for c in ops)
    assert summary["missing_aten_ops"] == []
    # the default mode runs backward in one dtype: the others say "forward only", never a silent pass
    forward_only = [c for c in ops if c["data"].get("forward_only")]
    assert summary["forward_only"] == sum(len(c["data"]["forward_only"]) for c in forward_only)
    for check in forward_only:
        for dtype in check["data"]["forward_only"]:
            assert f"{dtype} (forward only)" in check["detail"]


def test_summary_deduplicates_missing_ops_across_ops() -> None:
    entries = [
        {"id": "opinfo.a", "group": "opinfo", "status": "unsupported",
         "data": {"opinfo": "a", "dtypes": {"float32": "unsupported"}, "missing_aten_ops": ["aten::mm.out"]}},
        {"id": "opinfo.b", "group": "opinfo", "status": "unsupported",
         "data": {"opinfo": "b", "dtypes": {"float32": "unsupported", "int64": "passed"},
                  "missing_aten_ops": ["aten::mm.out"]}},
        {"id": "opinfo.c", "group": "opinfo", "status": "timeout", "data": {"aten_op": "aten::sort.default"}},
    ]
    summary = opinfo.group_summary(entries)
    assert summary["status"] == "failed"
    assert summary["missing_aten_ops"] == ["aten::mm.out"]  # a hang is not a missing op
    assert summary["missing_by_op"] == {"aten::mm.out": ["a", "b"]}
    assert summary["op_dtypes_checked"] == 3 and summary["not_ok"] == ["opinfo.c"]


def test_summary_of_a_run_that_compared_nothing_is_not_passed() -> None:
    """The stub: no device, so the group's only entry is a skip; the summary must not say passed."""
    entries = [{"id": "opinfo.device_unavailable", "group": "opinfo", "status": "skipped",
                "detail": "not run: no cuda device is visible", "data": {}}]
    summary = opinfo.group_summary(entries)
    assert summary["status"] == "not_run" and summary["op_dtypes_checked"] == 0
    assert summary["detail"] == "nothing was compared with CPU: not run: no cuda device is visible"


def test_without_numpy_the_group_is_skipped_and_the_curated_ops_still_run(tmp_path: Path) -> None:
    blocker = tmp_path / "block"
    blocker.mkdir()
    # None in sys.modules: `import numpy` raises ImportError and find_spec says absent, as without numpy
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['numpy'] = None\n")
    run = run_probe(tmp_path, "--device", "cpu", "--checks", "ops,opinfo",
                    env={"PYTHONPATH": str(blocker)})
    assert run.returncode == 0, run.stderr[-3000:]
    skipped = run.check("opinfo.unavailable")
    assert skipped["status"] == "skipped"
    assert "numpy" in skipped["detail"] and "curated ops group still ran" in skipped["detail"]
    assert run.check("ops.mm.float32")["status"] == "passed"
