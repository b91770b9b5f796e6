"""PEP 440 versions and specifiers as the domain reads them, each text parsed once.

A leaf: it imports `packaging` only, so every concept of the domain (the matrix's schema and interface, the
hardware rules, the resolver's request and stages) can share it without importing one another.

- `cached_version`: a version the matrix or the requests repeat (toolkits, drivers, patches); raises
  `InvalidVersion` as `Version` does.
- `parse_version` / `parse_specifier`: the lenient forms validation uses; None where the text is not one.
"""

from __future__ import annotations

from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["cached_version", "parse_specifier", "parse_version"]

#: versions repeat across calls and requests; parsing each once keeps resolve() well under 1 ms
cached_version = lru_cache(maxsize=4096)(Version)


def parse_version(text: str | None) -> Version | None:
    """``text`` as a PEP 440 version; None when it is None, empty or not one."""
    if not text:
        return None
    try:
        return cached_version(text)
    except InvalidVersion:
        return None


def parse_specifier(text: str) -> SpecifierSet | None:
    """``text`` as a PEP 440 specifier set; None when it is not one."""
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None
