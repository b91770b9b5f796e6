"""docs/configuration.md is the one table of every ACCELENV_* variable: each one the code, the scripts and
`Settings` read is in it, and it names none they do not."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from compat_service.config import Settings

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC = REPO_ROOT / "docs" / "configuration.md"
#: a whole variable name (a prefix written as `ACCELENV_REFDEV_*` in a message is not one)
NAME = re.compile(r"\bACCELENV_[A-Z0-9_]*[A-Z0-9]\b(?![_*])")


def _in_the_tree() -> set[str]:
    files = subprocess.run(
        [
            "git",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "compat_service",
            "cli",
            "probes",
            "tests",
            "benchmarks",
            "docker",
            ".ci",
            "action",
            "action.yml",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found: set[str] = set()
    for name in files:
        path = REPO_ROOT / name
        if path.suffix in (".py", ".sh", ".yaml", ".yml", "") and path.is_file():
            found |= set(NAME.findall(path.read_text(errors="replace")))
    return found


def _in_the_doc() -> set[str]:
    return {m.group(1) for m in re.finditer(r"^\| `(ACCELENV_[A-Z0-9_]+)` \|", DOC.read_text(), re.M)}


def test_every_variable_is_in_the_table_and_the_table_names_no_other() -> None:
    settings = {f"ACCELENV_{field.upper()}" for field in Settings.model_fields}
    documented = _in_the_doc()
    assert settings <= documented, sorted(settings - documented)
    in_code = _in_the_tree() - {"ACCELENV_REFDEV"}  # a prefix test code strips from the environment
    assert documented == in_code | settings, (
        sorted(in_code | settings - documented),
        sorted(documented - in_code - settings),
    )
