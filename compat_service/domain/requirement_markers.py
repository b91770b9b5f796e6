"""Evaluate a PEP 508 marker (a requirement's ``; platform_system == "Linux" ...``) for a resolver target.

The marker environment of each platform is data (``matrix_data/index/refresh.yaml``, ``platforms[].markers``);
this module only fills in the Python of the request and evaluates with ``packaging``.
"""

from __future__ import annotations

from functools import lru_cache

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName


@lru_cache(maxsize=8)
def _platform_markers() -> dict[str, dict[str, str]]:
    import yaml

    from matrix_data import DATA_DIR

    raw = yaml.safe_load((DATA_DIR / "index" / "refresh.yaml").read_text(encoding="utf-8"))
    return {row["platform"]: dict(row["markers"]) for row in raw.get("platforms", [])}


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


def marker_applies_to(marker: str | None, os: str, arch: str, python: str) -> bool | None:
    """True/False for the target ``{os}-{arch}`` with ``python`` (3.12, 3.13t); None when it cannot be told."""
    if not marker:
        return True
    markers = _platform_markers().get(f"{os}-{arch}")
    if markers is None:
        return None
    return evaluate(marker, marker_environment(markers, python))
