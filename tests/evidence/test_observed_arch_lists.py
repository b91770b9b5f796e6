"""Arch lists learned from probe reports: detect records a build's compiled archs (no GPU needed), the service
turns agreeing reports into observed facts cited by report id, and the resolver reads them below a curated
row and above unknown (`/v1/resolve`, `/v1/torch/{v}`, `accelenv resolve --server`).

The reports are `tests/data/build_reports/` (a real detect run with the build facts of a CUDA and a ROCm
build written in; see the README there).
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cli.main import app
from cli.resolve_cmd import main as resolve_main
from compat_service.domain.evidence.observed_builds import agreeing_builds, observation_of
from compat_service.domain.evidence.report import ProbeReport
from probes.checks import detect
from tests.evidence.conftest import Service
from tests.evidence.live_server import live_server

DATA = Path(__file__).resolve().parents[1] / "data" / "build_reports"
CUDA_QUERY = {"torch": "2.11", "backend": "cu129", "gpu_arch": "sm_120", "python": "3.12", "os": "linux",
              "arch": "x86_64", "with": "none", "strict": "true"}
ROCM_QUERY = {"torch": "2.6", "backend": "rocm", "gpu_arch": "gfx942", "python": "3.12", "os": "linux",
              "arch": "x86_64", "with": "none", "strict": "true"}


def _report(name: str, **archs: Any) -> dict[str, Any]:
    report = json.loads((DATA / f"{name}.json").read_text())
    if "arch_list" in archs:
        report = copy.deepcopy(report)
        report["report_id"] = str(uuid.uuid4())
        report["environment"]["extra"]["arch_list"] = archs["arch_list"]
    return report


# ----------------------------------------------------------------------------- the probe's detect


def test_detect_reads_the_compiled_archs_without_a_gpu() -> None:
    # a CUDA build's torch on a host without a GPU: get_arch_list() answers [], the arch flags do not. No CUDA
    # build can be installed here, so the two torch calls detect makes are stood in for.
    torch = SimpleNamespace(
        cuda=SimpleNamespace(get_arch_list=lambda: [], nccl=SimpleNamespace(version=lambda: (2, 26, 2))),
        _C=SimpleNamespace(_cuda_getArchFlags=lambda: "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120"),
    )
    assert detect.arch_list(torch) == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
    assert detect.nccl_version(torch) == "2.26.2"


def test_detect_on_this_cpu_build_reports_no_archs() -> None:
    import torch

    assert detect.arch_list(torch) == [] and detect.nccl_version(torch) is None


# ----------------------------------------------------------------------------- the domain rule


def test_agreeing_reports_make_one_fact_cited_by_their_ids() -> None:
    first = ProbeReport.model_validate(_report("torch-2.11.0-cu129"))
    reordered = _report("torch-2.11.0-cu129",
                        arch_list=["compute_120", "sm_120", "sm_100", "sm_90", "sm_86", "sm_80", "sm_75"])
    second = ProbeReport.model_validate(reordered)
    facts = agreeing_builds([observation_of(second), observation_of(first)])  # type: ignore[list-item]
    build = facts.builds[("2.11.0", "cu129", "linux-x86_64")]
    row = build.as_arch_list()
    assert (build.reports, row.torch, row.ptx) == (2, "==2.11.0", "sm_120")
    assert row.archs == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert row.source == [f"report:{second.report_id}", f"report:{first.report_id}"]
    assert "runtime 12.9" in (row.note or "") and "NCCL 2.28.9" in (row.note or "")


def test_disagreeing_reports_make_no_fact() -> None:
    one = ProbeReport.model_validate(_report("torch-2.11.0-cu129"))
    other = ProbeReport.model_validate(_report("torch-2.11.0-cu129", arch_list=["sm_80", "sm_90", "compute_90"]))
    facts = agreeing_builds([observation_of(one), observation_of(other)])  # type: ignore[list-item]
    assert facts.builds == {} and len(facts.conflicts[("2.11.0", "cu129", "linux-x86_64")]) == 2


def test_a_report_without_a_gpu_build_or_with_a_malformed_list_states_nothing() -> None:
    cpu = _report("torch-2.11.0-cu129")
    cpu["environment"]["torch_build"] = "cpu"
    assert observation_of(ProbeReport.model_validate(cpu)) is None
    odd = _report("torch-2.11.0-cu129", arch_list=["sm_80", "not an arch"])
    assert observation_of(ProbeReport.model_validate(odd)) is None
    ptx = _report("torch-2.11.0-cu129", arch_list=["sm_80", "sm_90", "compute_90"])
    observed = observation_of(ProbeReport.model_validate(ptx))
    assert observed is not None
    facts = agreeing_builds([observed])
    assert facts.builds[("2.11.0", "cu129", "linux-x86_64")].as_arch_list().ptx == "sm_90"


# ----------------------------------------------------------------------------- the service


def test_the_service_resolves_with_an_observed_cuda_arch_list(service: Service) -> None:
    before = service.client.get("/v1/resolve", params=CUDA_QUERY)
    # 2.11 cu129's list is unknown (gpu_archs.yaml `searched`): --strict refuses
    assert (before.status_code, before.json()["code"]) == (409, "rests-on-unknown")

    report = _report("torch-2.11.0-cu129")
    assert service.submit(report).status_code == 201
    after = service.client.get("/v1/resolve", params=CUDA_QUERY).json()
    assert (after["pins"]["torch"], after["backend"], after["status"]) == ("2.11.0", "cu129", "known")
    arch = next(r for r in after["reasons"] if r["decision"] == "gpu-arch")
    assert arch["sources"] == [f"report:{report['report_id']}"]

    detail = service.client.get("/v1/torch/2.11.0").json()
    assert [(a["variant"], a["ptx"], a["source"]) for a in detail["observed_arch_lists"]] == [
        ("cu129", "sm_120", [f"report:{report['report_id']}"])
    ]
    page = service.client.get("/torch/2.11.0").text
    assert 'id="gpu-archs-observed"' in page and f'href="/reports/{report["report_id"]}"' in page

    # a curated row wins over an observation: a report about 2.7.1 cu128 (curated) changes nothing there
    curated = _report("torch-2.11.0-cu129")
    curated["report_id"] = str(uuid.uuid4())
    curated["environment"].update(torch_version="2.7.1+cu128", torch_build="cu128")
    assert service.submit(curated).status_code == 201
    assert service.client.get("/v1/torch/2.7.1").json()["observed_arch_lists"] == []

    # a second report of the same build disagreeing: no fact, the strict answer is refused again
    assert service.submit(_report("torch-2.11.0-cu129", arch_list=["sm_80", "sm_90"])).status_code == 201
    disputed = service.client.get("/v1/resolve", params=CUDA_QUERY)
    assert disputed.json()["code"] == "rests-on-unknown"


def test_a_withdrawn_report_takes_its_fact_with_it(service: Service) -> None:
    import datetime as dt

    from compat_service.db.evidence.withdraw import withdraw_submitter
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    public, secret = create_token(service.engine, ApiTokenCreate(scope="report", note="observed archs"))
    posted = service.client.post("/v1/reports", json=_report("torch-2.11.0-cu129"),
                                 headers={"Authorization": f"Bearer {secret}"})
    assert posted.status_code == 201
    assert service.client.get("/v1/resolve", params=CUDA_QUERY).json()["status"] == "known"
    withdraw_submitter(service.engine, public.id, now=dt.datetime.now(dt.timezone.utc))
    assert service.client.get("/v1/resolve", params=CUDA_QUERY).json()["code"] == "rests-on-unknown"
    assert service.client.get("/v1/torch/2.11.0").json()["observed_arch_lists"] == []


def test_matrix_show_with_a_database_lists_observed_arch_lists(service: Service, database_url: str) -> None:
    report = _report("torch-2.6.0-rocm6.2.4")
    assert service.submit(report).status_code == 201
    shown = CliRunner().invoke(app, ["matrix", "show", "--torch", "2.6", "--database", database_url])
    assert shown.exit_code == 0, shown.output
    assert "observed arch list: torch 2.6.0 rocm6.2.4 linux-x86_64: gfx900" in shown.stdout
    assert f"report:{report['report_id']}" in shown.stdout


def test_the_service_resolves_with_an_observed_rocm_gfx_list(service: Service) -> None:
    before = service.client.get("/v1/resolve", params=ROCM_QUERY)
    assert (before.status_code, before.json()["code"]) == (409, "rests-on-unknown")

    report = _report("torch-2.6.0-rocm6.2.4")
    assert service.submit(report).status_code == 201
    after = service.client.get("/v1/resolve", params=ROCM_QUERY).json()
    assert (after["pins"]["torch"], after["backend"], after["status"]) == ("2.6.0", "rocm6.2.4", "known")
    # gfx targets are exact: a gfx1151 (not in the observed list) has no kernels in that build
    refused = service.client.get("/v1/resolve", params=ROCM_QUERY | {"gpu_arch": "gfx1151", "backend": "rocm6.2.4"})
    assert refused.json()["code"] == "gpu-arch-unsupported"


def test_resolve_with_a_server_uses_the_observed_arch_list(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report("torch-2.11.0-cu129")
    args = ["--torch", "2.11", "--backend", "cu129", "--gpu-arch", "sm_120", "--python", "3.12", "--os", "linux",
            "--arch", "x86_64", "--with", "none", "--strict", "--format", "json"]
    with live_server(sqlite_url, workers=1, load_matrix=True, env={"ACCELENV_MATRIX_REFRESH_S": "0"}) as server:
        posted = httpx.post(server.base_url + "/v1/reports", json=report, headers=server.auth, timeout=30)
        assert posted.status_code == 201, posted.text
        deadline = time.monotonic() + 30
        while True:
            code = resolve_main([*args, "--server", server.base_url])
            out = capsys.readouterr().out
            answer = json.loads(out) if out.strip() else {}
            if answer.get("status") == "known" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        shown = CliRunner().invoke(app, ["matrix", "show", "--torch", "2.11.0", "--json", "--server", server.base_url])
    assert code == 0
    assert (answer["pins"]["torch"], answer["status"]) == ("2.11.0", "known")
    assert shown.exit_code == 0, shown.output
    assert [(a["variant"], a["source"]) for a in json.loads(shown.stdout)["observed_arch_lists"]] == [
        ("cu129", [f"report:{report['report_id']}"])
    ]
    gpu_arch_reason = next(r for r in answer["reasons"] if r["decision"] == "gpu-arch")
    assert f"report:{report['report_id']}" in gpu_arch_reason["sources"]
