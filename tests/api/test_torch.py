"""`GET /v1/torch` and `GET /v1/torch/{version}` on the loaded bundled matrix (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from packaging.version import Version


def test_lists_releases_newest_first_with_wheels_and_python(client: TestClient) -> None:
    res = client.get("/v1/torch", params={"limit": 500})
    assert res.status_code == 200
    body = res.json()
    versions = [item["version"] for item in body["items"]]
    assert body["total"] == len(versions) > 10
    assert versions == sorted(versions, key=Version, reverse=True)
    assert "2.3.1" in versions
    item = next(i for i in body["items"] if i["version"] == "2.3.1")
    assert item["minor"] == "2.3"
    assert {v["label"] for v in item["variants"]} >= {"cpu", "cu121"}
    assert any(p["version"] == "3.11" for p in item["python"])


@pytest.mark.parametrize(
    "params",
    [
        {"minor": "2.3"},
        {"minor": "2.3", "python": "3.11", "backend": "cu121", "platform": "linux-x86_64"},
        {"backend": "rocm"},
        {"python": "3.13t"},
        {"platform": "macos-arm64"},
    ],
    ids=["minor", "minor-python-label-platform", "family", "free-threaded", "platform"],
)
def test_filters_keep_only_matching_releases(client: TestClient, params: dict[str, str]) -> None:
    body = client.get("/v1/torch", params={**params, "limit": 500}).json()
    assert body["items"], f"no release matches {params}"
    platform = params.get("platform")
    for item in body["items"]:
        if "minor" in params:
            assert item["minor"] == params["minor"]
        if "backend" in params:
            assert any(
                params["backend"] in (v["label"], v["family"])
                and (platform is None or platform in v["platforms"])
                for v in item["variants"]
            )
        if "python" in params:
            assert any(
                p["version"] == params["python"] and (platform is None or platform in p["platforms"])
                for p in item["python"]
            )
        if platform:
            assert any(platform in v["platforms"] for v in item["variants"])


def test_filters_narrow_the_total(client: TestClient) -> None:
    everything = client.get("/v1/torch").json()["total"]
    narrowed = client.get("/v1/torch", params={"minor": "2.3", "backend": "cu121"}).json()["total"]
    nothing = client.get("/v1/torch", params={"minor": "0.1"}).json()
    assert 0 < narrowed < everything
    assert nothing["total"] == 0 and nothing["items"] == []


def test_pages_partition_the_list(client: TestClient) -> None:
    full = [i["version"] for i in client.get("/v1/torch", params={"limit": 500}).json()["items"]]
    pages = [
        client.get("/v1/torch", params={"limit": 4, "offset": off}).json() for off in range(0, len(full), 4)
    ]
    assert [v["version"] for page in pages for v in page["items"]] == full
    assert all(page["total"] == len(full) for page in pages)
    beyond = client.get("/v1/torch", params={"offset": 100_000}).json()
    assert beyond["items"] == [] and beyond["total"] == len(full)


def test_one_release_with_its_minor_arch_lists_and_sources(client: TestClient) -> None:
    res = client.get("/v1/torch/2.3.1")
    assert res.status_code == 200
    body = res.json()
    assert body["release"]["version"] == "2.3.1"
    assert body["minor"]["minor"] == "2.3"
    assert any(p["version"] == "2.3.1" for p in body["minor"]["patches"])
    assert body["sources"] and all(s["key"] and s["title"] for s in body["sources"])
    cited = {k for a in body["arch_lists"] for k in a["source"]}
    assert cited <= {s["key"] for s in body["sources"]}


@pytest.mark.parametrize("version", ["9.9.9", "2.3.99"], ids=["unknown-major", "unknown-patch"])
def test_unknown_release_is_404_in_the_error_shape(client: TestClient, version: str) -> None:
    res = client.get(f"/v1/torch/{version}")
    assert res.status_code == 404
    body = res.json()
    assert body["code"] == "not-found" and version in body["message"] and body["hint"]


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"minor": "two.three"}, "minor"),
        ({"python": "python3"}, "python"),
        ({"platform": "solaris-sparc"}, "platform"),
        ({"backend": "CUDA; DROP TABLE torch_release"}, "backend"),
        ({"limit": "0"}, "limit"),
        ({"limit": "100000"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"limit": "ten"}, "limit"),
    ],
    ids=[
        "minor-words",
        "python-prefixed",
        "platform-unknown",
        "backend-sql",
        "limit-zero",
        "limit-huge",
        "offset-negative",
        "limit-not-int",
    ],
)
def test_bad_filters_are_422_naming_the_parameter(
    client: TestClient, params: dict[str, str], parameter: str
) -> None:
    res = client.get("/v1/torch", params=params)
    assert res.status_code == 422
    body = res.json()
    assert body["code"] == "invalid-request"
    assert parameter in body["message"]
    assert any(parameter in cause["origin"] for cause in body["causes"])
    assert body["hint"]
