"""The resolver: the request, the stages over an explicit state, the explanation of failures, the answer.

Its public surface is `__all__` (a test guards it). The names load on first use, so importing one module of
the resolver does not import them all (`accelenv resolve` starts fast; the request module is read before
the stages exist).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compat_service.domain.resolver.install_formats import FORMATS, render
    from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest
    from compat_service.domain.resolver.resolution import Resolution, resolution_from_json, resolution_to_json
    from compat_service.domain.resolver.stages import resolve

__all__ = [
    "FORMATS",
    "PARAMETERS",
    "Resolution",
    "ResolveRequest",
    "render",
    "resolution_from_json",
    "resolution_to_json",
    "resolve",
]

#: each public name -> the module of the resolver that defines it
_HOMES = {
    "FORMATS": "install_formats",
    "render": "install_formats",
    "PARAMETERS": "request",
    "ResolveRequest": "request",
    "Resolution": "resolution",
    "resolution_from_json": "resolution",
    "resolution_to_json": "resolution",
    "resolve": "stages",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
