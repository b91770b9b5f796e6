"""`GET /v1/resolve` answers exactly what `accelenv resolve --format json` prints, errors included.

Every request names python, os, arch and backend explicitly: the CLI defaults those to the host it runs on,
the service (which has no "this host") to the matrix's newest Python, linux-x86_64 and cpu.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from cli.main import app as cli_app
from compat_service.api.deps import state_of
from compat_service.domain.errors import ERRORS
from compat_service.domain.resolver.request import api_wording

BASE = {"python": "3.11", "os": "linux", "arch": "x86_64", "backend": "cpu"}

CASES: dict[str, dict[str, str]] = {
    "latest-cpu": {},
    "minor-cu121": {"torch": "2.3", "python": "3.10", "backend": "cu121"},
    "exact-cu118-windows": {"torch": "2.3.1", "os": "windows", "backend": "cu118"},
    "specifier": {"torch": ">=2.2,<2.4", "backend": "cuda", "driver": "535.104.05"},
    "cuda-family-new-driver": {"backend": "cuda", "driver": "570.86.10"},
    "cuda-with-arch": {"backend": "cuda", "driver": "550.54.14", "gpu_arch": "sm_90"},
    "cuda-compute-capability": {"backend": "cuda", "driver": "550.54.14", "gpu_arch": "8.6"},
    "rocm-label": {"torch": "2.3", "backend": "rocm6.0"},
    "rocm-family-gfx": {"backend": "rocm", "gpu_arch": "gfx942"},
    "macos-mps": {"os": "macos", "arch": "arm64", "backend": "mps", "python": "3.12"},
    "linux-aarch64": {"arch": "aarch64", "torch": "2.5"},
    "xpu": {"backend": "xpu", "torch": "2.6"},
    "npu": {"backend": "npu"},
    "mlu": {"backend": "mlu"},
    "free-threaded": {"python": "3.13t", "torch": "2.6"},
    "torch-alone": {"with": "none"},
    "cpu-ignores-driver": {"backend": "cpu", "driver": "535.104.05", "gpu_arch": "sm_90"},
    "mps-ignores-driver": {
        "os": "macos",
        "arch": "arm64",
        "backend": "mps",
        "python": "3.12",
        "driver": "1.0",
    },
    "torchvision-only": {"with": "torchvision", "torch": "2.4"},
    # errors
    "python-too-new": {"torch": "2.3", "python": "3.13"},
    "python-too-old": {"torch": "2.6", "python": "3.8"},
    "unknown-torch": {"torch": "9.9"},
    "driver-too-old": {"backend": "cu124", "driver": "450.80.02", "torch": "2.4"},
    "arch-not-shipped": {"torch": "2.3", "backend": "cu121", "driver": "570.86.10", "gpu_arch": "sm_120"},
    "label-not-published": {"torch": "2.3", "backend": "cu126"},
    "windows-rocm": {"os": "windows", "backend": "rocm"},
    "macos-cuda": {"os": "macos", "arch": "arm64", "backend": "cuda", "python": "3.12"},
    "amd-arch-for-cuda": {"backend": "cuda", "gpu_arch": "gfx942"},
    "bad-torch": {"torch": "two"},
    "bad-python": {"python": "python3"},
    "bad-backend": {"backend": "tpu"},
    "bad-driver": {"backend": "cuda", "driver": "new"},
    "bad-with": {"with": "torchtext"},
    "bad-os": {"os": "beos"},
}

STATUS_AND_EXIT: dict[str, tuple[int, int]] = {}


def in_api_words(body: dict) -> dict:
    """The CLI's error body with its flags said as the API's parameters (the table's api_name)."""
    out = dict(body, message=api_wording(body["message"]), hint=api_wording(body["hint"] or "") or body["hint"])
    out["causes"] = [
        {k: api_wording(v) if isinstance(v, str) else v for k, v in cause.items()} for cause in body["causes"]
    ]
    out["alternatives"] = [dict(a, description=api_wording(a["description"])) for a in body["alternatives"]]
    return out


def cli_json(params: dict[str, str]) -> tuple[int, dict]:
    args = ["resolve", "--format", "json"]
    for key, value in params.items():
        args += [f"--{key.replace('_', '-')}", value]
    result = CliRunner().invoke(cli_app, args, env={"ACCELENV_SERVER": "", "ACCELENV_MATRIX_PATH": ""})
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_api_matches_cli_json(client: TestClient, case: str) -> None:
    params = {**BASE, **CASES[case]}
    exit_code, expected = cli_json(params)
    res = client.get("/v1/resolve", params=params)
    body = res.json()
    if exit_code != 0:
        # an API error also names its request (the access log's id), and says each flag as the API's
        # parameter (--torch -> torch); the rest is the CLI's object
        assert body.pop("request_id") == res.headers["x-request-id"]
        expected = in_api_words(expected)
        assert "--" not in json.dumps({k: body[k] for k in ("message", "hint", "causes")})
    else:
        assert body.pop("install")["pip"] == expected.pop("install")["pip"]
    assert body == expected
    if exit_code == 0:
        assert res.status_code == 200
        return
    codes = {c.code: (c.http_status, c.exit_code) for c in ERRORS.values()}
    assert 400 <= res.status_code < 500
    assert codes[expected["code"]] == (res.status_code, exit_code)


def test_cases_cover_successes_and_several_error_codes(client: TestClient) -> None:
    outcomes = [client.get("/v1/resolve", params={**BASE, **p}) for p in CASES.values()]
    codes = {r.json()["code"] for r in outcomes if r.status_code != 200}
    assert sum(r.status_code == 200 for r in outcomes) >= 10
    assert len(codes) >= 5 and "invalid-request" in codes


def test_repeated_requests_are_served_from_the_cache(client: TestClient) -> None:
    params = {**BASE, "torch": "2.3", "backend": "cu121"}
    first = client.get("/v1/resolve", params=params)
    size = len(state_of(client.app).resolve_cache.bodies)
    again = client.get("/v1/resolve", params={**params, "backend": "CU121 "})  # same request once normalized
    assert again.content == first.content
    assert len(state_of(client.app).resolve_cache.bodies) == size
