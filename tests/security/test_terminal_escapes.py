"""Issue 34: a hostile server's text (terminal escapes: a title change, colours, a hyperlink; a bidi
override) and hostile file names reach the terminal escaped, in every CLI command that talks to a server.
The server is a loopback stand-in answering every request with such text, the way a compromised or
impersonated service would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.synthetic_reports import synthetic_report

pytestmark = pytest.mark.timeout(300)
EVIL = "\x1b]0;owned\x07\x1b[31mred\x1b[0m\x1b]8;;https://evil.example\x1b\\link\u202etxt.exe"
RAW = ("\x1b", "\x07", "\u202e")


def _error_body() -> bytes:
    return json.dumps({
        "code": "report-invalid", "message": f"refused {EVIL}", "hint": f"hint {EVIL}",
        "causes": [{"constraint": EVIL, "origin": EVIL, "detail": EVIL}], "alternatives": [],
    }).encode()


class _Hostile(BaseHTTPRequestHandler):
    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(422, _error_body())

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        lines = [line for line in self.rfile.read(length).split(b"\n") if line.strip()]
        if self.path == "/v1/reports/batch":
            results = [{"report_id": EVIL, "status": "invalid", "error": json.loads(_error_body())} for _ in lines]
            self._send(200, json.dumps({"results": results}).encode())
        else:
            self._send(422, _error_body())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _report_file(folder: Path) -> Path:
    # a file name is text too: the terminal sees it escaped
    path = folder / "report\x1b[2J\u202e.json"
    path.write_text(json.dumps(synthetic_report()))
    return path


COMMANDS = {
    "report-submit-files": lambda url, tmp: ["report", "submit", "--server", url, "--token", "t",
                                             str(_report_file(tmp))],
    "report-submit-spool": lambda url, tmp: ["report", "submit", "--server", url, "--token", "t"],
    "resolve": lambda url, tmp: ["resolve", "--torch", "2.6", "--server", url],
    "matrix-show": lambda url, tmp: ["matrix", "show", "--torch", "2.6", "--server", url],
    "ci-matrix": lambda url, tmp: ["ci", "matrix", "--server", url],
    "probe-submit": lambda url, tmp: ["probe", "--checks", "detect", "--quiet", "--submit", url, "--token", "t",
                                      "--output", str(tmp / "out.json")],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_hostile_servers_text_reaches_the_terminal_escaped(
    hostile: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "spool"
    monkeypatch.setenv("ACCELENV_SPOOL_DIR", str(spool))
    if name == "report-submit-spool":
        spool.mkdir()
        (spool / "a.json").write_text(json.dumps(synthetic_report()))
    result = CliRunner().invoke(app, COMMANDS[name](hostile, tmp_path), env={"COLUMNS": "400"})
    output = result.output
    assert "Traceback" not in output, output[-2000:]
    assert not any(char in output for char in RAW), repr(output[-2000:])
    # the text was shown, escaped (as in text, or as in JSON), not dropped
    assert "\\x1b" in output or "\\u001b" in output, output[-2000:]
