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
from compat_service.domain.matrix.loading.loader import load_matrix_rows
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


WIDE = {"torch": ">=2.0", "family": "cpu,cuda,rocm,xpu", "arch": "x86_64,aarch64"}


def test_over_githubs_limits_is_a_422_naming_them_and_shards_fit(client: TestClient) -> None:
    over = client.get("/v1/ci-matrix", params=WIDE)
    assert over.status_code == 422 and over.json()["code"] == "matrix-too-large"
    assert "256 jobs per matrix" in over.json()["message"] and "shard=1/" in over.json()["hint"]
    first = client.get("/v1/ci-matrix", params={**WIDE, "shard": "1/256"}).json()
    needed = first["limits"]["shards_needed"]
    names: list[str] = []
    for index in range(1, needed + 1):
        body = client.get("/v1/ci-matrix", params={**WIDE, "shard": f"{index}/{needed}"}).json()
        assert len(body["include"]) <= 256 and body["limits"]["output_bytes"] <= 1_000_000
        names += [c["name"] for c in body["include"]]
    assert len(names) == len(set(names)) == first["cells_total"] >= 600
    for bad in ({"shard": "0/2"}, {"shard": "x"}, {"max_cells": "300"}, {"max_cells": "-1"}):
        refused = client.get("/v1/ci-matrix", params=bad)
        assert refused.status_code == 422 and next(iter(bad)) in refused.json()["message"], bad


def test_unknown_is_listed_apart_and_latest_keeps_a_cpu_cell(client: TestClient) -> None:
    body = client.get("/v1/ci-matrix", params={"family": "cpu", "with": "none"}).json()
    assert body["include"], "torch=latest with family=cpu must not be empty while a release is being learned"
    for entry in body["unknown"]:
        assert entry["status"] == "unknown" and "does not know whether" in entry["reason"]
    assert all(e["code"] != "backend-unavailable" for e in body["excluded"])


def test_head_answers_every_get_route_without_a_body(client: TestClient) -> None:
    for path, params in (("/v1/ci-matrix", QUERY), ("/v1/torch", {}), ("/v1/matrix", {"torch": "2.3"}),
                         ("/v1/resolve", {"torch": "2.3", "python": "3.11"}), ("/healthz", {})):
        got = client.get(path, params=params)
        head = client.head(path, params=params)
        assert head.status_code == got.status_code, path
        assert head.content == b"" and head.headers.get("etag") == got.headers.get("etag"), path
        assert head.headers["content-length"] == got.headers["content-length"], path


def test_large_bodies_are_gzipped_when_asked(client: TestClient) -> None:
    plain = client.get("/v1/ci-matrix", params=QUERY, headers={"Accept-Encoding": "identity"})
    zipped = client.get("/v1/ci-matrix", params=QUERY, headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers
    assert zipped.headers["content-encoding"] == "gzip" and "Accept-Encoding" in zipped.headers["vary"]
    assert zipped.json() == plain.json()
    assert int(zipped.headers["content-length"]) < len(plain.content) / 3
    small = client.get("/v1/resolve", params={"torch": "2.3", "python": "3.11"}, headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers


def test_invalid_values_are_422_naming_the_parameter(client: TestClient) -> None:
    for path, params, named in (
        ("/v1/matrix", {"build": "zzz-bad"}, "build"),
        ("/v1/matrix", {"arch": "sparc64"}, "arch"),
        ("/v1/ci-matrix", {"arch": "sparc64"}, "arch"),
        ("/v1/ci-matrix", {"with": "zzz-bad"}, "with"),
    ):
        got = client.get(path, params=params)
        assert got.status_code == 422, (path, params, got.text)
        assert got.json()["message"].startswith(named) or f"{named} " in got.json()["message"], got.json()
