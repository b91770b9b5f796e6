"""The OpenAPI document as published can be fuzzed (issue 14, item 6): every reference resolves from the
document root, every status an operation answers with is declared, with the content type it is served as,
and a method a path does not take is a 405."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def test_every_reference_resolves_from_the_root(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    refs = _refs(document)
    assert any("ProbeReport" in r or "Environment" in r for r in refs)
    for ref in set(refs):
        assert _resolve(document, ref) is not None, ref
    assert "$defs" not in str(document)


@pytest.mark.parametrize(
    ("path", "method", "statuses"),
    [
        ("/v1/resolve", "get", {"200", "404", "409", "422"}),
        ("/v1/torch/{version}", "get", {"200", "404", "422"}),
        ("/readyz", "get", {"200", "503"}),
        ("/v1/matrix", "get", {"200", "422", "503"}),
        ("/v1/reports", "post", {"201", "200", "401", "403", "409", "413", "422", "503"}),
    ],
)
def test_operations_declare_what_they_answer(client: TestClient, path: str, method: str, statuses: set[str]) -> None:
    declared = set(client.get("/openapi.json").json()["paths"][path][method]["responses"])
    assert statuses <= declared, statuses - declared


def test_answers_carry_their_declared_status_and_type(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    missing = client.get("/v1/torch/0.0.0")
    assert missing.status_code == 404 and missing.json()["code"] == "not-found"
    unsat = client.get("/v1/resolve", params={"torch": "2.3", "python": "3.13"})
    assert unsat.status_code in (409, 422), unsat.text
    assert str(unsat.status_code) in document["paths"]["/v1/resolve"]["get"]["responses"]
    schema = client.get("/v1/schemas/probe-report")
    served = schema.headers["content-type"].split(";")[0]
    assert served == "application/schema+json"
    assert set(document["paths"]["/v1/schemas/probe-report"]["get"]["responses"]["200"]["content"]) == {served}


def test_a_method_the_path_does_not_take_is_405(client: TestClient) -> None:
    res = client.get("/v1/reports/batch")
    assert res.status_code == 405, res.text
    assert res.json()["code"] == "method-not-allowed"
    assert "POST" in res.headers["allow"]
    assert client.get("/v1/reports/not-a-uuid").status_code == 404


def test_the_service_authentication_and_every_operation_are_described(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    info = document["info"]["description"]
    assert "Authentication" in info and "Bearer" in info and "report" in info
    assert "accelenv token create" in document["components"]["securitySchemes"]["HTTPBearer"]["description"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary") and operation.get("description"), (method, path)
            for parameter in operation.get("parameters", []):
                if parameter["in"] in ("query", "path") and parameter["name"] not in ("limit", "offset"):
                    assert "example" in parameter or "examples" in parameter, (method, path, parameter["name"])
