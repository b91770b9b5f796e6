"""The service worker's garbage-collector tuning (compat_service/api/server/gc_tuning.py)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

from compat_service.api.server import gc_tuning
from tests.conftest import REPO_ROOT


def test_tuning_freezes_start_up_objects_raises_thresholds_and_drops_unprinted_record_fields() -> None:
    # in a child process: gc.freeze cannot be fully undone for objects of the test process
    script = (
        "import gc, logging; from compat_service.api.server.gc_tuning import tune_for_service; "
        "before = gc.get_freeze_count(); tune_for_service(); "
        "print(before, gc.get_freeze_count(), *gc.get_threshold()); "
        "r = logging.makeLogRecord({}); print(r.thread, r.threadName, r.process, r.processName)"
    )
    lines = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    before, frozen, *thresholds = map(int, lines[0].split())
    assert before == 0 and frozen > 1000
    assert thresholds == [gc_tuning.GEN0_THRESHOLD, gc_tuning.GEN1_THRESHOLD, gc_tuning.GEN2_THRESHOLD]
    # the logging HOWTO's "Optimization" flags: no formatter of the service prints these fields
    assert lines[1].split() == ["None"] * 4


def test_a_worker_tunes_on_start_unless_told_not_to() -> None:
    script = (
        "import gc; from fastapi.testclient import TestClient; from compat_service.api.app import create_app; "
        "from compat_service.config import Settings; import sys, tempfile, os; "
        "d = tempfile.mkdtemp(); "
        "s = Settings(database_url=f'sqlite:///{d}/a.sqlite3', load_matrix_on_start=False); "
        "c = TestClient(create_app(s)); c.__enter__(); print(gc.get_threshold()[0]); c.__exit__(None, None, None)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ACCELENV_TUNE_GC"}
    tuned = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert tuned.stdout.split() == [str(gc_tuning.GEN0_THRESHOLD)], tuned.stderr
    env["ACCELENV_TUNE_GC"] = "false"
    untouched = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert untouched.stdout.split() == [str(gc.get_threshold()[0])], untouched.stderr
