"""The runner and container a CI cell asks for, from ``matrix_data/ci_runners.yaml`` (its header says what
each value means and where it comes from).

`runner_for(platform, family)` -> ``(runs_on, container)``: the GitHub-hosted label of the platform for a
family a hosted runner can run (cpu), else None; the family's container image, None when none is needed.
Every label cites a key of ``sources.yaml``; a row without a source must say null.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from compat_service.domain.errors import Cause, MatrixDataError
from compat_service.domain.json_types import JsonObject

RUNNERS_FILE = "ci_runners.yaml"


def _data_dir() -> Path:
    import matrix_data

    return Path(matrix_data.__file__).parent


@lru_cache(maxsize=1)
def _table() -> tuple[frozenset[str], dict[str, str | None], dict[str, str | None]]:
    path = _data_dir() / RUNNERS_FILE
    data: JsonObject = yaml.safe_load(path.read_text(encoding="utf-8"))
    problems = _runner_problems(data)
    if problems:
        raise MatrixDataError(f"{RUNNERS_FILE} is not valid", hint="fix the rows named",
                              causes=[Cause(constraint=p, origin=f"matrix_data/{RUNNERS_FILE}") for p in problems])
    runners = {row["platform"]: row.get("runs_on") for row in data.get("runners", [])}
    containers = {row["family"]: row.get("container") for row in data.get("containers", [])}
    return frozenset(data.get("hosted_families") or ()), runners, containers


def _runner_problems(data: JsonObject) -> list[str]:
    """Each runner row's missing or unknown sources (a runs_on label needs one)."""
    known = {s["key"] for s in yaml.safe_load((_data_dir() / "sources.yaml").read_text(encoding="utf-8"))["sources"]}
    problems = []
    for row in data.get("runners", []):
        cited = list(row.get("source") or [])
        if row.get("runs_on") is not None and not cited:
            problems.append(f"{RUNNERS_FILE} {row['platform']}: a runs_on label needs a source")
        problems += [f"{RUNNERS_FILE} {row['platform']}: unknown source {key}" for key in cited if key not in known]
    return problems


def runner_for(platform: str, family: str | None) -> tuple[str | None, str | None]:
    """(runs_on, container) for a cell of ``family`` on ``platform`` (see the module docstring)."""
    hosted, runners, containers = _table()
    runs_on = runners.get(platform) if family in hosted else None
    return runs_on, containers.get(family or "")
