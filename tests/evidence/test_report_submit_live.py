"""`accelenv report submit FILE… --json` (the installed console script) against a real uvicorn on loopback:
saved reports are stored and left in place, a refused one is named with its reason, a bad token is the
headline error (exit 7)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.evidence.conftest import variant
from tests.evidence.live_server import live_server

ACCELENV = Path(sys.executable).parent / "accelenv"


def _submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ACCELENV_SPOOL_DIR": str(tmp_path / "spool")}
    return subprocess.run([str(ACCELENV), "report", "submit", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_saved_reports_go_to_a_real_server(tmp_path: Path, report_of: Any) -> None:
    base = report_of("cpu")
    good, refused = variant(base, host="a"), variant(base, host="b")
    refused["summary"] = "not a summary"
    files = []
    for name, report in (("good.json", good), ("refused.json", refused)):
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps(report))
    with live_server(f"sqlite:///{tmp_path / 'accelenv.sqlite3'}", workers=1) as server:
        done = _submit(tmp_path, *map(str, files), "--server", server.base_url, "--token", server.token, "--json")
        bad_token = _submit(tmp_path, str(files[0]), "--server", server.base_url, "--token", "nope")
    assert done.returncode == 10, done.stdout + done.stderr
    body = json.loads(done.stdout)
    assert body["sent"] == [str(files[0])]
    assert [(k["file"], k["code"]) for k in body["kept"]] == [(str(files[1]), "report-invalid")]
    assert all(p.exists() for p in files)  # named files are only read
    assert bad_token.returncode == 7 and "error: unauthorized" in bad_token.stderr


def test_a_token_past_its_storage_quota_keeps_its_reports_and_says_why(tmp_path: Path, report_of: Any) -> None:
    """Issue 34: a server with a per-token storage quota smaller than the reports: the CLI keeps every report
    (the quota may be raised) and names the refusal, exit 7."""
    base = report_of("cpu")
    files = []
    for host in ("a", "b"):
        files.append(tmp_path / f"{host}.json")
        files[-1].write_text(json.dumps(variant(base, host=host)))
    env = {"ACCELENV_QUOTA_TOKEN_REPORT_BYTES": "1000"}
    with live_server(f"sqlite:///{tmp_path / 'accelenv.sqlite3'}", workers=1, env=env) as server:
        done = _submit(tmp_path, *map(str, files), "--server", server.base_url, "--token", server.token, "--json")
    assert done.returncode == 7, done.stdout + done.stderr
    body = json.loads(done.stdout)
    assert body["error"] == "report-storage-quota" and {k["code"] for k in body["kept"]} == {"report-storage-quota"}
    # the message says how much is stored and what the quota is
    assert "of its 1000 bytes of report data" in body["kept"][0]["message"]
    assert all(p.exists() for p in files)
