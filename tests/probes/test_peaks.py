"""The peak table behind the perf group's "fraction of peak": every row carries its source, its keys and units
are consistent, rows match the names torch reports without shadowing each other, and a figure the table does
not know (None) is reported without a fraction of peak.
"""

from __future__ import annotations

import json

import pytest

from probes.checks import peaks, perf
from tests.refdev.conftest import run_python

_TEXT_FIELDS = ("source", "url", "where", "sparsity", "checked")


@pytest.mark.parametrize("row", peaks.PEAKS, ids=lambda row: " ".join(row["match"]))
def test_every_row_names_its_source_and_keeps_units(row: dict) -> None:
    assert set(row) == {"match", "flops", "memory_bw", *_TEXT_FIELDS}
    assert row["match"] and all(isinstance(w, str) and w.strip() == w and w for w in row["match"])
    for field in _TEXT_FIELDS:
        assert isinstance(row[field], str) and len(row[field].strip()) >= 4, (field, row[field])
    assert all(part.strip().startswith("https://") for part in row["url"].split(";")), row["url"]
    # one key per dtype the perf group's matmul measures; FLOP/s and bytes/s, not TFLOPS or TB/s
    assert tuple(row["flops"]) == peaks.DTYPES
    for dtype, value in row["flops"].items():
        assert value is None or (isinstance(value, float) and 1e12 <= value <= 1e16), (dtype, value)
    assert row["memory_bw"] is None or (isinstance(row["memory_bw"], float) and 1e10 <= row["memory_bw"] <= 1e14)
    # a dense half-precision tensor figure is never below the plain FP32 one
    fp32 = row["flops"]["float32"]
    for half in ("float16", "bfloat16"):
        if fp32 is not None and row["flops"][half] is not None:
            assert row["flops"][half] >= fp32, (half, row["flops"])
    # a row that stores nothing must say why (unknown is recorded, not silently empty)
    if all(v is None for v in [*row["flops"].values(), row["memory_bw"]]):
        assert "not confirmed" in row["sparsity"]


def test_rows_are_unique_and_none_is_shadowed_by_an_earlier_one() -> None:
    matches = [row["match"] for row in peaks.PEAKS]
    assert len(set(matches)) == len(matches)
    for row in peaks.PEAKS:
        name = "Vendor " + " ".join(row["match"]) + " 99GB"
        assert peaks.lookup(name)["row"] == " ".join(row["match"]), name


@pytest.mark.parametrize(("torch_name", "row"), [
    ("NVIDIA H200", "H200"),
    ("NVIDIA H200 NVL", "H200 NVL"),
    ("NVIDIA H100 80GB HBM3", "H100 HBM3"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    ("NVIDIA A100-SXM4-40GB", "A100"),
    ("NVIDIA A100-PCIE-40GB", "A100"),
    ("NVIDIA L4", "L4"),
    ("Tesla T4", "T4"),
    ("AMD Instinct MI300X", "MI300X"),
    ("Ascend910A", "Ascend910A"),
    ("Ascend910B2", "Ascend910B2"),
    ("Ascend910ProA", None),
    ("NVIDIA L40S", None),
    ("NVIDIA GeForce RTX 4090", None),
    ("", None),
])
def test_lookup_maps_the_names_torch_reports(torch_name: str, row: str | None) -> None:
    found = peaks.lookup(torch_name)
    assert (found and found["row"]) == (row or found)
    if found:
        assert found["source"].count("https://") >= 1 and set(found["flops"]) == set(peaks.DTYPES)


def test_ascend_rows_store_only_what_a_source_states() -> None:
    launch = peaks.lookup("Ascend910A")
    assert launch is not None and launch["flops"] == {"float32": None, "float16": 256e12, "bfloat16": None}
    assert launch["memory_bw"] is None and "hotchips.org" in launch["source"]
    for variant in ("Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4"):
        row = peaks.lookup(variant)
        assert row is not None and set(row["flops"].values()) == {None} and row["memory_bw"] is None
        assert "publishes no per-chip peak" in row["source"]


def test_stored_tensor_figures_are_dense() -> None:
    # the Hopper and Ada datasheets print tensor figures with sparsity: the rows that say so store half
    for row in peaks.PEAKS:
        if "printed / 2" in row["sparsity"]:
            for half in ("float16", "bfloat16"):
                value = row["flops"][half]
                assert value is not None and ("%g" % (value * 2 / 1e12)) in row["where"].replace(",", ""), row


def test_unknown_peak_gives_no_fraction() -> None:
    t4 = peaks.lookup("Tesla T4")
    assert t4 is not None and t4["flops"]["bfloat16"] is None  # Turing: no BF16 tensor cores, no figure
    known = perf._figure("matmul.float16", "FLOP/s", 13e12, 1e11, t4["flops"]["float16"])
    unknown = perf._figure("matmul.bfloat16", "FLOP/s", 2e12, 1e11, t4["flops"]["bfloat16"])
    assert known["peak_fraction"] == pytest.approx(13e12 / 65e12)
    assert "peak_fraction" not in unknown and unknown["value"] == 2e12


def test_perf_on_a_device_named_like_a_t4_reports_fractions_only_where_the_peak_is_known() -> None:
    """The real perf checks on refdev, with refdev's reported name set to a row that lacks a BF16 figure."""
    from probes.refdev import availability

    ok, reason = availability()
    if not ok:
        pytest.skip(reason)
    proc = run_python("""
        import json, torch
        import probes.refdev as refdev
        refdev.install()
        from probes.refdev import device_module
        device_module.DEVICE_NAME = "Tesla T4"
        from probes.checks import perf
        from probes.checks.context import ProbeContext
        ctx = ProbeContext(torch, torch.device("refdev"))
        out = {}
        for check in (perf.matmul, perf.elementwise):
            result = check(ctx)
            out.update({f["name"]: f for f in result.data["figures"]})
            out["_source"] = result.data.get("peak_source")
        print(json.dumps(out))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "T4" in figures.pop("_source")
    assert figures["matmul.float32"]["peak_fraction"] == pytest.approx(figures["matmul.float32"]["value"] / 8.1e12)
    assert figures["elementwise.bandwidth"]["peak_fraction"] > 0
    assert figures["matmul.float16"]["peak_fraction"] == pytest.approx(figures["matmul.float16"]["value"] / 65e12)
    # refdev holds bfloat16, so it is measured; the T4 row has no BF16 peak, so it has no fraction
    assert figures["matmul.bfloat16"]["value"] > 0 and "peak_fraction" not in figures["matmul.bfloat16"]
