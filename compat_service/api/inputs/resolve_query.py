"""`GET /v1/resolve`'s query string: its parameters (the domain's one table, ``PARAMETERS``, plus ``format``),
read as Starlette reads a query string, refused with the API's words when a name is unknown, a value too long
or a format not one of the answer's forms."""

from __future__ import annotations

from collections.abc import Sequence
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
    pairs = _pairs(raw)
    values = _values(dict(pairs), pairs)
    return {name: values.get(name) for name, _ in _LIMITS}


def _pairs(raw: bytes) -> list[tuple[str, str]]:
    """A raw query string's (name, value) pairs, read with Starlette's own call (``QueryParams`` holds the
    same pairs, `QueryParams.multi_items`): the standard library's reading of a query string."""
    return parse_qsl(raw.decode("latin-1"), keep_blank_values=True)


def read_query(raw: bytes, pairs: Sequence[tuple[str, str]] | None = None) -> tuple[ResolveRequest, str]:
    """The request and the answer's format of a raw query string (``pairs``: its pairs, where the framework
    has read them already); an unknown parameter, a malformed value or format is an InvalidRequestError in
    the API's words."""
    try:
        if pairs is None:
            pairs = _pairs(raw)
        given: dict[str, str | list[str]] = dict(pairs)  # the last value of each name
        if not given.keys() <= KNOWN:
            raise unknown_parameter(next(name for name in given if name not in KNOWN), KNOWN, "/v1/resolve")
        fmt_text = given.get("format")
        fmt = FORMATS.get(fmt_text.strip().lower()) if isinstance(fmt_text, str) and fmt_text else "json"
        if fmt is None:
            raise InvalidRequestError(
                f"format {fmt_text!r} is not an answer format",
                hint=f"use one of: {', '.join(sorted(FORMATS))}",
                causes=[Cause(constraint=f"format {fmt_text}", origin="request")],
            )
        return ResolveRequest.from_query(_values(given, pairs)), fmt
    except InvalidRequestError as err:
        raise in_api_words(err) from None


#: (name, longest value) of each parameter, in the table's order
_LIMITS = tuple((p.name, p.max_length) for p in PARAMETERS)
_REPEATABLE = tuple(p.name for p in PARAMETERS if p.repeatable)


def _values(given: dict[str, str | list[str]], pairs: Sequence[tuple[str, str]]) -> dict[str, str | list[str]]:
    """``given`` (the last value of each name), with a repeatable parameter given more than once as every value
    of it, in order; a value over its parameter's limit, or a repeatable one given more than ``MAX_REPEATS``
    times, is an InvalidRequestError naming the first such parameter of the table."""
    if len(given) < len(pairs):  # a name given more than once
        _keep_repeats(given, pairs)
    for name, limit in _LIMITS:
        value = given.get(name)
        if value is None:
            continue
        if isinstance(value, list):
            if len(value) > MAX_REPEATS:
                raise InvalidRequestError(
                    f"invalid query parameter {name}: given more than {MAX_REPEATS} times",
                    hint=f"name at most {MAX_REPEATS} packages",
                    causes=[Cause(constraint=f"at most {MAX_REPEATS} values", origin=f"query parameter {name}")],
                )
            value = max(value, key=len)  # refused below, like a single over-long value
        if len(value) > limit:
            raise InvalidRequestError(
                f"invalid query parameter {name}: longer than {limit} characters",
                hint="fix the named parameter; /docs describes every parameter",
                causes=[Cause(constraint=f"at most {limit} characters", origin=f"query parameter {name}")],
            )
    return given


def _keep_repeats(given: dict[str, str | list[str]], pairs: Sequence[tuple[str, str]]) -> None:
    """Each repeatable parameter given more than once: every value of it, in order, in ``given``."""
    for name in _REPEATABLE:
        texts = [text for key, text in pairs if key == name]
        if len(texts) > 1:
            given[name] = texts
