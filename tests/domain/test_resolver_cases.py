"""Golden resolver cases over the bundled matrix: tests/data/resolver_cases/*.yaml (request -> answer or error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve

CASES_DIR = Path(__file__).resolve().parent.parent / "data" / "resolver_cases"


def _cases() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text())["cases"]:
            params.append(pytest.param(case, id=f"{path.stem}:{case['id']}"))
    return params


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


def _request(raw: dict[str, Any]) -> ResolveRequest:
    strings: dict[str, Any] = {("with_" if k == "with" else k): str(v) for k, v in raw.items()}
    return ResolveRequest.from_strings(**strings)


@pytest.mark.parametrize("case", _cases())
def test_golden_case(case: dict[str, Any], matrix: InMemoryMatrix) -> None:
    if "error" in case:
        with pytest.raises(AccelenvError) as caught:
            resolve(_request(case["request"]), matrix)
        err = caught.value
        assert err.code == case["error"], err.message
        assert err.message and err.causes, "an error names what clashed"
        if "message_include" in case:
            assert case["message_include"] in err.message + " " + (err.hint or ""), (err.message, err.hint)
        for text in case.get("hint_include", []):
            assert text in (err.hint or ""), err.hint
        if "alternatives_first" in case:
            first = {k: str(v) for k, v in case["alternatives_first"].items()}
            assert err.alternatives and first.items() <= {
                k: str(v) for k, v in err.alternatives[0].request.items()
            }.items(), [a.request for a in err.alternatives]
        for origin in case.get("causes_include", []):
            assert any(origin in c.origin for c in err.causes), [c.origin for c in err.causes]
        for wanted in case.get("alternatives_include", []):
            wanted = {k: str(v) for k, v in wanted.items()}
            assert any(
                wanted.items() <= {k: str(v) for k, v in a.request.items()}.items() for a in err.alternatives
            ), (
                wanted,
                [a.request for a in err.alternatives],
            )
        return
    res = resolve(_request(case["request"]), matrix)
    expect = case["expect"]
    for name, version in expect.get("pins", {}).items():
        assert res.pins.get(name) == str(version), res.pins
    for name in expect.get("absent", []):
        assert name not in res.pins
    if "backend" in expect:
        assert res.backend == expect["backend"]
    if "family" in expect:
        assert res.family == expect["family"]
    if "python" in expect:
        assert res.python == str(expect["python"]), res.python
    if "index" in expect:
        label = expect["index"]
        variant = matrix.build_variant(label) if label else None
        assert res.index_url == (variant.index_url if variant else None)
        assert res.default_index_has_variant == (label is None)
    if "index_option" in expect:
        assert res.index_option == expect["index_option"]
    assert res.status == expect.get("status", res.status)
    for text in expect.get("unknowns_include", []):
        assert any(text in u for u in res.unknowns), res.unknowns
    for name in expect.get("no_deps", []):
        assert name in res.no_deps, res.no_deps
    for text in expect.get("warnings_include", []):
        assert any(text in w for w in res.warnings), res.warnings
    for text in expect.get("warnings_exclude", []):
        assert not any(text in w for w in res.warnings), res.warnings
    # each warning says its thing once
    assert len(set(res.warnings)) == len(res.warnings), res.warnings
    for text in expect.get("requirements_include", []):
        assert any(text in f"{q.name} >= {q.version} ({q.detail})" for q in res.requirements), res.requirements
    for text in expect.get("requirements_exclude", []):
        assert not any(text in f"{q.name} ({q.detail})" for q in res.requirements), res.requirements
    for text in expect.get("reasons_include", []):
        assert any(text in r.detail for r in res.reasons), [r.detail for r in res.reasons]
    if "backend_not" in expect:
        assert res.backend != expect["backend_not"], res.backend
    assert res.reasons and all(r.detail for r in res.reasons)
