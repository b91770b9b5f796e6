"""Strict query strings (api/inputs/strict_query.py): an unknown parameter is a 422 naming it and the nearest known
one on every API route; `/v1/resolve?format=` answers the CLI's text; API errors speak the API's names."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve

TYPOS = [
    ("/v1/resolve", {"pyton": "3.11"}, "python"),
    ("/v1/resolve", {"torch": "2.3", "fromat": "pip"}, "format"),
    ("/v1/matrix", {"backedn": "cuda"}, "backend"),
    ("/v1/matrix", {"famly": "cuda"}, "family"),
    ("/v1/torch", {"minr": "2.3"}, "minor"),
    ("/v1/evidence", {"torch": "2.3.1", "python": "3.11", "os": "linux", "arch": "x86_64", "backend": "cpu",
                      "buidl": "cpu"}, "build"),
    ("/v1/ci-matrix", {"pytohn": "3.11"}, "python"),
    ("/healthz", {"verbose": "1"}, None),
]


@pytest.mark.parametrize(("path", "params", "nearest"), TYPOS, ids=[f"{p}-{list(q)[-1]}" for p, q, _ in TYPOS])
def test_an_unknown_parameter_is_refused_naming_the_nearest(
    client: TestClient, path: str, params: dict[str, str], nearest: str | None
) -> None:
    res = client.get(path, params=params)
    assert res.status_code == 422, res.text
    body = res.json()
    unknown = list(params)[-1]
    assert body["code"] == "invalid-request" and f"unknown query parameter {unknown!r}" in body["message"]
    if nearest is not None:
        assert f"did you mean {nearest!r}" in body["message"]
    assert path in body["hint"]


def test_a_typo_no_longer_answers_for_the_default(client: TestClient) -> None:
    assert client.get("/v1/resolve", params={"python": "3.11"}).status_code == 200
    assert client.get("/v1/resolve", params={"pyton": "3.11"}).status_code == 422


@pytest.mark.parametrize("fmt", ["pip", "requirements", "uv", "conda", "dockerfile", "docker", "text"])
def test_format_answers_the_cli_text(client: TestClient, fmt: str) -> None:
    params = {"torch": "2.3", "python": "3.11", "backend": "cu121", "os": "linux", "arch": "x86_64"}
    res = client.get("/v1/resolve", params={**params, "format": fmt})
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/plain")
    expected = resolve(ResolveRequest.from_query(dict(params)), InMemoryMatrix(load_matrix_rows()))
    assert res.text == render(expected, "docker" if fmt == "dockerfile" else fmt)


def test_json_answer_carries_the_install_commands(client: TestClient) -> None:
    body = client.get("/v1/resolve", params={"torch": "2.3", "python": "3.11", "backend": "cu118"}).json()
    pip = client.get("/v1/resolve", params={"torch": "2.3", "python": "3.11", "backend": "cu118",
                                            "format": "pip"}).text
    assert body["install"]["pip"] and all(c in pip for c in body["install"]["pip"])
    assert all(c.startswith("uv pip install ") for c in body["install"]["uv"])


def test_bad_format_and_docker_for_windows_are_422(client: TestClient) -> None:
    bad = client.get("/v1/resolve", params={"format": "msi"})
    assert bad.status_code == 422 and "format 'msi'" in bad.json()["message"]
    win = client.get("/v1/resolve", params={"os": "windows", "format": "docker"})
    assert win.status_code == 422 and "--format" not in win.text and "format docker" in win.json()["message"]


def test_errors_speak_api_names(client: TestClient) -> None:
    res = client.get("/v1/resolve", params={"torch": "2.4", "python": "3.13", "require_verified": "true"})
    text = res.text
    assert res.status_code in (409, 422) and "--" not in text.replace("--index-url", "")
    bad = client.get("/v1/resolve", params={"gpu_arch": "sm_x"}).json()
    assert bad["message"].startswith("gpu_arch ") and bad["causes"][0]["constraint"].startswith("gpu_arch ")


def test_matrix_family_is_the_build_family_and_backend_the_evidence(client: TestClient) -> None:
    cuda = client.get("/v1/matrix", params={"family": "cuda", "torch": ">=2.3", "limit": 500}).json()
    assert cuda["total"] > 0
    assert all(c["family"] == "cuda" and c["torch_build"].startswith("cu") for c in cuda["items"])
    assert all(c["build_runtime"] and c["torch_build"] == "cu" + c["build_runtime"].replace(".", "")
               for c in cuda["items"])
    from packaging.version import Version

    assert all(Version(c["torch_version"]) >= Version("2.3") for c in cuda["items"])
    ranged = client.get("/v1/matrix", params={"torch": ">=2.2,<2.4", "family": "cpu", "limit": 500}).json()
    assert {c["torch_version"][:3] for c in ranged["items"]} == {"2.2", "2.3"}
    # backend is the evidence's device backend (a declared cell without evidence has none and stays listed)
    by_backend = client.get("/v1/matrix", params={"backend": "cuda", "limit": 500}).json()
    assert by_backend["total"] > cuda["total"]
    bad = client.get("/v1/matrix", params={"torch": "two"})
    assert bad.status_code == 422 and "torch" in bad.json()["message"]


@pytest.mark.parametrize("params", [{"torch": "2.3", "python": "3.13"}, {"pyton": "3"}, {"torch": "two"},
                                    {"torch": "2.3", "backend": "cu126", "format": "pip"}])
def test_resolve_answers_errors_through_the_one_handler(client: TestClient, params: dict[str, str]) -> None:
    """/v1/resolve's errors are the app's one error handler's bytes (``error_json``), with the registry's status,
    the request id, also when the error comes from the cache."""
    import json as stdjson

    from compat_service.domain.errors import ERRORS, ErrorBody

    for _ in range(2):  # the second answer comes from the cache
        res = client.get("/v1/resolve", params=params)
        body = res.json()
        assert res.status_code == ERRORS[body["code"]].http_status
        assert res.headers["content-type"] == "application/json"
        assert body["request_id"] == res.headers["x-request-id"]
        assert list(body) == ["code", "message", "hint", "causes", "alternatives", "request_id"]
        # compact, UTF-8 JSON, as JSONResponse renders it, holding exactly ErrorBody's dump
        assert res.content == stdjson.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        assert {k: v for k, v in body.items() if k != "request_id"} == ErrorBody.model_validate(body).model_dump()
