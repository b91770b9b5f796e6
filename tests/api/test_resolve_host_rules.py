"""`GET /v1/resolve` with the host's vendor runtime (runtime=) and GPU names (gpu=), through the real app."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_runtime_picks_the_torch_npu_its_cann_maps_to(client: TestClient) -> None:
    res = client.get("/v1/resolve", params={"torch": "2.4", "backend": "npu", "runtime": "8.0.0", "python": "3.10"})
    assert res.status_code == 200, res.text
    pins = {p["name"]: p["version"] for p in res.json()["packages"]}
    assert pins["torch-npu"] == "2.4.0.post2"


def test_a_runtime_no_build_fits_is_a_409_naming_it(client: TestClient) -> None:
    res = client.get("/v1/resolve", params={"torch": "2.4", "backend": "npu", "runtime": "7.0.0", "python": "3.10"})
    assert res.status_code == 409
    body = res.json()
    assert body["code"] == "runtime-mismatch" and "CANN 7.0.0" in body["message"]


def test_driver_on_a_rocm_target_is_refused_not_ignored(client: TestClient) -> None:
    res = client.get("/v1/resolve", params={"torch": "2.6", "backend": "rocm", "driver": "6.2", "python": "3.12"})
    assert res.status_code == 422
    # the API names its own parameter (runtime), not the CLI's flag (api/inputs/strict_query.py: in_api_words)
    assert "runtime" in res.json()["hint"] and "--runtime" not in res.json()["hint"]


def test_gpu_name_maps_to_its_architecture(client: TestClient) -> None:
    params = {"gpu": "NVIDIA GeForce RTX 5090", "torch": "2.7", "driver": "570.86.15", "python": "3.12"}
    res = client.get("/v1/resolve", params=params)
    assert res.status_code == 200, res.text
    body = res.json()
    assert (body["torch"], body["backend"]) == ("2.7.1", "cu128")
    assert any("is sm_120" in r["detail"] for r in body["reasons"])
