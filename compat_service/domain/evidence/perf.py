"""The perf figures a cell keeps: the headline of a report's ``perf`` block, and how the page shows them.

A report's perf group measures many figures (``probes.checks.perf``); a matrix cell keeps a few, from the
newest report that carried them (by ``created_at``): matmul throughput, element-wise bandwidth, host-to-device
bandwidth and whether pinning helps, launch latency and the models' step times, each beside the host CPU's
figure and, where the probe's peak table knew the device, the fraction of peak.
"""

from __future__ import annotations

import json

from compat_service.domain.evidence.report import PerfFigure, ProbeReport
from compat_service.domain.json_types import JsonObject

#: the figures a cell keeps, in the order the page lists them
HEADLINE = ("matmul.float32", "matmul.bfloat16", "matmul.float16", "elementwise.bandwidth", "copy.h2d.pageable",
            "copy.h2d.pinned", "copy.pinned_speedup", "latency.launch", "models.resnet.step",
            "models.transformer.step", "profile.sync_points")
_KEPT = ("name", "unit", "value", "cpu_value", "peak_fraction")


def headline(report: ProbeReport) -> list[JsonObject] | None:
    """The headline figures of ``report`` (None when it carries no perf block or none of them)."""
    if report.perf is None:
        return None
    by_name: dict[str, PerfFigure] = {f.name: f for f in report.perf.figures}
    kept = [{k: getattr(by_name[n], k) for k in _KEPT} for n in HEADLINE if n in by_name]
    return kept or None


def headline_json(report: ProbeReport) -> str | None:
    figures = headline(report)
    return json.dumps(figures, separators=(",", ":")) if figures else None


def parse(text: str | None) -> list[JsonObject] | None:
    """The stored headline (a column's JSON text), or None; a value that is not a list of figures is None."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, dict) for v in value) else None


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    if unit.endswith("/s"):
        for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {prefix}{unit}"
    if unit == "s":
        if abs(value) < 1e-3:
            return f"{value * 1e6:.3g} µs"
        if abs(value) < 1:
            return f"{value * 1e3:.3g} ms"
    if unit in ("ratio", "count"):
        return f"{value:.3g}" + ("×" if unit == "ratio" else "")
    return f"{value:.3g} {unit}"


def describe(figure: JsonObject) -> str:
    """'matmul.float32 12.3 TFLOP/s (cpu 98 GFLOP/s, 18% of peak)'"""
    unit = str(figure.get("unit") or "")
    text = f"{figure.get('name')} {_number(figure.get('value'), unit)}"
    extras = []
    if figure.get("cpu_value") is not None:
        extras.append(f"cpu {_number(figure['cpu_value'], unit)}")
    if figure.get("peak_fraction") is not None:
        extras.append(f"{100 * figure['peak_fraction']:.0f}% of peak")
    return text + (f" ({', '.join(extras)})" if extras else "")
