"""Which index `matrix refresh` reads, and how the generated data names it.

Order: the ``--index-url`` flag, then pip's own configuration (``PIP_INDEX_URL`` and the ``index-url`` of
pip's config files, read through pip so every file pip reads counts), then pip's built-in default. The code
names no index host: the default is read from the installed pip at run time.

pip's ``extra-index-url`` values are not read: refresh derives facts from one index so every fact has one
provenance, and ``file://`` extras are local mirrors, not the index that publishes the releases.

Provenance: the generated files store ``pip-default`` when the URL is pip's built-in default (so the data
names no host and stays the same on every machine that uses the default), otherwise the URL itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

PIP_DEFAULT = "pip-default"


@dataclass(frozen=True)
class IndexLocation:
    url: str
    #: what the generated data records as the index: ``pip-default`` or the URL
    label: str
    #: where the URL came from: ``--index-url``, ``PIP_INDEX_URL``, ``pip config``, ``pip built-in default``
    origin: str


def pip_builtin_default() -> str | None:
    """pip's built-in default index (its simple API URL), or None when pip is not importable."""
    try:
        from pip._internal.models.index import PyPI
    except ImportError:  # pragma: no cover - pip is in every venv this runs in
        return None
    return str(PyPI.simple_url)


def _pip_configured() -> str | None:
    try:
        from pip._internal.configuration import Configuration

        config = Configuration(isolated=False)
        config.load()
    except Exception:
        return None
    for key in ("install.index-url", "global.index-url", ":env:.index-url"):
        try:
            value = config.get_value(key)
        except Exception:
            continue
        if value:
            return str(value).split()[0]
    return None


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


def resolve_index(flag: str | None = None) -> IndexLocation:
    """The index to read: flag > PIP_INDEX_URL > pip config > pip's built-in default."""
    default = pip_builtin_default()
    if flag:
        url, origin = flag, "--index-url"
    elif os.environ.get("PIP_INDEX_URL"):
        url, origin = os.environ["PIP_INDEX_URL"].split()[0], "PIP_INDEX_URL"
    else:
        configured = _pip_configured()
        if configured:
            url, origin = configured, "pip config"
        elif default:
            url, origin = default, "pip built-in default"
        else:  # pragma: no cover
            from compat_service.domain.errors import InvalidRequestError

            raise InvalidRequestError(
                "no package index to read: pip is not importable and no --index-url was given",
                hint="pass --index-url URL (a PEP 503/691 simple API)",
            )
    url = _with_slash(url)
    label = PIP_DEFAULT if default and url == _with_slash(default) else url
    return IndexLocation(url=url, label=label, origin=origin)
