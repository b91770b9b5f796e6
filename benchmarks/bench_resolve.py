"""How fast `accelenv resolve` answers: CLI wall time against `python -c pass`, and in-process resolve time.

Reproduce (from the repository root, with the project's virtualenv):

    .venv/bin/python benchmarks/bench_resolve.py

Figures, all medians on the same machine in one run:
- `accelenv resolve --torch 2.3 --backend cu121 --python 3.10 --format json` (the installed console script,
  warm snapshot cache) against `python -c pass`; target: at most 4x (issues 10 and 12). The project's
  modules are byte-compiled first, as pip does for an installed package: an editable install under
  ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile every module on every run (~40 ms here).
- `accelenv resolve --with vllm --backend cuda --python 3.12 --format json` (a stack: the ecosystem
  catalog's compiled JSON, then the vLLM release and torch for it; warm caches) against `python -c pass`;
  target: at most 4x (issue 21). The number of ecosystem facts the catalog holds is printed with it.
- in-process `resolve()` over the full bundled matrix for a set of requests; target: <= 1 ms.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = 21
CLI = [
    str(Path(sys.executable).parent / "accelenv"),
    "resolve",
    "--torch",
    "2.3",
    "--backend",
    "cu121",
    "--python",
    "3.10",
    "--os",
    "linux",
    "--arch",
    "x86_64",
    "--format",
    "json",
]
STACK_CLI = [*CLI[:2], "--with", "vllm", "--backend", "cuda", "--python", "3.12", "--os", "linux", "--arch",
             "x86_64", "--format", "json"]
REQUESTS: list[dict[str, Any]] = [
    {"torch": "2.3", "backend": "cu121", "python": "3.10"},
    {"torch": "latest", "backend": "cuda", "python": "3.12", "gpu_arch": "sm_120", "driver": "575.57.08"},
    {"torch": ">=2.2,<2.9", "backend": "cuda", "python": "3.11", "gpu_arch": "sm_61"},
    {"torch": "2.12", "backend": "npu", "python": "3.11"},
]


def _walls(commands: list[list[str]], env: dict[str, str]) -> list[list[float]]:
    """Wall times of each command, runs interleaved so machine load hits all of them alike."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(RUNS):
        for i, cmd in enumerate(commands):
            start = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
            times[i].append(time.perf_counter() - start)
    return times


def main() -> None:
    import compileall
    import os

    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.resolver.stages import resolve

    root = Path(__file__).resolve().parent.parent
    for package in ("cli", "compat_service", "probes"):
        compileall.compile_dir(root / package, quiet=1)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ACCELENV_CACHE_DIR": cache}
        subprocess.run(CLI, env=env, stdout=subprocess.DEVNULL, check=True)  # writes the snapshot
        subprocess.run(STACK_CLI, env=env, stdout=subprocess.DEVNULL, check=True)  # and the ecosystem catalog
        base_runs, cli_runs, stack_runs = _walls([[sys.executable, "-c", "pass"], CLI, STACK_CLI], env)
    base, cli, stack = statistics.median(base_runs), statistics.median(cli_runs), statistics.median(stack_runs)
    print(f"python -c pass          median {base * 1000:7.1f} ms  min {min(base_runs) * 1000:7.1f} ms")
    print(f"accelenv resolve (json) median {cli * 1000:7.1f} ms  min {min(cli_runs) * 1000:7.1f} ms")
    print(f"ratio: median {cli / base:4.1f}x, min {min(cli_runs) / min(base_runs):4.1f}x  (target <= 4x)")
    from compat_service.domain.stacks.catalog import load_catalog

    facts = load_catalog().fact_count()
    print(f"accelenv resolve --with vllm median {stack * 1000:7.1f} ms  min {min(stack_runs) * 1000:7.1f} ms")
    print(f"ratio: median {stack / base:4.1f}x, min {min(stack_runs) / min(base_runs):4.1f}x  (target <= 4x; "
          f"{facts} ecosystem facts)")

    matrix = load_matrix_cached()
    for flags in REQUESTS:
        request = ResolveRequest.from_strings(**flags)
        times = []
        for _ in range(200):
            start = time.perf_counter()
            resolve(request, matrix)
            times.append(time.perf_counter() - start)
        label = " ".join(f"{k}={v}" for k, v in flags.items())
        print(f"resolve() {label:60s} median {statistics.median(times) * 1e3:6.3f} ms  (target <= 1 ms)")


if __name__ == "__main__":
    main()
