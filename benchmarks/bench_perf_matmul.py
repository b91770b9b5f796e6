"""Does the probe's CPU matmul figure mean what it says? ``accelenv-probe --device cpu --checks perf`` run
``--runs`` times, each followed by an independent timing of the same matmul in a fresh process, with
``torch.utils.benchmark.Timer.blocked_autorange`` (PyTorch's own benchmarking tool: its own warm-up, its own
block sizes, the median of its blocks) at the n and thread count the figure reports.

Target (issue 33): every run's ``matmul.float32`` within 0.7-1.3x the independent timing. The machine may be
shared; the load average before and after each pair is printed beside it, and the probe's own ``cpu_share``
(the share of the wall time its busy threads ran, probes/checks/perf.py): a figure taken with under 0.75 of it is
marked ``valid: false`` by the probe itself, and a run like that says the host was shared, not that the
figure is wrong.

Reproduce:

    .venv/bin/python benchmarks/bench_perf_matmul.py            # 5 runs
    .venv/bin/python benchmarks/bench_perf_matmul.py --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LOW, HIGH = 0.7, 1.3

INDEPENDENT = r"""
import json, sys, torch
from torch.utils.benchmark import Timer
n, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
gen = torch.Generator().manual_seed(0)
a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
m = Timer("torch.mm(a, b)", globals={"torch": torch, "a": a, "b": b}, num_threads=threads).blocked_autorange(
    min_run_time=1.0)
print(json.dumps({"flops": 2.0 * n ** 3 / m.median, "median_s": m.median, "iqr_s": m.iqr}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


def probe_figure(workdir: Path) -> dict:
    out = workdir / "perf.json"
    subprocess.run([sys.executable, "-m", "probes", "--device", "cpu", "--checks", "perf", "--quiet", "--output",
                    str(out)], cwd=REPO_ROOT, env=_env(), check=False, capture_output=True, text=True)
    report = json.loads(out.read_text())
    figure = next(f for f in report["perf"]["figures"] if f["name"] == "matmul.float32")
    check = next(c for c in report["checks"] if c["id"] == "perf.matmul")
    figure["n"] = check["data"]["n"][0]
    return figure


def independent(n: int, threads: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", INDEPENDENT, str(n), str(threads)], env=_env(), check=True,
                          capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    inside = 0
    untrusted = 0
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(1, args.runs + 1):
            load_before = os.getloadavg()[0]
            figure = probe_figure(Path(tmp))
            other = independent(figure["n"], figure["threads"])
            load_after = os.getloadavg()[0]
            ratio = figure["value"] / other["flops"]
            ok = LOW <= ratio <= HIGH
            inside += ok
            untrusted += figure.get("valid") is False
            print(json.dumps({"run": run, "probe_gflops": round(figure["value"] / 1e9, 2),
                              "probe_spread": figure.get("spread"), "probe_valid": figure.get("valid"),
                              "probe_cpu_share": figure.get("cpu_share"),
                              "independent_gflops": round(other["flops"] / 1e9, 2), "ratio": round(ratio, 3),
                              "within": ok, "n": figure["n"], "threads": figure["threads"],
                              "load_1m": [round(load_before, 2), round(load_after, 2)]}))
    print(f"{inside} of {args.runs} runs within {LOW}-{HIGH}x of the independent timing")
    if untrusted:
        print(f"{untrusted} of {args.runs} figures the probe itself marked not to be trusted (valid: false, with the "
              "reason in the report): on a shared host the target is not measurable; rerun on a quiet one")
    return 0 if inside == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
