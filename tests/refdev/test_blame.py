"""Blame the kernel: a wrong kernel is named wherever its wrong result surfaces, not the op or model that consumed
it -- OpInfos whose backward or composite runs ``mm``, a model whose pooling is wrong, and a wrong type promotion
that surfaces as a later op's dtype error.

Each run is one real probe subprocess on refdev with faults injected, shared by the tests of its module.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.refdev.conftest import run_probe
from tests.refdev.test_probe_faults import by_id

# mm itself, a backward that runs mm (cholesky), a forward composite of it (cov), composites seen whole by the
# dispatch mode (linalg_pinv, linear.out) and a complex-valued backward (linalg.eig)
MM_CONSUMERS = "mm,cov,cholesky,linalg.pinv,nn.functional.linear,linalg.eig,add"

Run = tuple[Any, dict[str, Any]]


@pytest.fixture(scope="module")
def wrong_mm(tmp_path_factory: pytest.TempPathFactory, refdev_available: None) -> Run:
    out = tmp_path_factory.mktemp("wrong_mm") / "r.json"
    return run_probe(["--checks", "smoke,opinfo", "--opinfo-ops", MM_CONSUMERS], out, faults="wrong:aten::mm")


@pytest.fixture(scope="module")
def wrong_models(tmp_path_factory: pytest.TempPathFactory, refdev_available: None) -> Run:
    """resnet meets the wrong pooling first; the transformer (no pooling) meets the promoting add."""
    out = tmp_path_factory.mktemp("wrong_models") / "r.json"
    return run_probe(["--checks", "models"], out,
                     faults="wrong:aten::max_pool2d_with_indices,wrong:promotion:aten::add")


@pytest.fixture(scope="module")
def promoting_add(tmp_path_factory: pytest.TempPathFactory, refdev_available: None) -> Run:
    out = tmp_path_factory.mktemp("promoting_add") / "r.json"
    return run_probe(["--checks", "models"], out, faults="wrong:promotion:aten::add")


def test_every_opinfo_a_wrong_mm_fails_is_blamed_on_mm(wrong_mm: Run) -> None:
    proc, report = wrong_mm
    checks = by_id(report)
    failed = {cid: c for cid, c in checks.items() if c["status"] == "failed" and c["group"] == "opinfo"}
    # the pattern takes variants too (linalg.pinv.hermitian)
    assert {f"opinfo.{op}" for op in MM_CONSUMERS.split(",") if op != "add"} <= set(failed), sorted(failed)
    for cid, entry in failed.items():
        blamed = entry["data"]["blamed_op"]
        assert blamed in ("aten::mm", "aten::mm.out"), (cid, entry["detail"])
        assert f"the first op whose device result differs from CPU on the same inputs is {blamed}" in entry["detail"]
    assert checks["opinfo.add"]["status"] == "passed"
    # composites the dispatch mode sees whole are opened up: the mm inside them is named, and the composite too
    assert failed["opinfo.linalg.pinv"]["data"]["blamed_inside"].startswith("aten::linalg_pinv")
    summary = report["summary"]["groups"]["opinfo"]
    assert set(summary["blamed_ops"]) <= {"aten::mm", "aten::mm.out"}
    assert sum(len(v) for v in summary["blamed_ops"].values()) == len(failed)
    assert "first differing kernel: aten::mm" in summary["detail"]
    assert proc.returncode == 1


def test_smoke_training_that_diverges_from_cpu_names_mm(wrong_mm: Run) -> None:
    agreement = by_id(wrong_mm[1])["smoke.cpu_agreement"]
    assert agreement["status"] == "failed" and agreement["data"]["blamed_op"] == "aten::mm", agreement
    assert "device and CPU training diverge" in agreement["detail"]


def test_a_wrong_pooling_kernel_is_named_in_training_and_inference(wrong_models: Run) -> None:
    _, report = wrong_models
    checks = by_id(report)
    for cid in ("models.resnet.train.float32", "models.resnet.inference"):
        assert checks[cid]["status"] == "failed", checks[cid]
        assert checks[cid]["data"]["blamed_op"] == "aten::max_pool2d_with_indices", checks[cid]["detail"]
    # under inference_mode the mode sees the composite max_pool2d whole; the kernel inside it is the one named
    assert checks["models.resnet.inference"]["data"]["blamed_inside"] == "aten::max_pool2d"
    assert "inside aten::max_pool2d" in checks["models.resnet.inference"]["detail"]


def test_a_wrong_promotion_is_blamed_on_add_not_on_the_later_dtype_error(promoting_add: Run,
                                                                          wrong_models: Run) -> None:
    checks = by_id(promoting_add[1])
    for cid in ("models.resnet.train.float32", "models.resnet.inference"):
        entry = checks[cid]
        assert entry["status"] == "failed", entry
        assert "mat1 and mat2 must have the same dtype" in entry["detail"]  # what the device raised, kept
        assert entry["data"]["blamed_op"] == "aten::add.Tensor", entry["detail"]
        assert "dtype torch.float64, CPU torch.float32" in entry["data"]["blamed_why"]
    transformer = by_id(wrong_models[1])["models.transformer.train.float32"]
    assert transformer["status"] == "failed" and transformer["data"]["blamed_op"] == "aten::add.Tensor", transformer
