"""The access log writes a line at once on a quiet service, and under load the lines of one turn of the event
loop together at its end (middleware/observability.py, AccessLog): every request still gets its line, in order."""

from __future__ import annotations

import asyncio
import os

from compat_service.api.middleware.observability import AccessLog


def _scope(i: int) -> dict[str, object]:
    return {"method": "GET", "path": "/v1/resolve", "raw_path": b"/v1/resolve", "query_string": f"torch=2.{i}".encode()}


def _read(fd: int) -> str:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 16).decode()
    except BlockingIOError:
        return ""


def test_a_busy_turn_is_written_once_at_its_end_and_a_quiet_line_at_once() -> None:
    read_end, write_end = os.pipe()
    log = AccessLog("plain", fd=write_end)

    async def serve() -> tuple[str, str, str]:
        log.write(_scope(0), 200, 0.0001, "a" * 16)
        first = _read(read_end)  # the first line: nothing was written just before
        for i in range(1, 6):
            log.write(_scope(i), 200, 0.0001, "b" * 16)
        within = _read(read_end)  # these wait for the end of the turn
        await asyncio.sleep(0)
        after = _read(read_end)
        return first, within, after

    first, within, after = asyncio.run(serve())
    assert "GET /v1/resolve?torch=2.0 200" in first and first.count("\n") == 1
    assert within == ""
    lines = after.splitlines()
    assert [line.split()[4] for line in lines] == [f"/v1/resolve?torch=2.{i}" for i in range(1, 6)]
    os.close(read_end)
    os.close(write_end)


def test_flush_writes_what_waits_and_off_a_loop_lines_go_at_once() -> None:
    read_end, write_end = os.pipe()
    log = AccessLog("json", fd=write_end)

    async def busy() -> None:
        log.write(_scope(0), 200, 0.0001, "a" * 16)
        log.write(_scope(1), 200, 0.0001, "a" * 16)
        log.flush()  # as the app's lifespan does when it stops

    asyncio.run(busy())
    assert _read(read_end).count('"logger":"accelenv.access"') == 2
    log.write(_scope(2), 404, 0.0001, "c" * 16)  # no running loop: written at once
    assert '"status":404' in _read(read_end)
    os.close(read_end)
    os.close(write_end)
