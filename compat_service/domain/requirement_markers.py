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


def marker_applies_to(marker: str | None, os: str, arch: str, python: str) -> bool | None:
    """True/False for the target ``{os}-{arch}`` with ``python`` (3.12, 3.13t); None when it cannot be told."""
    if not marker:
        return True
    environment = _platform_markers().get(f"{os}-{arch}")
    if environment is None:
        return None
    version = python.rstrip("t")
    try:
        return bool(
            Marker(marker).evaluate(
                {
                    **environment,
                    "python_version": version,
                    "python_full_version": f"{version}.0",
                    "implementation_name": "cpython",
                    "platform_python_implementation": "CPython",
                    "extra": "",
                }
            )
        )
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None
