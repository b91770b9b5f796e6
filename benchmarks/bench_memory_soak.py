"""Memory soak of one service worker under what anyone (or one report token) can send (issue 24).

Reproduce (from the repository root):

    .venv/bin/python benchmarks/bench_memory_soak.py                      # the full soak
    .venv/bin/python benchmarks/bench_memory_soak.py --resolve 4000 --matrix 4000 --observed 2000   # smaller

Starts a real uvicorn (one worker, GC tuning on as deployed, the matrix loaded) on a fresh SQLite file on
loopback, warms it (a few of each request), then reads the worker's RSS (``/proc/PID/status`` VmRSS) before
and after each phase:

1. ``--observed`` observed cells from ONE report token: reports for made-up torch versions and builds, sent
   in NDJSON-free JSON batches of 100 (``POST /v1/reports/batch``), then ``/matrix`` loaded;
2. ``--resolve`` distinct ``GET /v1/resolve`` queries (a quarter of them unsatisfiable: 409s, whose cached
   errors used to leave reference cycles behind);
3. ``--matrix`` distinct ``/matrix`` URLs (made-up ``torch``/``build`` squares, made-up filters, and the
   real filter combinations).

Prints one JSON object: RSS in MB before and after each phase, the growth over the whole soak (after
warm-up) and whether it is within the goal (≤ 50 MB per worker). Every request goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tests.evidence.live_server import live_server
from tests.synthetic_reports import synthetic_report

GOAL_MB = 50.0
THREADS = 4


def _worker_pid(server_pid: int) -> int:
    """The uvicorn worker (a child of the supervisor), or the server itself when it runs in-process."""
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children")
    try:
        kids = [int(p) for p in children.read_text().split()]
    except OSError:
        kids = []
    return kids[0] if kids else server_pid


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _run(base: str, paths: list[str], statuses: dict[int, int]) -> None:
    def chunk(part: list[str]) -> dict[int, int]:
        seen: dict[int, int] = {}
        with httpx.Client(base_url=base, timeout=60) as client:
            for path in part:
                status = client.get(path).status_code
                seen[status] = seen.get(status, 0) + 1
        return seen

    parts = [paths[i::THREADS] for i in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        for seen in pool.map(chunk, parts):
            for status, count in seen.items():
                statuses[status] = statuses.get(status, 0) + count


def resolve_paths(count: int) -> list[str]:
    out = []
    for n in range(count):
        if n % 4 == 3:  # unsatisfiable: a Python no release supports (409, cached as an error)
            out.append(f"/v1/resolve?torch=2.13&python=3.{20 + n % 60}&driver={400 + n // 60}.{n % 60}")
        else:
            out.append(f"/v1/resolve?torch=2.13&backend=cuda&driver={525 + n % 200}.{n // 200}.{n % 7}&python=3.12")
    return out


def matrix_paths(count: int) -> list[str]:
    real = ["", "?family=cuda", "?platform=linux-x86_64", "?python=3.12", "?status=declared",
            "?family=cuda&platform=linux-aarch64&python=3.11"]
    out = []
    for n in range(count):
        kind = n % 4
        if kind == 0:
            out.append(f"/matrix?torch=junk{n}&build=cpu")
        elif kind == 1:
            out.append(f"/matrix?torch=2.13.0&build=junk{n}")
        elif kind == 2:
            out.append(f"/matrix?python=3.{100 + n}&family=fam{n}")
        else:
            out.append("/matrix" + real[n % len(real)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolve", type=int, default=20_000)
    parser.add_argument("--matrix", type=int, default=20_000)
    parser.add_argument("--observed", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'soak.sqlite3'}"
        env = {"ACCELENV_ACCESS_LOG": "false", "ACCELENV_MATRIX_REFRESH_S": "0"}
        with live_server(url, workers=1, load_matrix=True, env=env) as server:
            pid = _worker_pid(server.process.pid)  # type: ignore[union-attr]
            statuses: dict[int, int] = {}
            _run(server.base_url, resolve_paths(200) + matrix_paths(200), statuses)  # warm-up
            figures: dict[str, object] = {"worker_pid": pid, "rss_mb": {"after_warm_up": round(rss_mb(pid), 1)}}
            rss = figures["rss_mb"]
            started = time.monotonic()
            with httpx.Client(base_url=server.base_url, timeout=120, headers=server.auth) as client:
                for start in range(0, args.observed, 100):
                    batch = [synthetic_report(host=str(n), torch=f"7.{n}.0+junk", build=f"junk{n % 97}")
                             for n in range(start, min(start + 100, args.observed))]
                    res = client.post("/v1/reports/batch", json=batch)
                    res.raise_for_status()
                client.get("/matrix").raise_for_status()
            rss["after_observed"] = round(rss_mb(pid), 1)  # type: ignore[index]
            _run(server.base_url, resolve_paths(args.resolve), statuses)
            rss["after_resolve"] = round(rss_mb(pid), 1)  # type: ignore[index]
            _run(server.base_url, matrix_paths(args.matrix), statuses)
            rss["after_matrix"] = round(rss_mb(pid), 1)  # type: ignore[index]
            growth = rss["after_matrix"] - rss["after_warm_up"]  # type: ignore[index]
            figures.update({
                "requests": {"observed_cells": args.observed, "resolve": args.resolve, "matrix": args.matrix},
                "statuses": dict(sorted(statuses.items())),
                "seconds": round(time.monotonic() - started, 1),
                "growth_mb": round(growth, 1),
                "goal_mb": GOAL_MB,
                "within_goal": growth <= GOAL_MB,
            })
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
