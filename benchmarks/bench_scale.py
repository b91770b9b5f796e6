"""Read latency and ingest rate with PostgreSQL holding 1 000 000 probe reports (issue 14).

Goal: p99 <= 50 ms for GET /v1/matrix, GET /v1/evidence and GET /v1/resolve (with evidence) on this machine.

Reproduce (a PostgreSQL server where databases may be created; the database is dropped at the end unless
--keep):

    ACCELENV_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        .venv/bin/python benchmarks/bench_scale.py --reports 1000000

With ``--reuse`` the database is ``accelenv_scale_reuse``, kept afterwards: the first run loads it, later
runs with the same ``--reports``/``--cells``/``--hosts-per-cell``/``--submitters`` skip the load (the
parameters are its database comment; other ones are refused) and only migrate it (a new migration is
applied to the loaded data), so a code change is measured in minutes. Each run's ingest steps add their
reports to it (~45 000 on the 2-core dev machine, 4-5 % of a million): drop it with
``DROP DATABASE accelenv_scale_reuse`` to measure at the size asked again.

What it does:

1. a fresh database, migrated, the bundled matrix loaded, ``--submitters`` report tokens;
2. bulk load in the stored form, as ingest would have left it: ``--reports`` synthetic reports
   (tests/synthetic_reports.py: a real report's shape, 7 checks, ~1.5 KB) over ``--cells`` realistic cells
   (declared torch patches x builds x Pythons on linux-x86_64, CUDA cells spread over drivers and GPU
   architectures), ~``--hosts-per-cell`` hosts per cell, submitters drawn from the tokens. Reports go in
   with COPY; the counter rows (cells, hosts, submitters, checks) are summed in Python and COPYed too;
3. a real uvicorn (2 workers) over it: ``--requests`` sequential requests per endpoint, each a different
   query (no answer comes from the per-worker resolve cache), p50/p99 of the wall time per request;
4. ingest at that size: 4 threads post NDJSON batches of 50 new reports for ``--ingest-s`` seconds; then
   again with a fifth thread reading ``GET /v1/matrix`` meanwhile (every answer after new evidence), its
   p50/p99;
5. EXPLAIN (ANALYZE) of the queries behind the three endpoints, printed (benchmarks/bench_scale.md
   explains the indexes they use), before the server starts (so after a new migration ran on a reused
   database).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import cast

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.evidence.live_server import live_server
from tests.synthetic_reports import synthetic_report

CHECK_STATUSES = ("passed", "failed", "unsupported", "skipped", "timeout", "crashed", "error")


def _cells(n: int, rng: random.Random) -> list[dict]:
    from compat_service.domain.evidence.cells import DeclaredMatrix
    from compat_service.domain.matrix.loading.loader import load_matrix_rows

    declared = [c for c in DeclaredMatrix(load_matrix_rows()).cells if c.platform == "linux-x86_64"]
    cells: list[dict] = []
    seen: set[tuple] = set()
    drivers = ["535.104.05", "550.54.15", "560.35.03", "570.86.10", "575.51.02"]
    archs = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]
    for dc in itertools.cycle(declared):
        if len(cells) >= n:
            break
        if dc.torch_build.startswith("cu"):
            backend, driver, arch = "cuda", rng.choice(drivers), rng.choice(archs)
            runtime = f"{dc.torch_build[2:-1]}.{dc.torch_build[-1]}"
        elif dc.torch_build.startswith("rocm"):
            backend, driver, arch, runtime = "cuda", None, rng.choice(["gfx942", "gfx90a"]), dc.torch_build[4:]
        else:
            backend, driver, arch, runtime = "cpu", None, None, None
        key = (dc.torch_version, dc.torch_build, dc.python, "linux", "x86_64", backend, runtime, driver, arch)
        if key in seen:
            if len(seen) >= len(declared) * 30:
                break
            continue
        seen.add(key)
        cells.append({
            "torch": f"{dc.torch_version}+{dc.torch_build}", "build": dc.torch_build, "python": f"{dc.python}.4",
            "backend": backend, "driver": driver, "device_arch": arch, "runtime": runtime,
            "key": (dc.torch_version, dc.torch_build, dc.python, "linux", "x86_64", backend, runtime, driver, arch),
        })
    return cells


def _copy(conn, table: str, columns: list[str], rows) -> None:
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _prepare(database_url: str, submitters: int) -> list[tuple]:
    """Migrate, load the bundled matrix, and create ``submitters`` report tokens: (public, secret) each."""
    from compat_service.db.engine import make_engine
    from compat_service.db.matrix.loader import prepare_database
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    engine = make_engine(database_url)
    try:
        prepare_database(engine, migrate_schema=True, load_matrix=True, matrix_path=None)
        return [create_token(engine, ApiTokenCreate(scope="report", note=f"bench {i}")) for i in range(submitters)]
    finally:
        engine.dispose()


def load(database_url: str, args: argparse.Namespace) -> tuple[list[dict], list[str]]:
    import psycopg

    from compat_service.db.evidence.prepare import prepare_report
    from compat_service.domain.evidence.report import ProbeReport

    tokens = _prepare(database_url, args.submitters)
    rng = random.Random(14)
    cells = _cells(args.cells, rng)
    # one template per (cell, outcome): the stored body differs per report only in ids and host
    outcomes = [{}, {}, {}, {"ops.sort.default.float32": "failed"}, {"allocator.cache_reuse": "unsupported"}]
    now = "2026-11-30 12:00:00+00"
    pg_url = database_url.replace("postgresql+psycopg://", "postgresql://")
    started = time.perf_counter()
    with psycopg.connect(pg_url) as conn:
        cell_ids = list(range(1, len(cells) + 1))
        cell_columns = ["id", "key_hash", "torch_version", "torch_build", "python", "os", "arch", "backend",
                        "runtime_version", "driver_version", "device_arch", "first_seen", "last_seen"]
        _copy(conn, "evidence_cell", cell_columns,
              ([i, hashlib.sha256(json.dumps(list(c["key"])).encode()).hexdigest(), *c["key"], now, now]
               for i, c in zip(cell_ids, cells)))
        conn.execute("SELECT setval('evidence_cell_id_seq', %s)", (len(cells),))
        counters = {i: dict.fromkeys(("reports", "hosts", "passing_hosts", "submitters", "passing_submitters",
                                       "required_bad_reports", "other_bad_reports", "smoke_passed_reports"), 0)
                    for i in cell_ids}
        hosts: dict[tuple[int, str], list[int]] = {}
        subs: dict[tuple[int, int], list[int]] = {}
        checks: dict[tuple[int, str], list] = {}
        templates: dict[tuple[int, int], tuple] = {}

        def rows():
            for n in range(args.reports):
                c = rng.randrange(len(cells))
                cell, cid = cells[c], cell_ids[c]
                o = rng.randrange(len(outcomes))
                host = f"h{c}-{rng.randrange(args.hosts_per_cell)}"
                token = tokens[rng.randrange(len(tokens))][0].id
                if (c, o) not in templates:
                    base = synthetic_report(torch=cell["torch"], build=cell["build"], python=cell["python"],
                                            backend=cell["backend"], driver=cell["driver"], runtime=cell["runtime"],
                                            device_arch=cell["device_arch"], statuses=outcomes[o])
                    p = prepare_report(ProbeReport.model_validate(base))
                    templates[(c, o)] = (json.loads(p.report_row["body"]), p)
                body_obj, p = templates[(c, o)]
                rid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                body_obj["report_id"] = rid
                body_obj["environment"]["host_fingerprint"] = host.ljust(16, "0")
                body = json.dumps(body_obj, separators=(",", ":"))
                v = p.verdict
                k = counters[cid]
                k["reports"] += 1
                k["required_bad_reports"] += v.required_bad
                k["other_bad_reports"] += v.other_bad
                k["smoke_passed_reports"] += v.smoke_passed
                host_row = hosts.setdefault((cid, host.ljust(16, "0")), [0, 0])
                for row in (host_row, subs.setdefault((cid, token), [0, 0])):
                    row[0] += 1
                    row[1] += int(v.passed)
                for check_id, group, status, aten in zip(p.check_ids, p.check_groups, p.check_statuses, p.aten_ops):
                    row = checks.setdefault((cid, check_id), [group, aten, None, *([0] * len(CHECK_STATUSES))])
                    row[3 + CHECK_STATUSES.index(status)] += 1
                    if status != "passed" and check_id in p.failures:
                        row[2] = p.failures[check_id]
                yield (rid, cid, host.ljust(16, "0"), token, now, now, v.passed,
                       hashlib.sha256(body.encode()).hexdigest(), body)
                if n and n % 200_000 == 0:
                    print(f"  {n} reports copied ({time.perf_counter() - started:.0f} s)", flush=True)

        _copy(conn, "probe_report", ["report_id", "cell_id", "host_fingerprint", "submitter_id", "created_at",
                                     "received_at", "ok", "body_sha256", "body"], rows())
        for (cid, _h), (_r, pr) in hosts.items():
            counters[cid]["hosts"] += 1
            counters[cid]["passing_hosts"] += int(pr > 0)
        for (cid, _s), (_r, pr) in subs.items():
            counters[cid]["submitters"] += 1
            counters[cid]["passing_submitters"] += int(pr > 0)
        tally = ["reports", "passing_reports", "first_seen", "last_seen"]
        _copy(conn, "evidence_host", ["cell_id", "host_fingerprint", *tally],
              ([cid, h, r, pr, now, now] for (cid, h), (r, pr) in hosts.items()))
        _copy(conn, "evidence_submitter", ["cell_id", "submitter_id", *tally],
              ([cid, s, r, pr, now, now] for (cid, s), (r, pr) in subs.items()))
        _copy(conn, "evidence_check",
              ["cell_id", "check_id", "shard", '"group"', "aten_op", "last_failure", *CHECK_STATUSES],
              ([cid, check_id, 0, *row] for (cid, check_id), row in checks.items()))
        with conn.cursor() as cur:
            for cid, k in counters.items():
                cur.execute("UPDATE evidence_cell SET " + ", ".join(f"{n} = %s" for n in k) + " WHERE id = %s",
                            (*k.values(), cid))
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
        size_row = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()
        size = size_row[0] if size_row is not None else "?"
    print(f"loaded {args.reports} reports, {len(cells)} cells, {len(hosts)} host rows, {len(subs)} submitter rows "
          f"in {time.perf_counter() - started:.0f} s; database {size}", flush=True)
    return cells, [secret for _p, secret in tokens]


def _percentiles(times: list[float]) -> str:
    times = sorted(times)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    return f"p50 {statistics.median(times) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms"


def measure(base_url: str, cells: list[dict], args: argparse.Namespace) -> dict[str, str]:
    rng = random.Random(7)
    out = {}
    with httpx.Client(base_url=base_url, timeout=60) as client:
        def run(name: str, queries: list[tuple[str, dict]]) -> None:
            for path, params in queries[:20]:  # warm-up (connections, worker caches of the matrix)
                client.get(path, params=params)
            times = []
            for path, params in queries:
                t = time.perf_counter()
                res = client.get(path, params=params)
                times.append(time.perf_counter() - t)
                assert res.status_code in (200, 404, 409), (path, params, res.status_code, res.text[:300])
            out[name] = _percentiles(times)
            print(f"{name}: {out[name]}", flush=True)

        n = args.requests
        run("GET /v1/matrix", [("/v1/matrix", {"torch": rng.choice(["2.13", "2.12", "2.11", "2.10"]),
                                               "limit": 100, "offset": rng.randrange(0, 300)}) for _ in range(n)])
        picks = [rng.choice(cells) for _ in range(n)]
        run("GET /v1/evidence", [("/v1/evidence", {
            "torch": c["key"][0], "build": c["key"][1], "python": c["key"][2], "os": "linux", "arch": "x86_64",
            "backend": c["key"][5], **{k: v for k, v in (("runtime", c["key"][6]), ("driver", c["key"][7]),
                                                          ("device_arch", c["key"][8])) if v}}) for c in picks])
        # CUDA cells, with distinct drivers: every resolve a cache miss (a driver with a CPU or ROCm build is
        # an invalid request)
        cuda = [c for c in cells if c["build"].startswith("cu")]
        run("GET /v1/resolve (evidence)", [("/v1/resolve", {
            "torch": c["key"][0], "python": c["key"][2], "backend": c["key"][1],
            "driver": f"{rng.randrange(535, 580)}.{rng.randrange(10, 99)}.{i % 100:02d}",
            **({"gpu_arch": c["key"][8]} if c["key"][8] else {})})
            for i, c in enumerate(rng.choice(cuda) for _ in range(n))])
    return out


def ingest(base_url: str, tokens: list[str], cells: list[dict], seconds: float, *, read_matrix: bool = False) -> float:
    """Reports/s stored by 4 clients posting batches; with ``read_matrix`` a fifth client reads GET /v1/matrix
    meanwhile (each answer after new evidence: the rows a worker keeps are rebuilt), its p50/p99 printed."""
    created = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    matrix_times: list[float] = []

    def worker(i: int) -> None:
        nonlocal created
        rng = random.Random(i + (100 if read_matrix else 0))
        headers = {"Authorization": f"Bearer {tokens[i]}", "Content-Type": "application/x-ndjson"}
        with httpx.Client(base_url=base_url, timeout=60, headers=headers) as c:
            while time.monotonic() < stop:
                batch = []
                for _ in range(50):
                    cell = rng.choice(cells)
                    batch.append(json.dumps(synthetic_report(
                        host=f"new{rng.randrange(10_000)}", torch=cell["torch"], build=cell["build"],
                        python=cell["python"], backend=cell["backend"], driver=cell["driver"],
                        runtime=cell["runtime"], device_arch=cell["device_arch"])))
                res = c.post("/v1/reports/batch", content="\n".join(batch))
                assert res.status_code == 200, res.text[:300]
                n = sum(r["status"] == "created" for r in res.json()["results"])
                with lock:
                    created += n

    def reader() -> None:
        rng = random.Random(8)
        with httpx.Client(base_url=base_url, timeout=60) as c:
            while time.monotonic() < stop:
                params: dict[str, str | int] = {"torch": rng.choice(["2.13", "2.12", "2.11", "2.10"]), "limit": 100,
                          "offset": rng.randrange(0, 300)}
                t = time.perf_counter()
                assert c.get("/v1/matrix", params=params).status_code == 200
                matrix_times.append(time.perf_counter() - t)

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    if read_matrix:
        threads.append(threading.Thread(target=reader))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rate = created / (time.monotonic() - started)
    with_reader = ", and one client reading GET /v1/matrix" if read_matrix else ""
    print(f"ingest at that size: {rate:.0f} reports/s (NDJSON batches of 50, 4 clients{with_reader}, {seconds:g} s)",
          flush=True)
    if read_matrix:
        print(f"GET /v1/matrix during ingest: {_percentiles(matrix_times)} ({len(matrix_times)} requests)", flush=True)
    return rate


def explain(database_url: str, cells: list[dict]) -> None:
    import psycopg

    c = cells[len(cells) // 2]
    key_hash = hashlib.sha256(json.dumps(list(c["key"])).encode()).hexdigest()
    queries = {
        "evidence: the cell by key": "SELECT * FROM evidence_cell WHERE key_hash = %s",
        "evidence: its checks": "SELECT check_id, sum(passed), sum(failed) FROM evidence_check WHERE cell_id = "
                                "(SELECT id FROM evidence_cell WHERE key_hash = %s) GROUP BY check_id",
        "evidence: recent report ids": "SELECT report_id FROM probe_report WHERE cell_id = "
                                       "(SELECT id FROM evidence_cell WHERE key_hash = %s) "
                                       "ORDER BY received_at DESC, report_id LIMIT 20",
    }
    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        for name, sql in queries.items():
            plan = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING ON) " + sql, (key_hash,)).fetchall()
            print(f"-- {name}\n" + "\n".join("   " + r[0] for r in plan))
        plan = conn.execute(
            "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM evidence_cell WHERE torch_version = %s AND "
            "torch_build = %s AND python = %s AND os = 'linux' AND arch = 'x86_64'", c["key"][:3]).fetchall()
        print("-- resolve: cells of a declared cell\n" + "\n".join("   " + r[0] for r in plan))
        # what GET /v1/matrix reads on every request (EvidenceVersion); the rows it keeps are rebuilt on a change
        plan = conn.execute("EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*), coalesce(sum(reports), 0), "
                            "max(last_seen) FROM evidence_cell").fetchall()
        print("-- matrix: the evidence stamp\n" + "\n".join("   " + r[0] for r in plan))


REUSE_DATABASE = "accelenv_scale_reuse"


def _comment(args: argparse.Namespace) -> str:
    return (f"bench_scale reports={args.reports} cells={args.cells} hosts-per-cell={args.hosts_per_cell} "
            f"submitters={args.submitters}")


def _set_comment(base: str, args: argparse.Namespace) -> None:
    import sqlalchemy as sa

    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"COMMENT ON DATABASE \"{REUSE_DATABASE}\" IS '{_comment(args)}'"))
    finally:
        admin.dispose()


def reused_database(base: str, args: argparse.Namespace) -> tuple[str, bool]:
    """The URL of :data:`REUSE_DATABASE` (created when absent) and whether a load with these parameters
    completed in it (the comment is set only after one did; a load interrupted earlier starts over)."""
    import sqlalchemy as sa

    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            found = conn.execute(
                sa.text("SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = :n"),
                {"n": REUSE_DATABASE},
            ).first()
            if found is not None and found[0] not in (None, _comment(args)):
                sys.exit(f"{REUSE_DATABASE} holds another load ({found[0]}); drop it or pass those parameters")
            if found is not None and found[0] is None:
                conn.execute(sa.text(f'DROP DATABASE "{REUSE_DATABASE}"'))
            if found is None or found[0] is None:
                conn.execute(sa.text(f'CREATE DATABASE "{REUSE_DATABASE}"'))
    finally:
        admin.dispose()
    url = sa.engine.make_url(base).set(database=REUSE_DATABASE).render_as_string(hide_password=False)
    return url, found is not None and found[0] is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--cells", type=int, default=3000)
    parser.add_argument("--hosts-per-cell", type=int, default=60)
    parser.add_argument("--submitters", type=int, default=200)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--ingest-s", type=float, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--reuse", action="store_true",
                        help=f"load {REUSE_DATABASE} once and keep it; later runs reuse it (see the docstring)")
    args = parser.parse_args()
    base = os.environ.get("ACCELENV_TEST_POSTGRES_URL")
    if not base:
        sys.exit("set ACCELENV_TEST_POSTGRES_URL (see the docstring)")
    if args.reuse:
        database_url, loaded = reused_database(base, args)
        if loaded:
            cells = _cells(args.cells, random.Random(14))  # the load's first draws: the same cells
            tokens = [secret for _p, secret in _prepare(database_url, 4)]
            print(f"reusing {REUSE_DATABASE} ({_comment(args)})", flush=True)
        else:
            cells, tokens = load(database_url, args)
            _set_comment(base, args)
        run_all(database_url, cells, tokens, args)
        return
    from tests.conftest import fresh_postgres_database

    databases = cast(Generator[str, None, None], fresh_postgres_database("accelenv_scale_"))
    database_url = next(databases)
    try:
        cells, tokens = load(database_url, args)
        run_all(database_url, cells, tokens, args)
    finally:
        if not args.keep:
            databases.close()


def run_all(database_url: str, cells: list[dict], tokens: list[str], args: argparse.Namespace) -> None:
    explain(database_url, cells)
    with live_server(database_url, workers=2) as server:
        measure(server.base_url, cells, args)
        ingest(server.base_url, tokens, cells, args.ingest_s)
        ingest(server.base_url, tokens, cells, args.ingest_s, read_matrix=True)


if __name__ == "__main__":
    main()
