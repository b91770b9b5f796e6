"""`GET /v1/ci-matrix` answers what the domain builds (and `accelenv ci matrix` prints), cached and ETagged;
the issue's query returns only combinations that exist."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from packaging.version import Version
from typer.testing import CliRunner

from cli.main import app as cli_app
from compat_service.api.deps import state_of
from compat_service.domain.ci.job_matrix import CiMatrixRequest, ci_matrix
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loader import load_matrix_rows
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve

QUERY = {"torch": ">=2.3", "family": "cuda", "os": "linux"}


def test_the_issue_query_returns_cells_the_resolver_accepts(client: TestClient) -> None:
    res = client.get("/v1/ci-matrix", params=QUERY)
    assert res.status_code == 200 and res.headers["content-type"] == "application/json"
    body = res.json()
    matrix = InMemoryMatrix(load_matrix_rows())
    assert body == ci_matrix(CiMatrixRequest.from_strings(**QUERY), matrix)
    assert body["include"] and body["excluded"]
    for cell in body["include"]:
        assert cell["family"] == "cuda" and Version(cell["torch"]) >= Version("2.3")
        request = ResolveRequest.from_strings(torch=cell["torch"], python=cell["python"], os=cell["os"],
                                              arch=cell["arch"], backend=cell["build"])
        assert resolve(request, matrix).pins == cell["pins"]


def test_cli_prints_the_same_matrix(client: TestClient) -> None:
    args = ["ci", "matrix", "--torch", ">=2.3", "--family", "cuda", "--os", "linux", "--mode", "pr"]
    result = CliRunner().invoke(cli_app, args, env={"ACCELENV_SERVER": "", "ACCELENV_MATRIX_PATH": ""})
    assert result.exit_code == 0, result.output
    api = client.get("/v1/ci-matrix", params={**QUERY, "mode": "pr"}).json()
    assert json.loads(result.stdout) == api
    assert {c["role"] for c in api["include"]} >= {"oldest", "newest"}
    only = CliRunner().invoke(cli_app, [*args, "--include-only"], env={"ACCELENV_SERVER": ""})
    assert json.loads(only.stdout) == {"include": api["include"]}


def test_cli_through_the_service_client(client: TestClient) -> None:
    from cli.service_client import ServiceClient

    body = ServiceClient("http://testserver", client=client).ci_matrix({**QUERY, "mode": "pr"})
    assert body == client.get("/v1/ci-matrix", params={**QUERY, "mode": "pr"}).json()


def test_cached_and_etagged(client: TestClient) -> None:
    first = client.get("/v1/ci-matrix", params=QUERY)
    size = len(state_of(client.app).ci_matrix_cache)
    again = client.get("/v1/ci-matrix", params=QUERY)
    assert again.content == first.content
    assert len(state_of(client.app).ci_matrix_cache) == size
    etag = first.headers["etag"]
    assert client.get("/v1/ci-matrix", params=QUERY, headers={"If-None-Match": etag}).status_code == 304


def test_errors_name_the_parameter_in_api_words(client: TestClient) -> None:
    bad = client.get("/v1/ci-matrix", params={"torch": "two"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid-request"
    assert "torch 'two'" in bad.json()["message"] and "--torch" not in bad.text
    typo = client.get("/v1/ci-matrix", params={"famly": "cuda"})
    assert typo.status_code == 422 and "'famly'" in typo.json()["message"] and "'family'" in typo.json()["message"]
    none = client.get("/v1/ci-matrix", params={"torch": ">=9"})
    assert none.status_code == 409 and none.json()["code"] == "torch-not-found"
