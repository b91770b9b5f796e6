"""The one error registry is complete: every AccelenvError subclass, wherever it is defined, is in ERRORS."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import cli
import compat_service
from compat_service.domain.errors import ERRORS, AccelenvError


def _subclasses(cls: type[AccelenvError]) -> list[type[AccelenvError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _subclasses(child))]


def _import_everything() -> None:
    for package in (compat_service, cli):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if ".migrations" in module.name:  # Alembic's env.py runs a migration when imported
                continue
            importlib.import_module(module.name)


def test_every_error_class_of_the_project_is_registered_under_its_code() -> None:
    _import_everything()
    classes = [c for c in _subclasses(AccelenvError) if c.__module__.split(".")[0] in ("compat_service", "cli")]
    assert len(classes) >= 28
    for cls in classes:
        assert ERRORS[cls.code] is cls, cls
    exit_codes = {c.exit_code for c in ERRORS.values()}
    assert 11 in exit_codes and exit_codes == set(range(1, max(exit_codes) + 1))  # every documented code, no gap


def test_importing_the_registry_alone_knows_every_code() -> None:
    # the CLI's client turns a body back into its class with only domain.errors imported
    code = (
        "from compat_service.domain.errors import ERRORS;"
        "print(sorted(ERRORS)); print(ERRORS['index-unreachable'].exit_code, ERRORS['matrix-out-of-date'].exit_code)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    codes, exits = out.splitlines()
    _import_everything()
    assert codes == str(sorted(ERRORS))
    assert exits == "6 11"


def test_a_new_error_class_registers_itself_and_a_taken_code_is_refused() -> None:
    with pytest.raises(TypeError, match="already"):
        type("Clash", (AccelenvError,), {"code": "invalid-request"})
    with pytest.raises(TypeError, match="its own `code`"):
        type("NoCode", (AccelenvError,), {})
    assert "invalid-request" in ERRORS and ERRORS["invalid-request"].__name__ == "InvalidRequestError"
