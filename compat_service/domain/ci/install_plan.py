"""A CI cell's install plan, read as data: the ``install_argv`` lists `job_matrix` writes, checked before a job
runs them.

What a service sends is never a command line: each step must be ``["pip", "install", ...]`` whose other
items are requirement specifiers (``torch==2.3.1``, ``name @ https://...``) or one of the few pip options the
matrix's plans use (the index options with their URL, ``--no-deps``, ``--no-build-isolation``). The job runs
each step as ``[python, "-m", *step]`` with no shell, so ``$(...)``, ``;`` or a backquote in an item is a
character of a requirement pip refuses, never something that runs; anything else (another program, a
``-r`` file, ``--config-settings``, an editable path) is refused here, before anything starts.

Pure: `checked_install_argv(cell)` returns the steps or raises InstallPlanRefusedError naming the item.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement

from compat_service.domain.errors import Cause, InstallPlanRefusedError
from compat_service.domain.json_types import JsonObject

#: pip options a plan may carry, and whether each takes a value (the next item)
ALLOWED_OPTIONS: dict[str, bool] = {
    "--index-url": True,
    "--extra-index-url": True,
    "--no-deps": False,
    "--no-build-isolation": False,
}
_URL_SCHEMES = ("https://", "http://", "file://")


def _refused(message: str, item: object) -> InstallPlanRefusedError:
    return InstallPlanRefusedError(
        message,
        hint="take the cell from GET /v1/ci-matrix or `accelenv ci matrix` unchanged; a plan is a list of "
             "[\"pip\", \"install\", requirement or index option, ...] lists and nothing else runs",
        causes=[Cause(constraint=f"install_argv item {str(item)[:80]!r}", origin="the cell's install_argv")],
    )


def checked_install_argv(cell: JsonObject) -> list[list[str]]:
    """The cell's install steps, each checked item by item (see the module docstring)."""
    plan = cell.get("install_argv")
    if not isinstance(plan, list) or not plan:
        raise _refused("the cell has no install_argv (a list of pip argument lists)", plan)
    return [_checked_step(step) for step in plan]


def _checked_step(step: object) -> list[str]:
    """One ``pip install ...`` argument list, each item a requirement, an allowed option or its URL."""
    if not isinstance(step, list) or not all(isinstance(item, str) for item in step):
        raise _refused("an install step is not a list of strings", step)
    if step[:2] != ["pip", "install"] or len(step) < 3:
        raise _refused(f"an install step is not `pip install ...`: {' '.join(step)[:80]}", step[:2])
    expect_value = False
    for item in step[2:]:
        if expect_value:
            _check_url(item)
            expect_value = False
        elif item.startswith("-"):
            expect_value = _takes_value(item)
        else:
            _check_requirement(item)
    if expect_value:
        raise _refused(f"{step[-1]} has no value", step[-1])
    return list(step)


def _takes_value(option: str) -> bool:
    """Whether an allowed pip option takes a value (an index URL); refuses any other option."""
    if option not in ALLOWED_OPTIONS:
        raise _refused(f"pip option {option[:40]} is not one an install plan uses", option)
    return ALLOWED_OPTIONS[option]


def _check_url(item: str) -> None:
    if not item.startswith(_URL_SCHEMES) or any(c.isspace() for c in item):
        raise _refused(f"an index option's value is not a URL: {item[:80]}", item)


def _check_requirement(item: str) -> None:
    try:
        Requirement(item)
    except InvalidRequirement:
        raise _refused(f"{item[:80]!r} is not a requirement specifier", item) from None
