"""Sustained report ingest (reports/second) through the real HTTP API on loopback, SQLite and PostgreSQL.

Targets: >= 300 reports/s on SQLite, >= 1000 reports/s on PostgreSQL.

Reproduce (PostgreSQL needs ACCELENV_TEST_POSTGRES_URL, a server where databases may be created):

    ACCELENV_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        .venv/bin/python benchmarks/bench_ingest.py --seconds 15

    # batch submission (`POST /v1/reports/batch`, 50 reports a request as NDJSON, what `accelenv report
    # submit` sends; --batch-format json sends a JSON array); prints both figures
    ACCELENV_TEST_POSTGRES_URL=... .venv/bin/python benchmarks/bench_ingest.py --seconds 10 --batch 50

A real uvicorn with ``--workers`` processes serves a fresh database; ``--client-procs`` processes with
``--threads`` keep-alive connections each post distinct variations (new report_id, one of 50 host
fingerprints) of one real probe report (``accelenv probe --device cpu``, or ``--report FILE``) for
``--seconds``. Every response must be 201, and every 201 a row in the database (checked at the end); the
figure is reports created after a warm-up / wall time. With ``--batch N`` (N > 1) each request carries N
such reports (distinct report_ids) to the batch route, only items answered ``created`` count, and the
single-report figure is measured too, for comparison. The clients use raw keep-alive ``http.client``
connections and pre-encoded bodies, so they take as little as possible of the cores the server runs on.
"""

from __future__ import annotations

import argparse
import http.client
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
#: reports per keep-alive connection. uvicorn's workers share one listening socket and a connection stays
#: with the worker that accepted it; connections that live for the whole run stay wherever the first
#: accepts landed (often all on one worker), so clients reconnect now and then, as real submitters do: a
#: single-report client every 20 requests, a batch client after every request.
RECONNECT_EVERY = 20


def _probe_report() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "cli.main", "probe", "--device", "cpu", "--output", str(out)]
        subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, timeout=300)
        if not out.is_file():
            sys.exit("could not produce a probe report with `accelenv probe --device cpu`; pass --report FILE")
        return json.loads(out.read_text())


def _template(report: dict) -> tuple[bytes, bytes, bytes]:
    """The report as JSON split around its report_id and host fingerprint, so a variation is one join of
    pre-encoded bytes, not a JSON dump: the load generator shares the cores with the server."""
    report = json.loads(json.dumps(report))
    report["report_id"] = "@RID@"
    report["environment"]["host_fingerprint"] = "@HOST@"
    head, rest = json.dumps(report).encode().split(b"@RID@")
    middle, tail = rest.split(b"@HOST@")
    return head, middle, tail


def _body(template: tuple[bytes, bytes, bytes], seed: int, i: int) -> bytes:
    rid = str(uuid.UUID(int=(seed << 64) | i, version=4)).encode()
    host = f"bench-host-{(seed + i) % HOSTS}".ljust(16, "0").encode()
    head, middle, tail = template
    return b"".join((head, rid, middle, host, tail))


def _connect(base_url: str) -> http.client.HTTPConnection:
    host, port = base_url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def _client(base_url: str, token: str, report: dict, seed: int, threads: int, seconds: float, batch: int,
            ndjson: bool, queue: mp.Queue) -> None:
    import threading

    template = _template(report)
    content_type = "application/x-ndjson" if batch > 1 and ndjson else "application/json"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    start_at = time.monotonic()
    counts = [(0, 0, 0)] * threads  # (reports created after the warm-up, all created, errors)
    path = "/v1/reports/batch" if batch > 1 else "/v1/reports"

    def run(t: int) -> None:
        # http.client on a raw keep-alive connection: a fraction of httpx's per-request CPU
        conn = _connect(base_url)
        counted = created = errors = i = 0
        reconnect_every = max(1, RECONNECT_EVERY // batch)
        while (now := time.monotonic() - start_at) <= WARMUP_S + seconds:
            i += 1
            if i % reconnect_every == 0:
                conn.close()
                conn = _connect(base_url)
            if batch > 1:
                bodies = (_body(template, seed * 1000 + t, i * batch + k) for k in range(batch))
                body = b"\n".join(bodies) if ndjson else b"[" + b",".join(bodies) + b"]"
            else:
                body = _body(template, seed * 1000 + t, i)
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
            if batch > 1:
                ok = 0
                if response.status == 200:
                    ok = sum(item["status"] == "created" for item in json.loads(answer)["results"])
                errors += batch - ok
            else:
                ok = int(response.status == 201)
                errors += 1 - ok
            created += ok
            if now >= WARMUP_S:
                counted += ok
        conn.close()
        counts[t] = (counted, created, errors)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    queue.put(tuple(sum(c[k] for c in counts) for k in range(3)))


def bench(database_url: str, report: dict, *, workers: int, procs: int, threads: int, seconds: float,
          batch: int = 1, ndjson: bool = True) -> float:
    from tests.evidence.live_server import live_server

    with live_server(database_url, workers=workers) as server:
        queue: mp.Queue = mp.Queue()
        clients = [
            mp.Process(
                target=_client,
                args=(server.base_url, server.token, report, p, threads, seconds, batch, ndjson, queue),
            )
            for p in range(procs)
        ]
        for c in clients:
            c.start()
        results = [queue.get() for _ in clients]
        for c in clients:
            c.join()
    counted, created, errors = (sum(r[k] for r in results) for k in range(3))
    if errors:
        print(f"  {errors} reports were not created", file=sys.stderr)
    stored = _stored_reports(database_url)
    if stored != created:
        sys.exit(f"the server answered created for {created} reports but stored {stored}")
    return counted / seconds


def _stored_reports(database_url: str) -> int:
    """Reports in the database: every 201 must be a stored report, and only those."""
    import sqlalchemy as sa

    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT count(*) FROM probe_report")).scalar_one()
    finally:
        engine.dispose()


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
    parser.add_argument("--batch", type=int, default=1,
                        help="reports per request; > 1 posts to /v1/reports/batch and measures 1 as well")
    parser.add_argument("--batch-format", choices=("ndjson", "json"), default="ndjson",
                        help="how a batch travels: NDJSON (what `accelenv report submit` sends) or a JSON array")
    args = parser.parse_args()
    sizes = [1, args.batch] if args.batch > 1 else [1]
    report = json.loads(args.report.read_text()) if args.report else _probe_report()
    print(f"report: {len(report['checks'])} checks, {len(json.dumps(report))} bytes; "
          f"{args.workers} server workers, {args.client_procs}x{args.threads} client connections")

    ndjson = args.batch_format == "ndjson"

    def label(batch: int) -> str:
        return "1 report/request" if batch == 1 else f"batches of {batch} ({args.batch_format})"

    if args.only in (None, "sqlite"):
        for batch in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                rate = bench(f"sqlite:///{tmp}/bench.sqlite3", report, workers=args.workers,
                             procs=args.client_procs, threads=args.threads, seconds=args.seconds, batch=batch,
                             ndjson=ndjson)
            print(f"sqlite:     {rate:7.0f} reports/s  {label(batch)}  (target >= 300)")
    pg = os.environ.get("ACCELENV_TEST_POSTGRES_URL")
    if args.only in (None, "postgres"):
        if not pg:
            print("postgresql: skipped (set ACCELENV_TEST_POSTGRES_URL)")
            return
        for batch in sizes:
            url, drop = _postgres_database(pg)
            try:
                rate = bench(url, report, workers=args.workers, procs=args.client_procs, threads=args.threads,
                             seconds=args.seconds, batch=batch, ndjson=ndjson)
            finally:
                drop()  # type: ignore[operator]
            print(f"postgresql: {rate:7.0f} reports/s  {label(batch)}  (target >= 1000)")


if __name__ == "__main__":
    main()
