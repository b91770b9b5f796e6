"""The guarded public surfaces (as httpx's tests/test_exported_members.py): `__all__` lists exactly what a
module offers, sorted, so a new public name is a decision, not an accident."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from types import ModuleType

import compat_service.domain.errors as errors
import compat_service.domain.resolver as resolver
import probes.host


def _defined_here(module: ModuleType) -> list[str]:
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and getattr(value, "__module__", module.__name__) == module.__name__
    ]


def test_errors_exports_every_public_name_it_defines() -> None:
    assert errors.__all__ == sorted(_defined_here(errors))
    assert {e.__name__ for e in errors.ERRORS.values()} <= set(errors.__all__)


def test_the_resolver_package_exports_its_surface_and_each_name_resolves() -> None:
    assert resolver.__all__ == sorted(resolver.__all__)
    for name in resolver.__all__:
        value = getattr(resolver, name)
        home = importlib.import_module(f"compat_service.domain.resolver.{resolver._HOMES[name]}")
        assert value is getattr(home, name), name
    assert set(resolver.__all__) <= set(dir(resolver))


def test_the_resolver_package_loads_its_names_only_when_asked() -> None:
    code = (
        "import sys, compat_service.domain.resolver.request;"
        "print(sorted(m for m in sys.modules if m.startswith('compat_service.domain.resolver.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "stages" not in out and "compat_service.domain.resolver.request" in out


def test_probes_host_exports_its_modules() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(probes.host.__path__))
    assert probes.host.__all__ == modules
