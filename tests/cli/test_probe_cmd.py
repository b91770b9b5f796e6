"""`accelenv probe` and `accelenv report submit` through the real CLI, the real probe subprocess and a
real loopback HTTP server standing in for the service's POST /v1/reports."""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cli import probe_cmd
from compat_service.domain.evidence.report import ProbeReport
from tests.server_process import free_port

pytestmark = pytest.mark.torch


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()
    probe_cmd.register(root)
    return root


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCELENV_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("ACCELENV_CONFIG_DIR", str(tmp_path / "config"))
    for name in ("ACCELENV_TOKEN", "ACCELENV_SERVER", "ACCELENV_REFDEV_FAULTS", "ACCELENV_PROBE_TEST_FAULTS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "spool"


#: what `POST /v1/reports/batch` says per item for each single-report answer status
_BATCH_STATUS = {201: "created", 200: "exists", 409: "conflict", 422: "invalid"}


class Service:
    """A loopback HTTP server that records each request and answers with ``answer(report_id)``. With
    ``batch=False`` it is a server from before the batch route (404 there); with ``batch=True`` it answers
    a batch item by item with the same ``answer``, recording each item as a request on the batch path."""

    def __init__(self, answer: Callable[[str], tuple[int, dict[str, Any]]], batch: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.batch_posts = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.endswith("/batch"):
                    if not batch:
                        self._send(404, {"code": "not-found", "message": "no such route"})
                        return
                    service.batch_posts += 1
                    results = []
                    assert self.headers["Content-Type"] == "application/x-ndjson"  # one report per line
                    for report in map(json.loads, body.splitlines()):
                        service.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                                 "report": report})
                        status, payload = answer(report["report_id"])
                        if status >= 500 or status in (401, 403):
                            # a server that fails on one report (or refuses the token) fails the whole batch
                            self._send(status, payload)
                            return
                        item = {"report_id": report["report_id"], "status": _BATCH_STATUS[status]}
                        results.append(item if status in (200, 201) else item | {"error": payload})
                    self._send(200, {"results": results})
                    return
                report = json.loads(body)
                service.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                         "report": report})
                self._send(*answer(report["report_id"]))

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service_factory() -> Iterator[Callable[..., Service]]:
    started: list[Service] = []

    def start(answer: Callable[[str], tuple[int, dict[str, Any]]], batch: bool = False) -> Service:
        started.append(Service(answer, batch))
        return started[-1]

    yield start
    for service in started:
        service.close()


def stored(report_id: str) -> tuple[int, dict[str, Any]]:
    return 201, {"report_id": report_id, "created": True}


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens once the socket is closed


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One report from a real probe run (detect only), reused with fresh ids by the spool tests."""
    out = tmp_path_factory.mktemp("real") / "report.json"
    root = typer.Typer()
    probe_cmd.register(root)
    result = CliRunner().invoke(root, ["probe", "--device", "cpu", "--checks", "detect", "--quiet",
                                       "--output", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def fresh(report: dict[str, Any]) -> dict[str, Any]:
    return dict(report, report_id=str(uuid.uuid4()))


def test_probe_writes_a_valid_report_and_exits_0(app: typer.Typer, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect,smoke,distributed",
                                      "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    report = ProbeReport.model_validate_json(out.read_text())
    assert {c.group for c in report.checks} == {"detect", "smoke", "distributed"}


def test_probe_prints_the_report_without_output(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["schema_version"] == "1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--device", "cu da"], "is not a device name", id="bad-device"),
        pytest.param(["--checks", "detect,nope"], "unknown check group(s): nope", id="bad-group"),
        pytest.param(["--python", "/nonexistent/python"], "is not an executable file", id="bad-python"),
        pytest.param(["--timeout", "-1"], "must be a positive number", id="bad-timeout"),
        pytest.param(["--inject", "two words"], "is not KIND[:TARGET]", id="bad-inject"),
        pytest.param(["--submit", "http://127.0.0.1:1"], "--submit needs an API token", id="submit-no-token"),
    ],
)
def test_bad_requests_exit_2_with_a_clear_error(app: typer.Typer, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["probe", *args])
    assert result.exit_code == 2
    assert "error: invalid-request" in result.output and message in result.output
    assert "Traceback" not in result.output


def test_python_option_probes_that_interpreter(app: typer.Typer, tmp_path: Path) -> None:
    from tests.probes.conftest import old_python

    python = old_python("3.8")
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["probe", "--python", python, "--quiet", "--output", str(out)])
    report = json.loads(out.read_text())
    assert report["environment"]["python_version"].startswith("3.8.")
    if report["environment"]["torch_version"] == "unknown":
        assert result.exit_code == 1
        assert report["checks"][0]["detail"].startswith("torch cannot be imported")


def test_bundle_option_writes_the_single_file_probe(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "accelenv_probe.py"
    result = CliRunner().invoke(app, ["probe", "--bundle", str(path)])
    assert result.exit_code == 0, result.output
    text = path.read_text()
    compile(text, str(path), "exec")
    assert "from probes.harness.entry import main" in text


def test_inject_reaches_the_refdev_worker(app: typer.Typer, tmp_path: Path) -> None:
    from tests.probes.conftest import refdev_available

    ok, why = refdev_available()
    if not ok:
        pytest.skip(why)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["probe", "--device", "refdev", "--checks", "smoke", "--quiet",
                                      "--inject", "missing:aten::addmm", "--output", str(out)])
    # a missing op is an answer (unsupported), but one the training step needs: the device cannot train, exit 1
    assert result.exit_code == 1, result.output
    step = next(c for c in json.loads(out.read_text())["checks"] if c["id"] == "smoke.train_step")
    assert step["status"] == "unsupported" and step["data"]["aten_op"] == "aten::addmm.out"


def test_submit_posts_with_the_bearer_token(app: typer.Typer, tmp_path: Path, isolated_dirs: Path,
                                            service_factory: Callable[..., Service]) -> None:
    service = service_factory(stored)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet", "--output",
                                      str(out), "--submit", service.url, "--token", "t0ken"])
    assert result.exit_code == 0, result.output
    assert len(service.requests) == 1
    request = service.requests[0]
    assert request["path"] == "/v1/reports" and request["auth"] == "Bearer t0ken"
    assert request["report"] == json.loads(out.read_text())
    assert not isolated_dirs.exists() or not list(isolated_dirs.iterdir())


def test_unreachable_server_spools_the_report(app: typer.Typer, tmp_path: Path, isolated_dirs: Path) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet", "--output",
                                      str(out), "--submit", closed_port_url(), "--token", "t"])
    assert result.exit_code == 0, result.output
    report_id = json.loads(out.read_text())["report_id"]
    assert [p.name for p in isolated_dirs.iterdir()] == [f"{report_id}.json"]
    assert "kept at" in result.output


def test_refused_token_spools_and_exits_7(app: typer.Typer, isolated_dirs: Path,
                                          service_factory: Callable[..., Service]) -> None:
    service = service_factory(lambda _id: (401, {"code": "unauthorized", "message": "bad token", "hint": None,
                                                 "causes": [], "alternatives": []}))
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet",
                                      "--submit", service.url, "--token", "wrong"])
    assert result.exit_code == 7
    assert "error: unauthorized" in result.output
    assert len(list(isolated_dirs.iterdir())) == 1


def _spool(directory: Path, *reports: dict[str, Any]) -> list[str]:
    from cli import report_spool

    return [report_spool.spool(r, directory).stem for r in reports]


def test_report_submit_sends_and_removes_each_stored_report(app: typer.Typer, isolated_dirs: Path,
                                                            real_report: dict[str, Any],
                                                            service_factory: Callable[..., Service]) -> None:
    ids = _spool(isolated_dirs, fresh(real_report), fresh(real_report))
    service = service_factory(stored)
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert result.exit_code == 0, result.output
    assert sorted(r["report"]["report_id"] for r in service.requests) == sorted(ids)
    assert list(isolated_dirs.iterdir()) == []
    assert "sent 2 report(s), kept 0" in result.output


def test_resending_an_already_stored_report_is_fine(app: typer.Typer, isolated_dirs: Path,
                                                    real_report: dict[str, Any],
                                                    service_factory: Callable[..., Service]) -> None:
    seen: set[str] = set()

    def idempotent(report_id: str) -> tuple[int, dict[str, Any]]:
        status = 200 if report_id in seen else 201
        seen.add(report_id)
        return status, {"report_id": report_id, "created": status == 201}

    report = fresh(real_report)
    service = service_factory(idempotent)
    for _ in range(2):  # spooled twice (e.g. two failed submits): same file, sent once per spooling
        _spool(isolated_dirs, report)
        result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
        assert result.exit_code == 0, result.output
    assert [r["report"]["report_id"] for r in service.requests] == [report["report_id"]] * 2
    assert list(isolated_dirs.iterdir()) == []


def test_report_submit_keeps_a_rejected_report_and_sends_the_rest(app: typer.Typer, isolated_dirs: Path,
                                                                  real_report: dict[str, Any],
                                                                  service_factory: Callable[..., Service]) -> None:
    bad, good = fresh(real_report), fresh(real_report)
    _spool(isolated_dirs, bad, good)

    def answer(report_id: str) -> tuple[int, dict[str, Any]]:
        if report_id == bad["report_id"]:
            return 422, {"code": "report-invalid", "message": "the report does not match", "hint": None,
                         "causes": [], "alternatives": []}
        return stored(report_id)

    service = service_factory(answer)
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert result.exit_code == 10
    # refused (4xx): moved aside with its reason, never retried; the spool itself is empty
    assert [p.name for p in isolated_dirs.iterdir()] == ["rejected"]
    rejected = isolated_dirs / "rejected"
    assert sorted(p.name for p in rejected.iterdir()) == sorted(
        [f"{bad['report_id']}.json", f"{bad['report_id']}.reason.json"]
    )
    assert json.loads((rejected / f"{bad['report_id']}.reason.json").read_text())["code"] == "report-invalid"
    assert len(service.requests) == 2
    again = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert again.exit_code == 0 and len(service.requests) == 2  # not sent again


def test_report_submit_to_an_unreachable_server_keeps_everything(app: typer.Typer, isolated_dirs: Path,
                                                                 real_report: dict[str, Any]) -> None:
    ids = _spool(isolated_dirs, fresh(real_report), fresh(real_report))
    result = CliRunner().invoke(app, ["report", "submit", "--server", closed_port_url(), "--token", "t"])
    assert result.exit_code == 6
    assert "error: server-unreachable" in result.output
    assert sorted(p.stem for p in isolated_dirs.iterdir()) == sorted(ids)


def test_report_submit_sends_the_spool_in_batches(app: typer.Typer, isolated_dirs: Path,
                                                 real_report: dict[str, Any],
                                                 service_factory: Callable[..., Service]) -> None:
    from cli.report_spool import BATCH_SIZE

    ids = _spool(isolated_dirs, *(fresh(real_report) for _ in range(BATCH_SIZE + 3)))
    service = service_factory(stored, batch=True)
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert result.exit_code == 0, result.output
    assert service.batch_posts == 2
    assert sorted(r["report"]["report_id"] for r in service.requests) == sorted(ids)
    assert {r["path"] for r in service.requests} == {"/v1/reports/batch"}
    assert list(isolated_dirs.iterdir()) == []
    assert f"sent {BATCH_SIZE + 3} report(s), kept 0" in result.output


def test_a_batch_keeps_the_reports_it_refuses_with_their_reasons(app: typer.Typer, isolated_dirs: Path,
                                                                 real_report: dict[str, Any],
                                                                 service_factory: Callable[..., Service]) -> None:
    bad, clash, good, known = fresh(real_report), fresh(real_report), fresh(real_report), fresh(real_report)
    _spool(isolated_dirs, bad, clash, good, known)
    (isolated_dirs / "broken.json").write_text("{not json")

    def answer(report_id: str) -> tuple[int, dict[str, Any]]:
        if report_id == bad["report_id"]:
            return 422, {"code": "report-invalid", "message": "the report does not match", "causes": []}
        if report_id == clash["report_id"]:
            return 409, {"code": "report-id-conflict", "message": "stored with different content"}
        return (200 if report_id == known["report_id"] else 201), {"report_id": report_id}

    service = service_factory(answer, batch=True)
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert result.exit_code == 10  # the first moved aside: broken.json, invalid
    moved = sorted([bad["report_id"], clash["report_id"], "broken"])
    assert [p.name for p in isolated_dirs.iterdir()] == ["rejected"]
    rejected = isolated_dirs / "rejected"
    assert sorted(p.stem for p in rejected.glob("*.json") if not p.name.endswith(".reason.json")) == moved
    assert service.batch_posts == 1 and len(service.requests) == 4  # the broken file never left
    assert "sent 2 report(s), kept 0" in result.output and "moved 3 aside" in result.output
    refused = "the server refused the report"
    assert f"moved {clash['report_id']}.json to {rejected}" in result.output
    assert f"conflict: {refused}: stored with" in result.output
    assert f"report-invalid: {refused}: the report does not match" in result.output
    assert "moved broken.json" in result.output and "the file is not valid JSON" in result.output


def test_a_server_without_the_batch_route_gets_the_reports_one_by_one(app: typer.Typer, isolated_dirs: Path,
                                                                     real_report: dict[str, Any],
                                                                     service_factory: Callable[..., Service]) -> None:
    ids = _spool(isolated_dirs, *(fresh(real_report) for _ in range(3)))
    service = service_factory(stored)  # answers 404 on /v1/reports/batch
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert result.exit_code == 0, result.output
    assert [r["path"] for r in service.requests] == ["/v1/reports"] * 3
    assert sorted(r["report"]["report_id"] for r in service.requests) == sorted(ids)
    assert list(isolated_dirs.iterdir()) == []


def test_report_submit_needs_a_server(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["report", "submit", "--token", "t"])
    assert result.exit_code == 2
    assert "no server to send to" in result.output


def test_report_submit_with_nothing_spooled(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["report", "submit", "--server", "http://127.0.0.1:1", "--token", "t"])
    assert result.exit_code == 0
    assert "nothing spooled" in result.output


@pytest.mark.parametrize(
    ("where", "message"),
    [
        pytest.param("missing/dir/report.json", "does not exist", id="missing-folder"),
        pytest.param(".", "is a directory", id="a-directory"),
        pytest.param("link.json", "is a symbolic link", id="a-symlink"),
        pytest.param("fifo.json", "is not a regular file", id="a-fifo"),
        pytest.param("/dev/null", "is not a regular file", id="a-device"),
    ],
)
def test_an_unwritable_output_is_refused_before_the_probe_runs(app: typer.Typer, tmp_path: Path,
                                                               isolated_dirs: Path, where: str, message: str) -> None:
    target = tmp_path / where
    victim = tmp_path / "victim.txt"
    victim.write_text("kept")
    if where == "link.json":
        target.symlink_to(victim)  # a planted link: the report must never overwrite its target
    elif where == "fifo.json":
        os.mkfifo(target)
    result = CliRunner().invoke(app, ["probe", "--checks", "detect", "--quiet", "--output", str(target)])
    assert result.exit_code == 2, result.output
    assert "error: invalid-request" in result.output and message in result.output
    assert "progress" not in result.output and not isolated_dirs.exists()  # nothing ran, nothing spooled
    assert victim.read_text() == "kept"


def test_a_report_that_cannot_be_written_afterwards_is_kept_in_the_spool(app: typer.Typer, tmp_path: Path,
                                                                         isolated_dirs: Path) -> None:
    """The folder of --output goes away while the probe runs (the interpreter given removes it first)."""
    folder = tmp_path / "gone"
    folder.mkdir()
    wrapper = tmp_path / "python-that-removes-the-folder"
    wrapper.write_text(f"#!/bin/sh\nrm -rf {folder}\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet",
                                      "--python", str(wrapper), "--output", str(folder / "report.json")])
    assert result.exit_code == 2, result.output
    kept = list(isolated_dirs.iterdir())
    assert len(kept) == 1
    assert json.loads(kept[0].read_text())["schema_version"] == "1"
    assert "No such file or directory" in result.output and f"kept at {kept[0]}" in result.output
    assert "Traceback" not in result.output


def test_the_report_replaces_a_regular_file_through_a_temporary_one(app: typer.Typer, tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.json"
    target.parent.mkdir()
    target.write_text("old")
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet",
                                      "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["schema_version"] == "1"
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]  # no temporary file left beside it


def test_bundle_into_a_directory_leaves_nothing_beside_it(app: typer.Typer, tmp_path: Path) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    result = CliRunner().invoke(app, ["probe", "--bundle", str(folder)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in folder.iterdir()] == ["accelenv_probe.py"]
    assert [p.name for p in tmp_path.iterdir()] == ["here"]  # no stray `here.tmp` beside the directory


def test_bundle_to_a_missing_folder_is_a_clear_error(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["probe", "--bundle", str(tmp_path / "nope" / "x.py")])
    assert result.exit_code == 2
    assert "error: invalid-request" in result.output and "does not exist" in result.output
    assert list(tmp_path.iterdir()) == []


def test_probe_json_summary_names_the_outcome(app: typer.Typer, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet", "--json",
                                      "--output", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    report = json.loads(out.read_text())
    assert summary["report_id"] == report["report_id"] and summary["output"] == str(out)
    assert summary["counts"] == report["summary"]["counts"] and summary["failing"] == []
    assert "report" not in summary and summary["submitted"] is None


def test_probe_json_without_output_carries_the_report(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["probe", "--device", "cpu", "--checks", "detect", "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["report"]["report_id"] == summary["report_id"] and summary["output"] is None


def test_probe_json_errors_are_json(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["probe", "--json", "--output", str(tmp_path / "no" / "r.json")])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["code"] == "invalid-request"


def test_one_poisoned_report_does_not_block_the_spool(app: typer.Typer, isolated_dirs: Path,
                                                      real_report: dict[str, Any],
                                                      service_factory: Callable[..., Service]) -> None:
    """Issue 14 item 4: a report the server fails on (500) failed every batch: "sent 0, kept 120"."""
    from cli.report_spool import BATCH_SIZE, MAX_ATTEMPTS

    reports = [fresh(real_report) for _ in range(BATCH_SIZE + 5)]
    poisoned = reports[7]["report_id"]
    _spool(isolated_dirs, *reports)

    def answer(report_id: str) -> tuple[int, dict[str, Any]]:
        if report_id == poisoned:
            return 500, {"code": "internal-error", "message": "the server failed", "causes": []}
        return stored(report_id)

    service = service_factory(answer, batch=True)
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert result.exit_code == 6, result.output
    assert f"sent {BATCH_SIZE + 4} report(s), kept 1" in result.output
    assert [p.stem for p in isolated_dirs.glob("*.json")] == [poisoned]
    for _ in range(MAX_ATTEMPTS - 1):  # a bounded number of attempts, then it is moved aside
        result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "t"])
    assert list(isolated_dirs.glob("*.json")) == []
    reason = json.loads((isolated_dirs / "rejected" / f"{poisoned}.reason.json").read_text())
    assert reason["code"] == "server-failed" and f"{MAX_ATTEMPTS} attempts" in reason["message"]
    assert "moved 1 aside" in result.output


def test_a_refused_token_is_the_headline_error(app: typer.Typer, isolated_dirs: Path,
                                               real_report: dict[str, Any],
                                               service_factory: Callable[..., Service]) -> None:
    _spool(isolated_dirs, fresh(real_report))
    (isolated_dirs / "broken.json").write_text("{not json")  # listed first, but not the headline

    def refuse(report_id: str) -> tuple[int, dict[str, Any]]:
        return 401, {"code": "unauthorized", "message": "the token is not valid", "causes": []}

    service = service_factory(refuse, batch=True)
    result = CliRunner().invoke(app, ["report", "submit", "--server", service.url, "--token", "bad"])
    assert result.exit_code == 7, result.output
    assert "error: unauthorized" in result.output
    assert len(list(isolated_dirs.glob("*.json"))) == 1  # the good report is kept for a valid token


def test_report_submit_sends_saved_files_and_leaves_them(app: typer.Typer, tmp_path: Path, isolated_dirs: Path,
                                                         real_report: dict[str, Any],
                                                         service_factory: Callable[..., Service]) -> None:
    saved = [tmp_path / "a.json", tmp_path / "b.json"]
    reports = [fresh(real_report), fresh(real_report)]
    for path, report in zip(saved, reports):
        path.write_text(json.dumps(report))
    service = service_factory(stored, batch=True)
    result = CliRunner().invoke(app, ["report", "submit", *map(str, saved), "--server", service.url,
                                      "--token", "t", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["sent"] == [str(p) for p in saved] and body["kept"] == [] and body["error"] is None
    assert sorted(r["report"]["report_id"] for r in service.requests) == sorted(r["report_id"] for r in reports)
    assert all(p.exists() for p in saved)  # the user's files are only read
