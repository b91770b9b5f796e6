"""Several processes opening one brand-new SQLite file at once (service workers on first start).

Switching a fresh file to WAL from two connections at once is a lock deadlock that SQLite reports as
"database is locked" without waiting; the engine has to ride it out. Without the retry, 8 processes on a
fresh file fail in roughly half of the rounds, so 25 rounds show the bug with near certainty.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
import sqlalchemy as sa

from compat_service.db.engine import make_engine

PROCESSES = 8
ROUNDS = 25


def _open_and_write(path: str, barrier) -> str:
    barrier.wait()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
            conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        return ""
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        engine.dispose()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork() for speed")
def test_processes_opening_a_fresh_file_together_all_succeed(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    failures = []
    with ctx.Manager() as manager, ctx.Pool(PROCESSES) as pool:
        for round_ in range(ROUNDS):
            path = tmp_path / f"fresh-{round_}.sqlite3"
            barrier = manager.Barrier(PROCESSES)
            results = pool.starmap(_open_and_write, [(str(path), barrier)] * PROCESSES)
            failures += [r for r in results if r]
            with sa.create_engine(f"sqlite:///{path}").connect() as conn:
                assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
                assert conn.execute(sa.text("SELECT count(*) FROM t")).scalar() == PROCESSES
    assert failures == []
