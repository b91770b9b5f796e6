"""`accelenv matrix show --torch X` with `--database URL` or `--server URL` adds the evidence of that release."""

from __future__ import annotations

import json

import httpx
from typer.testing import CliRunner

from cli.main import app
from tests.evidence.conftest import Service, variant
from tests.evidence.live_server import live_server


def _torch(report: dict) -> str:
    return report["environment"]["torch_version"].split("+")[0]


def test_show_with_a_database_adds_status_counts_and_failing_checks(
    service: Service, report_of, database_url: str
) -> None:
    cpu, partial = report_of("cpu"), report_of("refdev_missing_op")
    for host, other in (("one", False), ("two", True)):  # two hosts, two submitters: verified
        assert service.submit(variant(cpu, host=host), other=other).status_code == 201
    assert service.submit(variant(partial, host="one")).status_code == 201

    result = CliRunner().invoke(app, ["matrix", "show", "--torch", _torch(cpu), "--json", "--database", database_url])
    assert result.exit_code == 0, result.output
    rows = {r["backend"]: r for r in json.loads(result.stdout)["evidence"]}
    assert (rows["cpu"]["status"], rows["cpu"]["reports"], rows["cpu"]["hosts"]) == ("verified", 2, 2)
    assert (rows["refdev"]["status"], rows["refdev"]["health"]) == ("observed", "partial")
    assert any(c.startswith("ops.sort.") for c in rows["refdev"]["failing_checks"])

    table = CliRunner().invoke(app, ["matrix", "show", "--torch", _torch(cpu), "--database", database_url])
    assert table.exit_code == 0 and "evidence from probe reports" in table.stdout


def test_show_with_a_server_reads_the_service(sqlite_url: str, report_of) -> None:
    cpu = report_of("cpu")
    with live_server(sqlite_url, workers=1, load_matrix=True) as server:
        posted = httpx.post(server.base_url + "/v1/reports", json=cpu, headers=server.auth, timeout=30)
        assert posted.status_code == 201
        result = CliRunner().invoke(
            app, ["matrix", "show", "--torch", _torch(cpu), "--json", "--server", server.base_url]
        )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["evidence"]
    assert [(r["backend"], r["status"], r["health"], r["reports"]) for r in rows] == [
        ("cpu", "declared", "unconfirmed", 1)
    ]


def test_show_with_an_unreachable_server_exits_6() -> None:
    result = CliRunner().invoke(app, ["matrix", "show", "--torch", "2.13", "--server", "http://127.0.0.1:9"])
    assert result.exit_code == 6
    assert "could not read the matrix evidence" in result.stderr
