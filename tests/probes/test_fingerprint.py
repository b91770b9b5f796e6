"""The host fingerprint: stable per install, salted, and built from nothing identifying."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from probes.host import fingerprint


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCELENV_CONFIG_DIR", str(tmp_path / "cfg"))
    return tmp_path / "cfg"


def test_stable_across_runs_of_one_install(config_dir: Path) -> None:
    first, stable = fingerprint.host_fingerprint()
    second, _ = fingerprint.host_fingerprint()
    assert stable is True and first == second and len(first) == 64


def test_salt_is_private_and_changes_the_fingerprint(config_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    first, _ = fingerprint.host_fingerprint()
    salt_file = config_dir / fingerprint.SALT_FILE
    if os.name == "posix":
        assert stat.S_IMODE(salt_file.stat().st_mode) == 0o600
    monkeypatch.setenv("ACCELENV_CONFIG_DIR", str(tmp_path / "other"))
    other, _ = fingerprint.host_fingerprint()
    assert other != first


def test_unwritable_config_dir_gives_an_unstable_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ACCELENV_CONFIG_DIR", str(blocker / "accelenv"))
    digest, stable = fingerprint.host_fingerprint()
    assert stable is False and len(digest) == 64


def test_hostname_is_not_an_input(config_dir: Path) -> None:
    digest, _ = fingerprint.host_fingerprint()
    assert socket.gethostname() not in digest
    salt = (config_dir / fingerprint.SALT_FILE).read_text()
    assert socket.gethostname() not in salt
