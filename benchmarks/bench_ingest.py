"""Sustained report ingest (reports/second) through the real HTTP API on loopback, SQLite and PostgreSQL.

Targets: >= 300 reports/s on SQLite, >= 1000 reports/s on PostgreSQL.

Reproduce (PostgreSQL needs ACCELENV_TEST_POSTGRES_URL, a server where databases may be created):

    ACCELENV_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        .venv/bin/python benchmarks/bench_ingest.py --seconds 15

A real uvicorn with ``--workers`` processes serves a fresh database; ``--client-procs`` processes with
``--threads`` keep-alive connections each post distinct variations (new report_id, one of 50 host
fingerprints) of one real probe report (``accelenv probe --device cpu``, or ``--report FILE``) for
``--seconds``. Every response must be 201; the figure is created reports / wall time, after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

WARMUP_S = 2.0
HOSTS = 50


def _probe_report() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "cli.main", "probe", "--device", "cpu", "--output", str(out)]
        subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, timeout=300)
        if not out.is_file():
            sys.exit("could not produce a probe report with `accelenv probe --device cpu`; pass --report FILE")
        return json.loads(out.read_text())


def _template(report: dict) -> str:
    """The report as JSON with placeholders, so a variation costs two string replacements, not a dump."""
    report = json.loads(json.dumps(report))
    report["report_id"] = "@RID@"
    report["environment"]["host_fingerprint"] = "@HOST@"
    return json.dumps(report)


def _body(template: str, seed: int, i: int) -> bytes:
    rid = str(uuid.UUID(int=(seed << 64) | i, version=4))
    host = f"bench-host-{(seed + i) % HOSTS}".ljust(16, "0")
    return template.replace("@RID@", rid).replace("@HOST@", host).encode()


def _client(base_url: str, token: str, report: dict, seed: int, threads: int, seconds: float, queue: mp.Queue) -> None:
    import threading

    import httpx

    start_at = time.monotonic()
    counts = [(0, 0, 0)] * threads  # (warm-up done, counted, errors)

    def run(t: int) -> None:
        template = _template(report)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        counted = errors = 0
        with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
            i = 0
            while (now := time.monotonic() - start_at) <= WARMUP_S + seconds:
                i += 1
                status = client.post("/v1/reports", content=_body(template, seed * 1000 + t, i)).status_code
                if status != 201:
                    errors += 1
                elif now >= WARMUP_S:
                    counted += 1
        counts[t] = (1, counted, errors)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    queue.put((sum(c[1] for c in counts), sum(c[2] for c in counts)))


def bench(database_url: str, report: dict, *, workers: int, procs: int, threads: int, seconds: float) -> float:
    from tests.evidence.live_server import live_server

    with live_server(database_url, workers=workers) as server:
        queue: mp.Queue = mp.Queue()
        clients = [
            mp.Process(target=_client, args=(server.base_url, server.token, report, p, threads, seconds, queue))
            for p in range(procs)
        ]
        for c in clients:
            c.start()
        results = [queue.get() for _ in clients]
        for c in clients:
            c.join()
    created = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    if errors:
        print(f"  {errors} responses were not 201", file=sys.stderr)
    return created / seconds


def _postgres_database(base: str) -> tuple[str, object]:
    import sqlalchemy as sa

    name = f"accelenv_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()

    return sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False), drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--client-procs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="connections per client process")
    parser.add_argument("--report", type=Path, help="a probe report JSON (default: run the CPU probe)")
    parser.add_argument("--only", choices=("sqlite", "postgres"))
    args = parser.parse_args()
    report = json.loads(args.report.read_text()) if args.report else _probe_report()
    print(f"report: {len(report['checks'])} checks, {len(json.dumps(report))} bytes; "
          f"{args.workers} server workers, {args.client_procs}x{args.threads} client connections")

    if args.only in (None, "sqlite"):
        with tempfile.TemporaryDirectory() as tmp:
            rate = bench(f"sqlite:///{tmp}/bench.sqlite3", report, workers=args.workers, procs=args.client_procs,
                         threads=args.threads, seconds=args.seconds)
        print(f"sqlite:     {rate:7.0f} reports/s  (target >= 300)")
    pg = os.environ.get("ACCELENV_TEST_POSTGRES_URL")
    if args.only in (None, "postgres"):
        if not pg:
            print("postgresql: skipped (set ACCELENV_TEST_POSTGRES_URL)")
            return
        url, drop = _postgres_database(pg)
        try:
            rate = bench(url, report, workers=args.workers, procs=args.client_procs, threads=args.threads,
                         seconds=args.seconds)
        finally:
            drop()  # type: ignore[operator]
        print(f"postgresql: {rate:7.0f} reports/s  (target >= 1000)")


if __name__ == "__main__":
    main()
