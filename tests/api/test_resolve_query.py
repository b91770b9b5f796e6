"""`GET /v1/resolve` reads its query string itself (routes/resolve.py): it must read it exactly as
Starlette's QueryParams does, which the other routes and the previous handler used."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import QueryParams

from compat_service.api.inputs.resolve_query import query_strings, read_query
from compat_service.api.inputs.strict_query import in_api_words
from compat_service.domain.errors import InvalidRequestError
from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest


def starlette_reading(raw: bytes) -> dict[str, str | list[str] | None]:
    """Starlette's reading; a repeatable parameter given more than once keeps every value (getlist)."""
    params = QueryParams(raw)
    return {
        p.name: params.getlist(p.name) if p.repeatable and len(params.getlist(p.name)) > 1 else params.get(p.name)
        for p in PARAMETERS
    }


CASES = [
    b"",
    b"torch=2.3&python=3.10&backend=cu121",
    b"with=torchvision%2Ctorchaudio&os=linux",
    b"torch=%3E%3D2.2%2C%3C2.5",  # >=2.2,<2.5 escaped
    b"torch=>=2.2,<2.5",  # the same unescaped
    b"python=3.1+0&torch=2+3",  # '+' is a space
    b"torch=2.3&torch=2.4",  # the last of a repeated name wins
    b"with=vllm&with=flash-attn&with=torchvision",  # a repeatable name keeps every value, in order
    b"torch=&python",  # blank values kept, a bare name is blank
    b"&&torch=2.3&&",
    b"torch=%zz&python=%E2%82%AC&os=%ff",  # a malformed escape stays; invalid UTF-8 is replaced
    b"t%6Frch=2.3",  # an escaped name
    b"torch=2.3=4",  # only the first '=' splits
    "python=3.10&os=l\u00efnux".encode("latin-1"),  # raw non-ASCII bytes read as latin-1
    b"torch=2.3;python=3.10",  # ';' is not a separator
]


@pytest.mark.parametrize("raw", CASES)
def test_reads_the_query_as_starlette_does(raw: bytes) -> None:
    assert query_strings(raw) == starlette_reading(raw)


def _outcome(parse: Callable[[], object]) -> object:
    """The request parsed, or the message (in the API's words) of the InvalidRequestError refusing it."""
    try:
        return parse()
    except InvalidRequestError as err:
        return in_api_words(err).args


@pytest.mark.parametrize("raw", CASES)
def test_the_route_parses_the_request_the_table_reading_gives(raw: bytes) -> None:
    # read_query, with the pairs the framework read or without, is the domain's one parse of the table's reading
    expected = _outcome(lambda: ResolveRequest.from_query(query_strings(raw)))
    assert _outcome(lambda: read_query(raw, QueryParams(raw).multi_items())[0]) == expected
    assert _outcome(lambda: read_query(raw)[0]) == expected


_names = st.sampled_from([p.name for p in PARAMETERS] + ["x", "t%6Frch", "with+", ""])
_values = st.text(alphabet="ab2.3,<>=%+&;cu1e0 \u00e9", max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_names, _values), max_size=6), st.booleans())
def test_reads_any_query_as_starlette_does(pairs: list[tuple[str, str]], trailing_amp: bool) -> None:
    raw = "&".join(f"{k}={v}" for k, v in pairs) + ("&" if trailing_amp else "")
    encoded = raw.encode("utf-8")
    try:
        ours = query_strings(encoded)
    except InvalidRequestError:
        # over-long values are refused; Starlette has no limit, so only check that one was over it
        read = starlette_reading(encoded).values()
        assert any(
            max((len(x) for x in (v if isinstance(v, list) else [v or ""])), default=0) > p.max_length
            for p, v in zip(PARAMETERS, read)
        )
        return
    assert ours == starlette_reading(encoded)


def test_an_over_long_value_is_refused_naming_the_parameter() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        query_strings(b"python=" + b"3" * 200)
    assert "python" in caught.value.message
