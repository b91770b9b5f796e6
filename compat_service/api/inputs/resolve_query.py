"""`GET /v1/resolve`'s query string: its parameters (the domain's one table, ``PARAMETERS``, plus ``format``),
read as Starlette reads a query string, refused with the API's words when a name is unknown, a value too long
or a format not one of the answer's forms."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl

from compat_service.api.inputs.strict_query import in_api_words, unknown_parameter
from compat_service.domain.errors import Cause, InvalidRequestError
from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest

#: format= -> the install_formats renderer (json: the Resolution object itself)
FORMATS = {f: f for f in ("json", "text", "pip", "requirements", "uv", "conda", "docker")}
FORMATS["dockerfile"] = "docker"
#: every query parameter the route takes
KNOWN = frozenset([*(p.name for p in PARAMETERS), "format"])

#: how many times a repeatable parameter (``with``) may be given
MAX_REPEATS = 8


def query_strings(raw: bytes) -> dict[str, str | list[str] | None]:
    """The resolve parameters of a raw query string; an over-long value is an InvalidRequestError.

    Parsed as Starlette's ``QueryParams`` parses it, with the same call (latin-1 bytes, ``+`` and %-escapes as
    UTF-8 with replacement, blank values kept), the last of a repeated name winning, without the multidict;
    a repeatable parameter (``with=vllm&with=flash-attn``) keeps every value, in order. Names the route does
    not take are ignored here (`read_query` refuses them)."""
    return _values(*_given(_pairs(raw)))


def _pairs(raw: bytes) -> list[tuple[str, str]]:
    """A raw query string's (name, value) pairs, read with Starlette's own call (``QueryParams`` holds the
    same pairs, `QueryParams.multi_items`): the standard library's reading of a query string."""
    return parse_qsl(raw.decode("latin-1"), keep_blank_values=True)


def read_query(raw: bytes, pairs: Iterable[tuple[str, str]] | None = None) -> tuple[ResolveRequest, str]:
    """The request and the answer's format of a raw query string (``pairs``: its pairs, where the framework
    has read them already); an unknown parameter, a malformed value or format is an InvalidRequestError in
    the API's words."""
    try:
        given, repeated = _given(_pairs(raw) if pairs is None else pairs)
        for name in given:
            if name not in KNOWN:
                raise unknown_parameter(name, KNOWN, "/v1/resolve")
        fmt_text = given.get("format")
        fmt = FORMATS.get((fmt_text or "json").strip().lower())
        if fmt is None:
            raise InvalidRequestError(
                f"format {fmt_text!r} is not an answer format",
                hint=f"use one of: {', '.join(sorted(FORMATS))}",
                causes=[Cause(constraint=f"format {fmt_text}", origin="request")],
            )
        return ResolveRequest.from_query(_values(given, repeated)), fmt
    except InvalidRequestError as err:
        raise in_api_words(err) from None


def _given(pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The last value of each name, and every value of a name given more than once (in order)."""
    given: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    for key, text in pairs:
        if key in given:
            repeated.setdefault(key, [given[key]]).append(text)
        given[key] = text
    return given, repeated


#: (name, longest value, repeatable) of each parameter
_LIMITS = tuple((p.name, p.max_length, p.repeatable) for p in PARAMETERS)


def _values(given: dict[str, str], repeated: dict[str, list[str]]) -> dict[str, str | list[str] | None]:
    values: dict[str, str | list[str] | None] = {}
    for name, limit, repeatable in _LIMITS:
        value = given.get(name)
        if repeatable and name in repeated:
            if len(repeated[name]) > MAX_REPEATS:
                raise InvalidRequestError(
                    f"invalid query parameter {name}: given more than {MAX_REPEATS} times",
                    hint=f"name at most {MAX_REPEATS} packages",
                    causes=[Cause(constraint=f"at most {MAX_REPEATS} values", origin=f"query parameter {name}")],
                )
            longest = max(repeated[name], key=len)
            if len(longest) > limit:
                value = longest  # refused below, like a single over-long value
            else:
                values[name] = list(repeated[name])
                continue
        if value is not None and len(value) > limit:
            raise InvalidRequestError(
                f"invalid query parameter {name}: longer than {limit} characters",
                hint="fix the named parameter; /docs describes every parameter",
                causes=[Cause(constraint=f"at most {limit} characters", origin=f"query parameter {name}")],
            )
        values[name] = value
    return values
