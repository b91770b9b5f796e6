"""kill -9 during ingest, on SQLite and PostgreSQL: a real 3-worker uvicorn takes single reports and NDJSON
batches from 4 clients; after a moment the server and all its workers get SIGKILL at once, and it is
started again on the same database. After the rounds, every acknowledged report (201/200, or a batch
item `created`/`exists`) is stored, nothing is stored that was never sent, and every counter equals a
recount from the stored reports (reports in flight at the kill are either wholly stored, counted, or
absent).

CI runs ACCELENV_KILL_ROUNDS rounds per database (default 3); the long run:
    ACCELENV_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test ACCELENV_KILL_ROUNDS=20 \\
        .venv/bin/python -m pytest tests/evidence/test_crash_safety.py -q -s -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

import httpx
import pytest
import sqlalchemy as sa

from compat_service.db.engine import make_engine
from tests.evidence.live_server import LiveServer, live_server
from tests.evidence.recount import assert_counters_equal_a_recount
from tests.synthetic_reports import synthetic_report

ROUNDS = int(os.environ.get("ACCELENV_KILL_ROUNDS", "3"))
CLIENTS = 4

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60 + ROUNDS * 60)]


def _client_loop(server: LiveServer, seed: int, stop: threading.Event, sent: set[str], acked: set[str],
                 lock: threading.Lock) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=server.base_url, headers=server.auth, timeout=10) as client:
        while not stop.is_set():
            statuses = {"ops.sort.default.float32": "failed"} if rng.random() < 0.2 else None
            reports = [synthetic_report(host=str(rng.randrange(30)), statuses=statuses)
                       for _ in range(rng.choice((1, 1, 10)))]
            with lock:
                sent.update(r["report_id"] for r in reports)
            try:
                if len(reports) == 1:
                    res = client.post("/v1/reports", json=reports[0])
                    ok = {reports[0]["report_id"]} if res.status_code in (200, 201) else set()
                else:
                    body = "\n".join(json.dumps(r) for r in reports)
                    res = client.post("/v1/reports/batch", content=body,
                                      headers={"Content-Type": "application/x-ndjson"})
                    ok = {r["report_id"] for r in res.json()["results"] if r["status"] in ("created", "exists")} \
                        if res.status_code == 200 else set()
            except (httpx.TransportError, ValueError):
                continue  # the server died under us: not acknowledged
            with lock:
                acked.update(ok)


def test_kill_9_during_ingest_loses_no_acknowledged_report(database_url: str) -> None:
    sent: set[str] = set()
    acked: set[str] = set()
    lock = threading.Lock()
    survived = 0
    for round_ in range(ROUNDS):
        with live_server(database_url, workers=3) as server:
            stop = threading.Event()
            clients = [threading.Thread(target=_client_loop, args=(server, round_ * 100 + i, stop, sent, acked, lock))
                       for i in range(CLIENTS)]
            for c in clients:
                c.start()
            time.sleep(random.Random(round_).uniform(1.0, 2.5))
            before = len(acked)
            server.kill()
            stop.set()
            for c in clients:
                c.join(timeout=30)
            assert len(acked) > before or round_ > 0 or len(acked) > 0, "nothing was acknowledged before the kill"
        survived += 1
    # started once more: the database is consistent and serves
    with live_server(database_url, workers=1) as server:
        assert httpx.get(server.base_url + "/healthz").status_code == 200
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            stored = set(conn.execute(sa.text("SELECT report_id FROM probe_report")).scalars())
        assert acked <= stored, f"{len(acked - stored)} acknowledged report(s) lost"
        assert stored <= sent
        counted = assert_counters_equal_a_recount(engine)
    finally:
        engine.dispose()
    print(f"kill -9: {survived} rounds survived, {len(acked)} acknowledged, {len(stored)} stored, "
          f"{counted} counted")
    assert counted == len(stored) and acked
