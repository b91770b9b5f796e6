"""`GET /v1/packages`, `GET /v1/packages/{name}` and `GET /v1/resolve?with=...` for stacks, through the real app."""

from __future__ import annotations

from fastapi.testclient import TestClient

from compat_service.domain.stacks.catalog import load_catalog


def test_packages_lists_the_ecosystem(client: TestClient) -> None:
    res = client.get("/v1/packages")
    assert res.status_code == 200
    assert res.json()["packages"] == load_catalog().names()
    assert "vllm" in res.json()["packages"]


def test_package_releases_carry_the_torch_requirement_of_their_metadata(client: TestClient) -> None:
    res = client.get("/v1/packages/vllm", params={"platform": "linux-x86_64"})
    assert res.status_code == 200
    body = res.json()
    vllm = load_catalog().get("vllm")
    assert vllm is not None
    newest = next(r for r in vllm.releases if not r.prerelease)
    first = body["releases"][0]
    assert first["version"] == newest.version  # newest first
    row = first["platforms"][0]
    assert row["platform"] == "linux-x86_64"
    assert row["torch"] == newest.torch_specifier("linux-x86_64", None)
    assert row["companions"]["torchvision"] == newest.pins("linux-x86_64", None)["torchvision"]
    assert body["torch_build"] == "default-index" and "vllm_install_binaries" in body["sources"]
    everything = client.get("/v1/packages/vllm").json()["releases"]
    yanked = [r for r in everything if r["yanked"]]
    assert [r["version"] for r in yanked] == [r.version for r in vllm.releases if r.yanked and not r.prerelease]
    assert yanked and all(not r["platforms"] for r in yanked)  # a yanked release has no wheel to read


def test_an_unknown_package_is_404_in_the_error_shape(client: TestClient) -> None:
    res = client.get("/v1/packages/not-a-package")
    assert res.status_code == 404
    body = res.json()
    assert body["code"] == "not-found" and "vllm" in body["hint"]


def test_resolve_with_repeated_with_resolves_the_stack(client: TestClient) -> None:
    res = client.get(
        "/v1/resolve",
        params=[("with", "vllm"), ("with", "flash-attn"), ("backend", "cuda"), ("python", "3.12")],
    )
    assert res.status_code == 200, res.text
    body = res.json()
    assert [p["name"] for p in body["stack"]] == ["vllm", "flash-attn"]
    vllm = load_catalog().get("vllm")
    assert vllm is not None
    chosen = vllm.release(body["stack"][0]["version"])
    assert chosen is not None
    assert body["pins"]["torch"].split("+")[0] == chosen.pins("linux-x86_64", "3.12")["torch"]
    assert all(p["reason"] and p["sources"] for p in body["stack"])


def test_resolve_with_a_conflict_is_409_with_alternatives(client: TestClient) -> None:
    res = client.get("/v1/resolve", params={"with": "vllm", "torch": "2.15", "backend": "cuda", "python": "3.12"})
    assert res.status_code == 409
    body = res.json()
    assert body["code"] == "stack-conflict"
    assert any("without vllm" in a["description"] for a in body["alternatives"])
    assert any("with torch" in a["description"] for a in body["alternatives"])


def test_the_selector_page_has_a_with_field_and_shows_the_stack(client: TestClient) -> None:
    # the form sends both `with` fields (the companions select, empty for the default, and the packages)
    submitted = client.get("/?with=&with=vllm%3D%3D0.15.1&backend=cuda&python=3.12", follow_redirects=False)
    assert submitted.status_code == 303
    assert submitted.headers["location"] == "/?python=3.12&backend=cuda&with=vllm%3D%3D0.15.1"
    page = client.get(submitted.headers["location"])
    assert page.status_code == 200
    assert 'id="f-with-packages" name="with" value="vllm==0.15.1"' in page.text
    api = client.get("/v1/resolve", params={"with": "vllm==0.15.1", "backend": "cuda", "python": "3.12"}).json()
    assert "vllm==0.15.1" in page.text and f"torch=={api['pins']['torch']}" in page.text
    assert "<strong>vllm 0.15.1</strong>" in page.text
    both = client.get("/?with=torchvision&with=vllm&backend=cuda&python=3.12", follow_redirects=False)
    assert both.status_code == 303 and "with=torchvision%2Cvllm" in both.headers["location"]


def test_a_package_from_its_own_wheel_pages_lists_them_and_resolves_to_its_page(client: TestClient) -> None:
    body = client.get("/v1/packages/torch-scatter", params={"platform": "linux-x86_64"}).json()
    assert body["torch_build"] == "wheel-pages" and "pyg_install_wheels" in body["sources"]
    newest = body["releases"][0]
    assert newest["version"] == "2.1.2" and not newest["platforms"]  # the default index has only its sdist
    pages = newest["wheel_pages"]
    assert any("2.5" in p["torch"] and "cu124" in p["builds"] for p in pages)
    assert all(p["url"].startswith("https://data.pyg.org/whl/torch-{torch}") for p in pages)
    res = client.get(
        "/v1/resolve", params={"with": "torch-scatter", "torch": "2.5", "backend": "cu124", "python": "3.12"}
    )
    assert res.status_code == 200, res.text
    pin = res.json()["stack"][0]
    assert (pin["origin"], pin["url"]) == ("find-links", "https://data.pyg.org/whl/torch-2.5.0+cu124.html")
    page = "--find-links https://data.pyg.org/whl/torch-2.5.0+cu124.html"
    assert any(page in c for c in res.json()["install"]["pip"])


def test_a_release_only_its_pages_carry_is_listed_and_resolved(client: TestClient) -> None:
    """DGL 2.4.0 is on DGL's own pages only: listed first, with its pages and no index file; resolved to its page."""
    body = client.get("/v1/packages/dgl", params={"platform": "linux-x86_64"}).json()
    assert body["torch_build"] == "wheel-pages" and "dgl_start_page_2_4" in body["sources"]
    newest = body["releases"][0]
    assert newest["version"] == "2.4.0" and not newest["platforms"]
    assert {m for p in newest["wheel_pages"] for m in p["torch"]} == {"2.1", "2.2", "2.3", "2.4"}
    res = client.get("/v1/resolve", params={"with": "dgl", "torch": "2.4", "backend": "cu124", "python": "3.12"})
    assert res.status_code == 200, res.text
    pin = res.json()["stack"][0]
    assert (pin["version"], pin["origin"], pin["url"]) == (
        "2.4.0", "find-links", "https://data.dgl.ai/wheels/torch-2.4/cu124/repo.html")


def test_a_package_without_a_torch_requirement_shows_the_torch_sglang_pins_beside_it(client: TestClient) -> None:
    body = client.get("/v1/packages/sgl-kernel", params={"platform": "linux-x86_64"}).json()
    rows = {r["version"]: r for r in body["releases"]}
    assert "sglang_issue_5247" in body["sources"]
    assert "==2.9.1" in str(rows["0.3.21"]) and "==2.8.0" in str(rows["0.3.17.post1"])


def test_the_selector_page_resolves_a_wheel_page_package(client: TestClient) -> None:
    page = client.get("/", params={"with": "mmcv", "torch": "2.1", "backend": "cu118", "python": "3.11"})
    assert page.status_code == 200
    assert "<strong>mmcv 2.2.0</strong>" in page.text
    assert "https://download.openmmlab.com/mmcv/dist/cu118/torch2.1/index.html" in page.text
