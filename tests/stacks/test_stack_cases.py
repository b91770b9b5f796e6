"""Golden stack cases (`resolve --with`) over the bundled data: tests/data/stack_cases/*.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.install_commands import pip_commands
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import resolution_from_json, resolution_to_json
from compat_service.domain.resolver.resolution_schema import ResolutionBody
from compat_service.domain.stacks.catalog import load_catalog
from compat_service.domain.stacks.resolve import resolve_stack

CASES_DIR = Path(__file__).resolve().parent.parent / "data" / "stack_cases"
MATRIX = load_matrix_cached()
CATALOG = load_catalog()


def _cases() -> list[Any]:
    return [
        pytest.param(case, id=f"{path.stem}:{case['id']}")
        for path in sorted(CASES_DIR.glob("*.yaml"))
        for case in yaml.safe_load(path.read_text())["cases"]
    ]


def _request(raw: dict[str, Any]) -> ResolveRequest:
    strings: dict[str, Any] = {("with_" if k == "with" else k): v if k == "with" or isinstance(v, bool) else str(v)
                               for k, v in raw.items()}
    return ResolveRequest.from_strings(**strings)


@pytest.mark.parametrize("case", _cases())
def test_stack_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(AccelenvError) as caught:
            resolve_stack(_request(case["request"]), MATRIX, None, CATALOG)
        err = caught.value
        assert err.code == case["error"], err.message
        assert err.causes, "an error names what clashed"
        assert case["message_include"] in err.message, err.message
        for text in case.get("alternatives_include", []):
            assert any(text in a.description for a in err.alternatives), [a.description for a in err.alternatives]
        return
    res = resolve_stack(_request(case["request"]), MATRIX, None, CATALOG)
    expect = case["expect"]
    assert {p.name: p.version for p in res.stack} == expect["stack"]
    for name, version in expect.get("pins", {}).items():
        assert res.pins.get(name, "").split("+")[0] == str(version), res.pins
    for name, origin in expect.get("stack_origin", {}).items():
        assert next(p.origin for p in res.stack if p.name == name) == origin
    if "backend" in expect:
        assert res.backend == expect["backend"]
    if "status" in expect:
        assert res.status == expect["status"], res.unknowns
    for name in expect.get("requirements", []):
        assert name in [r.name for r in res.requirements], res.requirements
    for text in expect.get("requirement_detail_include", []):
        assert any(text in r.detail for r in res.requirements), res.requirements
    for text in expect.get("warnings_include", []):
        assert any(text in w for w in res.warnings), res.warnings
    for text in expect.get("unknowns_include", []):
        assert any(text in u for u in res.unknowns), res.unknowns
        assert res.status == "rests-on-unknown"
    for text in expect.get("urls_include", []):
        assert any(p.url and p.url.endswith(text) for p in res.stack), [p.url for p in res.stack]
    for text in expect.get("reasons_include", []):
        assert any(text in r.detail for r in res.reasons), [r.detail for r in res.reasons]
    if expect.get("stack_after_torch_index"):
        first, *rest = pip_commands(res)
        assert res.index_url and first.endswith(f"{res.index_option} {res.index_url}")
        last = rest[-1].split()
        assert all(f"{p.name}=={p.version}" in last for p in res.packages)
        assert all(f"{p.name}=={p.version}" in last for p in res.stack)
    if "commands_include" in expect:
        commands = pip_commands(res)
        positions = [commands.index(c) for c in expect["commands_include"]]
        assert positions == sorted(positions), commands
    # every package of the stack names where it comes from and why; the JSON answer fits the published schema
    assert all(p.reason and p.sources for p in res.stack)
    body = resolution_to_json(res)
    assert ResolutionBody.model_validate(body).stack[0].name == res.stack[0].name
    assert resolution_from_json(body) == res
