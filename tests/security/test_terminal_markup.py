"""Issue 24, item 7: report text printed by `accelenv matrix show --server` is data in a real terminal
render (Rich forced to colour, as in a terminal): markup is shown literally, never applied or crashing,
and control / bidi characters are made visible instead of reaching the terminal."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner

from cli.main import app
from cli.terminal_text import visible
from tests.evidence.live_server import LiveServer, live_server
from tests.synthetic_reports import synthetic_report

pytestmark = pytest.mark.timeout(180)
HOSTILE = {
    "closing-tag": "[/]",
    "link": "[link=https://evil.example]550.1[/link]",
    "escape": "550\x1b]8;;https://evil.example\x1b\\x\x1b]8;;\x1b\\",
    "bidi": "550\u202e1.02",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('markup') / 'accelenv.sqlite3'}"
    with live_server(url, workers=1, load_matrix=True) as running:
        yield running


@pytest.mark.parametrize("name", HOSTILE)
def test_report_text_is_printed_as_data(server: LiveServer, name: str) -> None:
    text = HOSTILE[name]
    report = synthetic_report(host=name, torch="2.13.0+cu130", build="cu130", backend="cuda", driver=text,
                              runtime="13.0", device_arch="sm_90")
    posted = httpx.post(server.base_url + "/v1/reports", json=report, headers=server.auth, timeout=30)
    assert posted.status_code == 201, posted.text
    result = CliRunner().invoke(
        app, ["matrix", "show", "--torch", "2.13", "--server", server.base_url],
        env={"FORCE_COLOR": "1", "COLUMNS": "400", "TERM": "xterm-256color"},
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Traceback" not in out
    assert f"driver {visible(text)}" in out, out[-2000:]
    assert "\x1b]8;" not in out, "a hyperlink escape reached the terminal"
    assert "\u202e" not in out
    if name == "bidi":
        assert "\\u202e" in out


@pytest.mark.parametrize(
    ("text", "shown"),
    [("plain", "plain"), ("a\x1bb", "a\\x1bb"), ("x\u2066y", "x\\u2066y"), ("tab\tok\n", "tab\tok\n"), (None, "-")],
)
def test_visible_escapes_control_and_bidi_characters(text: str | None, shown: str) -> None:
    assert visible(text) == shown


def test_pages_show_control_and_bidi_characters_as_escapes(server: LiveServer) -> None:
    text = "550\u202e1.02\x1b[2J"
    report = synthetic_report(host="page", torch="2.13.0+cu130", build="cu130", backend="cuda", driver=text,
                              runtime="13.0", device_arch="sm_90")
    assert httpx.post(server.base_url + "/v1/reports", json=report, headers=server.auth, timeout=30).status_code == 201
    page = httpx.get(server.base_url + "/matrix", params={"torch": "2.13.0", "build": "cu130"}, timeout=30)
    assert page.status_code == 200
    assert "550\\u202e1.02\\x1b[2J" in page.text
    assert "\u202e" not in page.text and "\x1b" not in page.text
