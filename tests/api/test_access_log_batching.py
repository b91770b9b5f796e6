"""The service's log handler (middleware/observability.py, TurnBatchingHandler) writes a line at once on a quiet
service, and under load the lines of one turn of the event loop together at its end: every request still gets
its line, in order, formatted by the same formatters as every other line."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from compat_service.api.middleware.observability import (
    _FIELDS,
    JsonFormatter,
    PlainFormatter,
    TurnBatchingHandler,
    access_log,
    log_request,
)

T = TypeVar("T")


def _scope(i: int) -> dict[str, object]:
    return {"method": "GET", "path": "/v1/resolve", "raw_path": b"/v1/resolve", "query_string": f"torch=2.{i}".encode()}


def _run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())`` on a thread of its own (an earlier test's loop may still be set on this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(main())).result()


def _read(fd: int) -> str:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 16).decode()
    except BlockingIOError:
        return ""


@pytest.fixture
def piped() -> Iterator[tuple[int, TurnBatchingHandler]]:
    """The access logger writing through a batching handler into a pipe (and nowhere else)."""
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    handler = TurnBatchingHandler(stream)
    access_log.addHandler(handler)
    propagate, access_log.propagate = access_log.propagate, False
    level, access_log.level = access_log.level, logging.INFO
    try:
        yield read_end, handler
    finally:
        access_log.removeHandler(handler)
        access_log.propagate, access_log.level = propagate, level
        stream.close()
        os.close(read_end)


def test_a_busy_turn_is_written_once_at_its_end_and_a_quiet_line_at_once(
    piped: tuple[int, TurnBatchingHandler],
) -> None:
    read_end, handler = piped
    handler.setFormatter(PlainFormatter())

    async def serve() -> tuple[str, str, str]:
        log_request(_scope(0), 200, 0.0001, "a" * 16)
        first = _read(read_end)  # the first line: nothing was written just before
        for i in range(1, 6):
            log_request(_scope(i), 200, 0.0001, "b" * 16)
        within = _read(read_end)  # these wait for the end of the turn
        await asyncio.sleep(0)
        after = _read(read_end)
        return first, within, after

    first, within, after = _run(serve)
    assert "INFO accelenv.access GET /v1/resolve?torch=2.0 200 0.10ms request_id=" + "a" * 16 in first
    assert first.count("\n") == 1
    assert within == ""
    lines = after.splitlines()
    assert [line.split()[4] for line in lines] == [f"/v1/resolve?torch=2.{i}" for i in range(1, 6)]


def test_flush_writes_what_waits_and_off_a_loop_lines_go_at_once(piped: tuple[int, TurnBatchingHandler]) -> None:
    read_end, handler = piped
    handler.setFormatter(JsonFormatter())

    async def busy() -> None:
        log_request(_scope(0), 200, 0.0001, "a" * 16)
        log_request(_scope(1), 200, 0.0001, "a" * 16)
        handler.flush()  # as the app's lifespan does when it stops

    _run(busy)
    records = [json.loads(line) for line in _read(read_end).splitlines()]
    assert [r["logger"] for r in records] == ["accelenv.access"] * 2
    assert list(records[0]) == [
        "time",
        "level",
        "logger",
        "message",
        "method",
        "path",
        "status",
        "duration_ms",
        "request_id",
    ]
    with ThreadPoolExecutor(1) as pool:  # a thread with no running loop: written at once
        pool.submit(log_request, _scope(2), 404, 0.0001, "c" * 16).result()
    assert '"status":404' in _read(read_end)


def test_the_access_fields_are_attributes_no_log_record_has_of_its_own() -> None:
    # log_request sets them on the record as ``extra=`` would, which refuses a name the record already has
    assert not set(_FIELDS) & {*vars(logging.makeLogRecord({})), "message", "asctime"}
