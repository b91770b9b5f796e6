"""Wall time of the full probe suite on CPU, torch import included, as a user runs it.

Target: <= 30 s on 2 cores for ``--device cpu`` with every group (detect, smoke, ops, allocator, amp,
distributed).

Reproduce:

    .venv/bin/python benchmarks/bench_probe.py --repeat 3

Each run is a fresh ``python -I accelenv_probe.py --device cpu`` (the single-file bundle, as the service
serves it) from a temporary directory: process start, torch import in the runner's worker, every check,
report written. Prints each run, the median and the slowest, the check count, and the three slowest
checks of the last run. ``--device refdev`` times the same suite on the reference backend.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

TARGET_S = 30.0


def run_once(bundle: Path, device: str, workdir: Path) -> tuple[float, dict]:
    out = workdir / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON"))}
    env["ACCELENV_CONFIG_DIR"] = str(workdir / "config")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-I", str(bundle), "--device", device, "--quiet", "--output", str(out)],
                          cwd=workdir, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1) or not out.exists():
        raise SystemExit(f"probe failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    from probes.bundle import BUNDLE_NAME, write_bundle

    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp:
        workdir = Path(tmp)
        bundle = workdir / BUNDLE_NAME
        write_bundle(str(bundle))
        times = []
        report: dict = {}
        for i in range(args.repeat):
            elapsed, report = run_once(bundle, args.device, workdir)
            times.append(elapsed)
            print(f"run {i + 1}: {elapsed:.2f} s ({report['summary']['total']} checks, ok={report['summary']['ok']})")
    slowest_checks = sorted(report["checks"], key=lambda c: c["duration_s"], reverse=True)[:3]
    median = statistics.median(times)
    print(f"full suite on {args.device}, {os.cpu_count()} cores, torch {report['environment']['torch_version']}: "
          f"median {median:.2f} s, slowest {max(times):.2f} s (target <= {TARGET_S:.0f} s)")
    print("slowest checks: " + ", ".join(f"{c['id']} {c['duration_s']:.2f} s" for c in slowest_checks))
    print(json.dumps({"figure": "probe_full_suite_wall_s", "device": args.device, "median_s": round(median, 3),
                      "max_s": round(max(times), 3), "checks": report["summary"]["total"], "target_s": TARGET_S}))


if __name__ == "__main__":
    main()
