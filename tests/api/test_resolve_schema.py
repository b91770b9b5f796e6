"""The resolution's published JSON Schema, its pydantic model and the fast path's plain codec agree.

Regenerate the file after changing compat_service/domain/resolver/resolution_schema.py:
    .venv/bin/python -m compat_service.domain.resolver.resolution_schema
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from fastapi.testclient import TestClient

from compat_service.domain.evidence.lookup import CellVerdict
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.resolution_schema import (
    SCHEMA_FILE,
    ResolutionBody,
    resolution_json_schema,
)
from compat_service.domain.resolver.stages import resolve

CASES_DIR = Path(__file__).resolve().parent.parent / "data" / "resolver_cases"


def _requests() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text())["cases"]:
            if "error" not in case:
                strings = {("with_" if k == "with" else k): str(v) for k, v in case["request"].items()}
                params.append(pytest.param(strings, id=f"{path.stem}:{case['id']}"))
    return params


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


def test_schema_file_matches_the_model() -> None:
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == resolution_json_schema()


@pytest.mark.parametrize("strings", _requests())
def test_every_golden_resolution_fits_the_published_schema(
    strings: dict[str, Any], matrix: InMemoryMatrix
) -> None:
    body = resolution_to_json(resolve(ResolveRequest.from_strings(**strings), matrix))
    jsonschema.validate(body, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    assert ResolutionBody.model_validate(body).model_dump(mode="json") == body


class _AllVerified:
    """Evidence as a database holding passing reports would give it (the lookup protocol's boundary)."""

    def status_for(self, torch_version: str, build: str, python: str, os: str, arch: str) -> CellVerdict:
        return CellVerdict(status="verified", hosts=2, detail="required checks passed on 2 distinct host(s)")

    def verified_cells(self, os: str, arch: str) -> list[tuple[str, str, str]]:
        return []


def test_a_resolution_with_evidence_fits_the_schema(matrix: InMemoryMatrix) -> None:
    request = ResolveRequest.from_strings(backend="cpu", python="3.11", require_verified=True)
    body = resolution_to_json(resolve(request, matrix, _AllVerified()))
    detail = "required checks passed on 2 distinct host(s)"
    assert body["evidence"] == {"status": "verified", "hosts": 2, "detail": detail}
    jsonschema.validate(body, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def test_openapi_publishes_the_response_schema_and_the_one_parameter_table(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/resolve"]["get"]
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert spec["components"]["schemas"][ref.rsplit("/", 1)[1]]["title"] == "Resolution"
    table = [p for p in operation["parameters"] if p["name"] != "format"]
    # a repeatable parameter (with=) is an array whose items carry the length limit
    lengths = [(p["name"], p["schema"].get("items", p["schema"])["maxLength"]) for p in table]
    assert lengths == [(p.name, p.max_length) for p in PARAMETERS]
    repeatable = {p.name for p in PARAMETERS if p.repeatable}
    assert repeatable and {p["name"] for p in table if p["schema"]["type"] == "array"} == repeatable
    fmt = next(p for p in operation["parameters"] if p["name"] == "format")
    assert {"json", "pip", "requirements", "uv", "conda", "dockerfile"} <= set(fmt["schema"]["enum"])


def test_the_cli_flags_are_the_parameter_table() -> None:
    from cli.resolve_cmd import build_parser

    flags = {a.option_strings[0] for a in build_parser()._actions if a.option_strings}
    assert {p.flag for p in PARAMETERS} <= flags
    # the CLI's own: where the answer comes from, how it is printed, and a local variants JSON file to explain
    # (the API's variants explanation is its own route, GET /v1/variants/explain)
    cli_only = {"-h", "--format", "--server", "--database", "--matrix", "--explain-variants"}
    assert flags - {p.flag for p in PARAMETERS} == cli_only
