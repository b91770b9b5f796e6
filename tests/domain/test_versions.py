"""domain/versions.py: the one parse of versions and specifiers the domain shares."""

from __future__ import annotations

import pytest
from packaging.version import InvalidVersion, Version

from compat_service.domain.versions import cached_version, parse_specifier, parse_version


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.13.0", Version("2.13.0")), ("12.8", Version("12.8")), ("", None), (None, None), ("sm_90", None)],
    ids=["patch", "toolkit", "empty", "none", "not-a-version"],
)
def test_parse_version_is_lenient(text: str | None, expected: Version | None) -> None:
    assert parse_version(text) == expected


def test_cached_version_parses_once_and_refuses_what_is_not_a_version() -> None:
    assert cached_version("575.57.08") is cached_version("575.57.08")
    with pytest.raises(InvalidVersion):
        cached_version("five")


def test_parse_specifier() -> None:
    spec = parse_specifier(">=2.2,<2.4")
    assert spec is not None and spec.contains("2.3.1")
    assert parse_specifier(">=two") is None
