"""Issue 24, item 8: `accelenv report submit` (the console script) over a real spool directory and a real
uvicorn on loopback: a file of ``[`` characters, an oversized file and a FIFO named ``*.json`` neither
crash nor hang the command; the good report is sent, the unreadable ones are moved to ``rejected/`` with
their reason, the FIFO is left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evidence.live_server import live_server
from tests.synthetic_reports import synthetic_report

ACCELENV = Path(sys.executable).parent / "accelenv"
pytestmark = pytest.mark.timeout(180)


def test_a_poisoned_spool_neither_crashes_nor_hangs_the_submit(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    good = synthetic_report(host="good")
    (spool / f"{good['report_id']}.json").write_text(json.dumps(good))
    (spool / "brackets.json").write_bytes(b"[" * 100_000)
    (spool / "huge.json").write_bytes(b'{"pad": "' + b"x" * 3_000_000 + b'"}')
    (spool / "list.json").write_bytes(b"[1, 2]")
    os.mkfifo(spool / "pipe.json")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ACCELENV_SPOOL_DIR": str(spool)}
    with live_server(f"sqlite:///{tmp_path / 'accelenv.sqlite3'}", workers=1) as server:
        done = subprocess.run(
            [str(ACCELENV), "report", "submit", "--server", server.base_url, "--token", server.token, "--json"],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "RecursionError" not in done.stdout + done.stderr
    body = json.loads(done.stdout)
    assert body["sent"] == [str(spool / f"{good['report_id']}.json")], body
    assert not (spool / f"{good['report_id']}.json").exists()
    rejected = spool / "rejected"
    for name in ("brackets", "huge", "list"):
        assert (rejected / f"{name}.json").is_file(), sorted(p.name for p in rejected.iterdir())
        reason = json.loads((rejected / f"{name}.reason.json").read_text())
        assert reason["code"] in ("report-invalid", "report-too-large") and reason["message"], reason
    assert json.loads((rejected / "huge.reason.json").read_text())["code"] == "report-too-large"
    assert (spool / "pipe.json").exists() and not (rejected / "pipe.json").exists()
