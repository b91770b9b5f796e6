"""`GET /v1/resolve` for a Jetson (issue 29), through the real app: NVIDIA's JetPack wheel, the JetPack as
runtime=, and the same answer read back by the CLI's --server path (`resolution_from_json`)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from compat_service.domain.resolver.install_commands import pip_commands
from compat_service.domain.resolver.resolution import resolution_from_json, resolution_to_json


def test_orin_driver_540_is_answered_with_the_jetpack_wheel(client: TestClient) -> None:
    params = {"gpu_arch": "sm_87", "driver": "540.4.0", "arch": "aarch64", "os": "linux", "python": "3.10"}
    res = client.get("/v1/resolve", params=params)
    assert res.status_code == 200, res.text
    body = res.json()
    assert (body["backend"], body["torch"], body["index_url"]) == ("jetpack", "2.5.0", None)
    assert body["packages"][0]["url"].endswith("cp310-cp310-linux_aarch64.whl")
    assert body["install"]["pip"] == [f'pip install "torch @ {body["packages"][0]["url"]}"']
    again = resolution_from_json(body)
    assert resolution_to_json(again)["packages"] == body["packages"]
    assert pip_commands(again) == body["install"]["pip"]


def test_gh200_on_aarch64_keeps_pytorchs_cuda_wheels(client: TestClient) -> None:
    params = {"gpu": "GH200", "arch": "aarch64", "os": "linux", "python": "3.12", "driver": "570.124.06"}
    res = client.get("/v1/resolve", params=params)
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["backend"].startswith("cu") and body["index_url"] is not None
    assert all(p["url"] is None for p in body["packages"])


def test_jetpack_runtime_for_a_module_it_does_not_run_is_a_409_with_its_jetpack(client: TestClient) -> None:
    params = {"gpu": "Jetson TX2", "arch": "aarch64", "runtime": "6.2"}
    res = client.get("/v1/resolve", params=params)
    assert res.status_code == 409
    body = res.json()
    assert body["code"] == "runtime-mismatch"
    assert {"runtime": "4.6.1", "backend": "cuda"} in [a["request"] for a in body["alternatives"]]
