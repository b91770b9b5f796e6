"""Wall time of the default probe suite (every group, the whole OpInfo list) on CPU and on refdev, and of
``--deep``, against ``python -m torch.utils.collect_env`` measured in the same run.

Target: <= 60 s on 2 cores for the default suite (models and perf included), and <= 35x collect_env measured in
the same run (printed as ``x_collect_env``), torch import and the compile group included (a cold inductor
cache: each run gets an empty ``TORCHINDUCTOR_CACHE_DIR``, as on a fresh host).

Each report is kept (``--keep DIR``, default ``benchmarks/out/``), and the ids of the checks that did not
pass (failed, timeout, crashed, error, and unsupported in the required smoke and models groups) are printed,
so a failure seen once leaves a trace. The perf group's figures are printed too, with the source of the peak
figures their fractions use (a row of ``probes/checks/peaks.py``: vendor datasheet, URL, table), or a line
saying that no row matches the device (CPU, refdev), so no fraction of peak is given.

Reproduce:

    .venv/bin/python benchmarks/bench_probe.py                       # cpu and refdev, default suite
    .venv/bin/python benchmarks/bench_probe.py --deep --devices cpu   # adds --deep (minutes)

Each run is a fresh ``python -I accelenv_probe.py`` (the single-file bundle, as the service serves it) from
a temporary directory. Prints the load average around each run (the machine may be shared), the check
count, the OpInfo ops x dtypes compared, the slowest checks, and one JSON line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

TARGET_S = 60.0
TARGET_X_COLLECT_ENV = 35.0  # the default CPU suite, models and perf included, against collect_env in the same run
DEFAULT_KEEP = REPO_ROOT / "benchmarks" / "out"


def _env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON", "TORCHINDUCTOR_"))}
    env["ACCELENV_CONFIG_DIR"] = str(workdir / "config")
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-", dir=workdir)  # cold, every run
    return env


def timed(argv: list[str], workdir: Path) -> tuple[float, subprocess.CompletedProcess[str], tuple[float, float]]:
    before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=workdir, env=_env(workdir), capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    return elapsed, proc, (before, os.getloadavg()[0])


def probe(bundle: Path, device: str, workdir: Path, extra: list[str], keep: Path, collect_env_s: float) -> dict:
    out = keep / f"report-{device}{'-'.join([''] + [e.strip('-') for e in extra])}.json"
    elapsed, proc, load = timed([sys.executable, "-I", str(bundle), "--device", device, "--quiet", "--output", str(out),
                                 *extra], workdir)
    if proc.returncode not in (0, 1, 3) or not out.exists():
        raise SystemExit(f"probe failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    report = json.loads(out.read_text())
    from probes.checks.registry import is_failing
    from probes.harness.report import render_figure

    summary: dict[str, Any] = (report["summary"].get("groups") or {}).get("opinfo") or {"detail": ""}
    slowest = sorted(report["checks"], key=lambda c: c["duration_s"], reverse=True)[:4]
    groups: dict[str, float] = {}
    for c in report["checks"]:
        groups[c["group"]] = groups.get(c["group"], 0.0) + c["duration_s"]
    label = " ".join([device] + extra)
    print(f"{label}: {elapsed:.1f} s wall (load avg {load[0]:.1f} -> {load[1]:.1f}), {report['summary']['total']} "
          f"checks, ok={report['summary']['ok']}, exit {proc.returncode}")
    print(f"  opinfo: {summary.get('ops')} OpInfos, {summary.get('op_dtypes_checked')} op x dtype "
          f"pairs; {summary['detail'][:300]}")
    not_ok = [f"{c['id']} ({c['status']})" for c in report["checks"] if is_failing(c["group"], c["status"])]
    print(f"  not ok ({len(not_ok)}): " + (", ".join(not_ok) or "none"))
    perf_figures = (report.get("perf") or {}).get("figures") or []
    for figure in perf_figures:
        print("  perf " + render_figure(figure))
    if perf_figures:  # where the fractions of peak come from (probes/checks/peaks.py, each row sourced)
        sources = {(c.get("data") or {}).get("peak_source") for c in report["checks"] if c["group"] == "perf"}
        print("  peaks: " + ("; ".join(sorted(s[:400] for s in sources if s))
                             or "no row of probes/checks/peaks.py matches this device: no fraction of peak"))
    coverage = report.get("coverage") or {}
    if coverage:
        print(f"  dispatcher coverage: {coverage['exercised']} of {coverage['backend_relevant']} backend-relevant "
              f"overloads ({100 * (coverage['fraction'] or 0):.1f}%), {len(coverage['missing'])} missing, "
              f"{len(coverage['fell_back'])} fell back")
    print(f"  {elapsed / collect_env_s:.1f}x collect_env (target <= {TARGET_X_COLLECT_ENV:.0f}x)")
    print(f"  report kept at {out}")
    print("  check time per group (s, workers overlap): " + ", ".join(f"{g} {t:.1f}" for g, t in groups.items()))
    print("  slowest: " + ", ".join(f"{c['id']} {c['duration_s']:.1f} s" for c in slowest))
    figure = {"figure": "probe_suite_wall_s", "device": device, "args": extra, "wall_s": round(elapsed, 2),
              "checks": report["summary"]["total"], "counts": report["summary"]["counts"],
              "opinfo_op_dtypes": summary.get("op_dtypes_checked"), "not_ok": not_ok, "report": str(out),
              "load_before": round(load[0], 2),
              "load_after": round(load[1], 2), "cores": os.cpu_count(), "target_s": TARGET_S,
              "x_collect_env": round(elapsed / collect_env_s, 1), "target_x_collect_env": TARGET_X_COLLECT_ENV,
              "coverage_exercised": coverage.get("exercised"), "coverage_relevant": coverage.get("backend_relevant")}
    print(json.dumps(figure))
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="cpu,refdev")
    parser.add_argument("--deep", action="store_true", help="also time --deep on each device")
    parser.add_argument("--keep", type=Path, default=DEFAULT_KEEP, help="folder the reports are kept in")
    args = parser.parse_args()
    args.keep.mkdir(parents=True, exist_ok=True)

    from probes.harness.bundle import BUNDLE_NAME, write_bundle

    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp:
        workdir = Path(tmp)
        bundle = workdir / BUNDLE_NAME
        write_bundle(str(bundle))
        elapsed, proc, load = timed([sys.executable, "-m", "torch.utils.collect_env"], workdir)
        print(f"python -m torch.utils.collect_env: {elapsed:.1f} s wall (load avg {load[0]:.1f} -> {load[1]:.1f}),"
              f" exit {proc.returncode}")
        print(json.dumps({"figure": "collect_env_wall_s", "wall_s": round(elapsed, 2), "load_before": round(load[0], 2),
                          "load_after": round(load[1], 2)}))
        for device in args.devices.split(","):
            probe(bundle, device, workdir, [], args.keep.resolve(), elapsed)
            if args.deep:
                probe(bundle, device, workdir, ["--deep"], args.keep.resolve(), elapsed)


if __name__ == "__main__":
    main()
