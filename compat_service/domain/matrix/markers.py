"""Evaluate a PEP 508 marker (a requirement's ``; platform_system == "Linux" ...``) for a resolver target.

The marker environment of each platform is data (``matrix_data/index/refresh.yaml``, ``platforms[].markers``);
this module fills in the Python and evaluates with ``packaging``. Used by refresh (which requirements apply on
a platform) and by the matrix load (for which platform and Python the triton requirement applies).
"""

from __future__ import annotations

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName


def marker_environment(platform_markers: dict[str, str], python: str) -> dict[str, str]:
    """The PEP 508 environment of a platform (its markers from refresh.yaml) with CPython ``python``
    (``3.12``, ``3.13t``; ``any`` and ``3.10+`` forms count as that lower version, ``any`` as 3.12)."""
    version = "3.12" if python == "any" else python.rstrip("t+")
    return {
        **platform_markers,
        "python_version": version,
        "python_full_version": f"{version}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


def evaluate(marker: Marker | str | None, environment: dict[str, str]) -> bool | None:
    """The marker's value in ``environment``; True without a marker; None when it cannot be evaluated."""
    if marker is None or marker == "":
        return True
    try:
        parsed = marker if isinstance(marker, Marker) else Marker(marker)
        return bool(parsed.evaluate(dict(environment)))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None
