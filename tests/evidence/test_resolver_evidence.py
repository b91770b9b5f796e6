"""`accelenv resolve --database URL` reads the evidence real probe reports left in the database.

The resolver only looks at declared cells, and the only declared cell this host can probe is the CPU
build on CPU, which passes. The partial and broken cases therefore submit the refdev fault-injection reports
relabelled as that CPU cell (backend ``cpu``): the checks and their failures are the probe's own; only the
device they name is changed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli.resolve_cmd import main as resolve_main
from tests.evidence.conftest import Service, as_cpu_cell, variant

TARGET = ["--backend", "cpu", "--python", "3.11", "--os", "linux", "--arch", "x86_64", "--with", "none"]


def _submit_from_two_hosts(service: Service, report: dict[str, Any]) -> None:
    # two hosts and two submitters: what `verified` takes by default (the CLI reads the default settings)
    for host, other in (("one", False), ("two", True)):
        assert service.submit(variant(report, host=host), other=other).status_code == 201


def _resolve(capsys: pytest.CaptureFixture[str], database_url: str, *args: str) -> tuple[int, Any]:
    code = resolve_main([*TARGET, "--database", database_url, "--format", "json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else err


def _torch_of(report: dict[str, Any]) -> str:
    return report["environment"]["torch_version"].split("+")[0]


def test_verified_cell_is_said_in_the_reasons(
    service: Service, report_of, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = report_of("cpu")
    _submit_from_two_hosts(service, report)
    code, answer = _resolve(capsys, database_url, "--torch", _torch_of(report))
    assert code == 0
    assert answer["evidence"]["status"] == "verified"
    evidence_reasons = [r["detail"] for r in answer["reasons"] if r["decision"] == "evidence"]
    assert evidence_reasons and "verified" in evidence_reasons[0] and "2 distinct host" in evidence_reasons[0]

    code, answer = _resolve(capsys, database_url, "--torch", _torch_of(report), "--require-verified")
    assert (code, answer["torch"]) == (0, _torch_of(report))


def test_partial_cell_is_chosen_with_a_warning_naming_the_failing_ops(
    service: Service, report_of, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = as_cpu_cell(report_of("refdev_missing_op"))
    _submit_from_two_hosts(service, report)
    code, answer = _resolve(capsys, database_url, "--torch", _torch_of(report))
    assert code == 0
    assert (answer["torch"], answer["evidence"]["status"]) == (_torch_of(report), "partial")
    assert any("partial" in w and "ops.sort." in w for w in answer["warnings"]), answer["warnings"]


def test_broken_cell_is_avoided_when_an_older_patch_fits(
    service: Service, report_of, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = as_cpu_cell(report_of("refdev_oom"))
    _submit_from_two_hosts(service, report)
    broken = _torch_of(report)

    # the newest release up to the broken one (newer releases, such as a CPU 2.14.0, would not pass over it)
    code, answer = _resolve(capsys, database_url, "--torch", f"<={broken}")
    assert code == 0
    assert answer["torch"] != broken
    assert answer["evidence"]["status"] == "declared"
    assert any(f"passed over torch {broken} cpu" in w and "smoke.train_step" in w for w in answer["warnings"])

    # asked for exactly the broken release: no alternative, so it is chosen, with the warning
    code, answer = _resolve(capsys, database_url, "--torch", broken)
    assert (code, answer["torch"], answer["evidence"]["status"]) == (0, broken, "broken")
    assert any("broken" in w and "smoke.train_step" in w for w in answer["warnings"])


def test_require_verified_names_the_nearest_verified_alternative(
    service: Service, report_of, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = report_of("cpu")
    _submit_from_two_hosts(service, report)
    code = resolve_main(
        ["--backend", "cpu", "--python", "3.12", "--os", "linux", "--arch", "x86_64", "--with", "none",
         "--torch", _torch_of(report), "--database", database_url, "--require-verified", "--format", "json"]
    )
    error = json.loads(capsys.readouterr().out)
    assert (code, error["code"]) == (5, "not-verified")
    assert error["alternatives"][0]["request"] == {"torch": _torch_of(report), "python": "3.11", "backend": "cpu"}


def test_require_verified_without_evidence_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = resolve_main([*TARGET, "--torch", "latest", "--require-verified"])
    assert code == 2
    assert "--require-verified needs verification evidence" in capsys.readouterr().err


def test_an_unmigrated_database_is_refused_with_the_fix(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = resolve_main([*TARGET, "--torch", "latest", "--database", sqlite_url])
    assert code == 9
    assert "accelenv db upgrade" in capsys.readouterr().err


def test_the_service_resolves_with_its_evidence(service: Service, report_of) -> None:
    report = report_of("cpu")
    torch = _torch_of(report)
    query = {"torch": torch, "backend": "cpu", "python": "3.11", "os": "linux", "arch": "x86_64", "with": "none"}
    before = service.client.get("/v1/resolve", params=query).json()
    assert before["evidence"] is None  # no report stored yet: the same answer as the offline CLI

    _submit_from_two_hosts(service, report)
    after = service.client.get("/v1/resolve", params=query).json()
    assert after["evidence"]["status"] == "verified"

    refused = service.client.get("/v1/resolve", params=query | {"python": "3.12", "require_verified": "true"})
    assert (refused.status_code, refused.json()["code"]) == (409, "not-verified")
    assert refused.json()["alternatives"][0]["request"]["python"] == "3.11"
