"""`GET /v1/torch/{version}/variants.json` and `GET /v1/variants/explain` on the real app and database."""

from __future__ import annotations

from fastapi.testclient import TestClient
from variantlib.variants_json import VariantsJson


def test_the_release_variants_json_validates_with_variantlib(client: TestClient) -> None:
    response = client.get("/v1/torch/2.13.0/variants.json", params={"platform": "linux-x86_64"})
    assert response.status_code == 200, response.text
    document = response.json()
    parsed = VariantsJson(document)
    assert {"null", "cu126", "cu130"} <= set(parsed.variants)
    assert document["variants"]["cu130"]["nvidia"]["cuda_version_lower_bound"] == ["13.0"]


def test_an_unknown_release_is_a_404_with_the_error_body(client: TestClient) -> None:
    response = client.get("/v1/torch/9.9.9/variants.json")
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"


def test_the_explanation_names_the_highest_gpu_rule_on_a_mixed_host(client: TestClient) -> None:
    response = client.get("/v1/variants/explain", params={"torch": "2.13.0", "gpu_arch": "sm_120,sm_61",
                                                           "driver": "580.65.06"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["provider_choice"] == "cu130" and body["accelenv_choice"] == "null"
    assert [d["code"] for d in body["differences"]] == ["highest-gpu-only"]


def test_the_explanation_names_minor_version_compatibility(client: TestClient) -> None:
    body = client.get("/v1/variants/explain", params={"torch": "2.13.0", "gpu_arch": "sm_80",
                                                       "driver": "535.54.03"}).json()
    assert (body["provider_choice"], body["accelenv_choice"]) == ("null", "cu126")
    assert body["differences"][0]["code"] == "minor-version-compat"
