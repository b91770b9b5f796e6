"""refdev's cost: per-op overhead against CPU, and the time of the full probe suite on refdev.

Reproduce (2-core CI box, one thread per op, medians of --repeat runs):

    .venv/bin/python benchmarks/bench_refdev.py
    .venv/bin/python benchmarks/bench_refdev.py --repeat 5 --skip-suite   # per-op figures only

Per-op: ``a + a`` (a new tensor: the allocator path) and ``a.add_(zero)`` (in place) on 64x64 float32,
``a @ a`` on 64x64, and one training step of an MLP 16-32-4 (batch 64, cross-entropy, AdamW) -- each timed
on CPU and on refdev in this process (CPU ops are unaffected by the install). Suite: wall time of
``python -m probes --device refdev`` in a fresh process (install included), the way the CLI runs it.
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
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def median_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    fn()  # warm up: first calls import and cache
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(runs)


def per_op(repeat: int) -> dict[str, dict[str, float]]:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    sys.path.insert(0, str(REPO_ROOT))
    import probes.refdev

    start = time.perf_counter()
    probes.refdev.install()
    install_s = time.perf_counter() - start

    def cases(device: str) -> dict[str, Callable[[], object]]:
        torch.manual_seed(0)
        a = torch.randn(64, 64, device=device)
        layers = (torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        model = torch.nn.Sequential(*layers).to(device)
        opt = torch.optim.AdamW(model.parameters())
        x = torch.randn(64, 16, device=device)
        y = torch.randint(0, 4, (64,), device=device)

        def step() -> None:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        zero = torch.zeros(64, 64, device=device)
        return {"add": lambda: a + a, "add_": lambda: a.add_(zero), "mm": lambda: a @ a,
                "mlp_train_step": step}

    numbers = {"add": 2000, "add_": 1000, "mm": 1000, "mlp_train_step": 50}
    out: dict[str, dict[str, float]] = {"install_s": {"refdev": round(install_s, 3)}}
    cpu, dev = cases("cpu"), cases("refdev")
    for name, n in numbers.items():
        c = median_us(cpu[name], n, repeat)
        d = median_us(dev[name], n, repeat)
        out[name] = {"cpu_us": round(c, 1), "refdev_us": round(d, 1), "overhead_us": round(d - c, 1),
                     "ratio": round(d / c, 1)}
    return out


def suite(repeat: int) -> dict[str, object]:
    """Wall time of the whole probe suite on refdev, each run in a fresh interpreter."""
    times, summary = [], None
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        for _ in range(repeat):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "probes", "--device", "refdev", "--output", str(report)],
                cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
                env={**os.environ, "PYTHONWARNINGS": "ignore::UserWarning"},
            )
            times.append(time.perf_counter() - start)
            if not report.exists():
                why = f"the probe suite wrote no report (rc {proc.returncode}): {proc.stderr[-500:]}"
                return {"error": why}
            data = json.loads(report.read_text())
            summary = data["summary"]
    return {"median_s": round(statistics.median(times), 2), "runs_s": [round(t, 2) for t in times],
            "checks": summary["total"] if summary else None, "counts": summary["counts"] if summary else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--suite-repeat", type=int, default=3)
    parser.add_argument("--skip-suite", action="store_true")
    args = parser.parse_args()
    result: dict[str, object] = {}
    if not args.skip_suite:
        result["probe_suite"] = suite(args.suite_repeat)  # first: per_op installs refdev in this process
    result["per_op"] = per_op(args.repeat)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
