"""Time to load and fully validate the bundled matrix_data (`load_matrix_data()`), and its import cost.

Target: load + validate well under 100 ms (it sits on the start-up path of `accelenv matrix`/`db load`).

Reproduce:

    .venv/bin/python benchmarks/bench_matrix_load.py --repeat 50

Prints the median and best of --repeat in-process loads (YAML parse with libyaml, pydantic validation, every
cross-file rule), the median of the YAML parse alone, and the cold import time of the loader measured in
fresh interpreters.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def _cold_import_ms(runs: int) -> float:
    code = (
        "import time; t=time.perf_counter(); import compat_service.domain.matrix.loading.loader; "
        "print((time.perf_counter()-t)*1000)"
    )
    samples = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    import yaml

    from compat_service.domain.matrix.loading.loader import _StrictLoader, load_matrix_data
    from compat_service.domain.matrix.model.schema import MATRIX_FILES
    from matrix_data import DATA_DIR

    load_matrix_data()  # warm caches (pydantic validators, file system)
    loads, parses = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        load_matrix_data()
        loads.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        for name in MATRIX_FILES:
            yaml.load((DATA_DIR / name).read_text(encoding="utf-8"), Loader=_StrictLoader)
        parses.append((time.perf_counter() - t) * 1000)
    print(f"libyaml: {yaml.__with_libyaml__}")
    print(
        f"load_matrix_data(): median {statistics.median(loads):.1f} ms, "
        f"best {min(loads):.1f} ms ({args.repeat} runs)"
    )
    print(f"  of which YAML parse: median {statistics.median(parses):.1f} ms")
    print(f"cold import of matrix.loader: median {_cold_import_ms(5):.0f} ms (5 fresh interpreters)")


if __name__ == "__main__":
    main()
