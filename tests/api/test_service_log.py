"""What the service says about itself: start-up and stop lines, the access log, request ids, /metrics.

The log tests run the real `accelenv serve --port 0` (uvicorn on loopback, SQLite) and read what it writes.
"""

from __future__ import annotations

import json
import logging
import re
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.served import START, Served, serve_port_zero


def _start(served: Served) -> re.Match[str]:
    match = START.search(served.wait_for(START.pattern))
    assert match is not None
    return match


@pytest.mark.slow
def test_start_line_names_the_real_port_then_access_lines_and_a_stop_line(tmp_path: Path) -> None:
    with serve_port_zero(tmp_path) as served:
        start = _start(served)
        url = start["url"]
        port = int(url.rsplit(":", 1)[1])
        assert url.startswith("http://127.0.0.1:") and port > 0
        assert start["db"] == f"sqlite:///{tmp_path / 'svc.sqlite3'}"
        assert int(start["cells"]) > 1000  # the bundled matrix: torch x build x Python x platform

        ok = httpx.get(url + "/healthz", timeout=5)
        assert ok.status_code == 200
        missing = httpx.get(url + "/v1/torch/99.99.99", timeout=5)
        assert missing.status_code == 404
        body = missing.json()
        rid = body["request_id"]
        assert rid == missing.headers["x-request-id"]
        given = httpx.get(url + "/v1/resolve?torch=latest", headers={"X-Request-ID": "trace-42"}, timeout=5)
        assert given.headers["x-request-id"] == "trace-42"

        served.wait_for(rf"GET /healthz 200 [0-9.]+ms request_id={ok.headers['x-request-id']}")
        served.wait_for(rf"GET /v1/torch/99\.99\.99 404 [0-9.]+ms request_id={rid}")
        served.wait_for(r"GET /v1/resolve\?torch=latest 200 [0-9.]+ms request_id=trace-42")

        scrape = httpx.get(url + "/metrics", timeout=5)
        assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
        text = scrape.text
        assert 'accelenv_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in text
        assert 'accelenv_http_requests_total{method="GET",route="/v1/torch/{version}",status="404"} 1.0' in text
        assert 'accelenv_http_request_duration_seconds_count{method="GET",route="/v1/resolve"} 1.0' in text
        assert f'accelenv_matrix_info{{version="{start["version"]}"}} 1.0' in text
        assert f"accelenv_matrix_cells {float(start['cells'])}" in text
        assert "accelenv_ingest_queue_depth 0.0" in text

        served.proc.send_signal(signal.SIGTERM)
        served.wait_for(rf"accelenv worker {start['pid']} stopped after \d+ requests")
        # uvicorn re-raises the signal it caught once it has shut down cleanly
        assert served.proc.wait(timeout=30) in (0, -signal.SIGTERM)


@pytest.mark.slow
def test_json_access_log_and_every_worker_announces_itself(tmp_path: Path) -> None:
    with serve_port_zero(tmp_path, {"ACCELENV_LOG_FORMAT": "json"}, workers=2) as served:
        starts: list[Any] = []
        while len(starts) < 2:
            line = served.wait_for(r'"event":"start"')
            served.seen.remove(line)
            starts.append(json.loads(line))
        assert len({s["pid"] for s in starts}) == 2
        assert len({s["url"] for s in starts}) == 1
        url = starts[0]["url"]
        assert not url.endswith(":0")
        for _ in range(4):
            assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        records = [json.loads(line) for line in served.drain() if line.startswith("{")]
        access = [r for r in records if r["logger"] == "accelenv.access"]
        assert len(access) == 4
        assert all(r["method"] == "GET" and r["path"] == "/healthz" and r["status"] == 200 for r in access)
        assert all(r["duration_ms"] >= 0 and re.fullmatch(r"[0-9a-f]{16}", r["request_id"]) for r in access)
        # workers add up in one scrape (prometheus-client's multiprocess mode)
        text = httpx.get(url + "/metrics", timeout=5).text
        assert 'accelenv_http_requests_total{method="GET",route="/healthz",status="200"} 4.0' in text


@pytest.mark.slow
def test_access_log_off(tmp_path: Path) -> None:
    with serve_port_zero(tmp_path, {"ACCELENV_ACCESS_LOG": "false"}) as served:
        url = _start(served)["url"]
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        assert not [line for line in served.drain() if "accelenv.access" in line]


def test_an_unhandled_error_is_logged_once_with_the_request_id_its_body_carries(
    database_url: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    from compat_service.api.app import create_app
    from compat_service.config import Settings

    app = create_app(Settings(database_url=database_url, auto_migrate=True))

    def broken() -> None:  # a bug in a route: nothing handles ZeroDivisionError
        raise ZeroDivisionError("boom")

    app.add_api_route("/broken", broken)
    with TestClient(app, raise_server_exceptions=True) as client, caplog.at_level(logging.INFO):
        res = client.get("/broken")
    assert res.status_code == 500
    body = res.json()
    assert body["code"] == "internal-error" and "boom" not in res.text
    assert body["request_id"] == res.headers["x-request-id"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert vars(errors[0])["request_id"] == body["request_id"] and errors[0].exc_info is not None
    access = [line for line in capfd.readouterr().err.splitlines() if "accelenv.access" in line]
    assert len(access) == 1
    assert access[0].endswith(f"GET /broken 500 {access[0].split()[-2]} request_id={body['request_id']}")
