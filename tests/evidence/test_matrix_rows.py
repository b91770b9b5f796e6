"""`GET /v1/matrix` from the rows it assembles once per (matrix load, evidence stamp): the same answers as
assembling every row afresh, and never stale after an ingest or a withdrawal, whichever worker stored it."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import Session, col

from compat_service.api.deps import state_of
from compat_service.db.evidence.queries import MatrixFilter, cell_summary, declared_for, with_failing_checks
from compat_service.db.evidence.tables import EvidenceCell
from compat_service.domain.backends import label_family
from compat_service.domain.evidence.cells import CellKey, DeclaredMatrix, MatrixCell
from tests.evidence.conftest import Service
from tests.synthetic_reports import synthetic_report

SMOKE_FAILS = {"smoke.train_step": "failed"}
OPS_FAIL = {"ops.sort.default.float32": "failed"}
#: (report parameters, hosts): declared cells with one or several evidence cells of several backends, observed
#: cells (a PrivateUse1 backend, a torch the matrix does not list, a build nobody reported), every status
REPORTS: list[tuple[dict[str, Any], int]] = [
    (dict(torch="2.13.0+cpu", build="cpu", python="3.11.7"), 2),
    (dict(torch="2.13.0+cpu", build="cpu", python="3.12.1", statuses=OPS_FAIL), 1),
    (dict(torch="2.13.0+cu130", build="cu130", python="3.12.1", backend="cuda", driver="580.65.06",
          runtime="13.0", device_arch="sm_90"), 2),
    (dict(torch="2.13.0+cu130", build="cu130", python="3.12.1", backend="cuda", driver="580.65.06",
          runtime="13.0", device_arch="sm_120", statuses=SMOKE_FAILS), 1),
    (dict(torch="2.13.0+cu130", build="cu130", python="3.12.1", backend="cpu", statuses=OPS_FAIL), 1),
    (dict(torch="2.13.0+rocm7.2", build="rocm7.2", python="3.12.1", backend="cuda", runtime="7.2",
          device_arch="gfx942"), 1),
    (dict(torch="2.13.0+cpu", build="cpu", python="3.13.1", os="macos", arch="arm64", backend="mps"), 2),
    (dict(torch="2.12.1+cu126", build="cu126", python="3.11.7", os="windows", arch="AMD64", backend="cuda",
          driver="560.94", runtime="12.6", device_arch="sm_89"), 1),
    (dict(torch="2.13.0+cpu", build="cpu", python="3.11.7", backend="refdev", statuses=OPS_FAIL), 2),
    (dict(torch="9.9.0+cpu", build="cpu", python="3.11.7"), 1),
    (dict(torch="2.13.0", build=None, python="3.11.7"), 1),
]
FILTERS = [
    *(dict(torch=t, build=b, backend=k) for t, b, k in itertools.product(
        (None, "2.13", "2.13.0", "2.12.1", "9.9"), (None, "cpu", "cu130"), (None, "cpu", "cuda", "refdev"))),
    *(dict(torch="2.13", status=s, arch=a) for s, a in itertools.product(
        (None, "declared", "verified", "partial", "broken", "observed"), (None, "amd64", "arm64"))),
    *(dict(torch="2.1", os=o, python=p) for o, p in itertools.product(
        (None, "linux", "windows", "macos"), (None, "3.11", "3.12"))),
]
PAGES = [dict(limit=500, offset=0), dict(limit=3, offset=2)]


def _submit_all(service: Service) -> None:
    for i, (params, hosts) in enumerate(REPORTS):
        for host in range(hosts):
            res = service.submit(synthetic_report(host=f"{i}-{host}", **params))
            assert res.status_code == 201, res.text


def _assembled_afresh(session: Session, declared: DeclaredMatrix, flt: MatrixFilter) -> list[tuple[MatrixCell, Any]]:
    """The matrix rows as the route assembled them before it kept them (a model per row, per request): the
    evidence cells the filter's key parts select, each under its declared cell (a declared cell none of them
    falls under alone), then the observed ones; then ``keeps``."""
    query = sa.select(EvidenceCell)
    for column, value in ((EvidenceCell.torch_build, flt.build), (EvidenceCell.python, flt.python),
                          (EvidenceCell.os, flt.os), (EvidenceCell.backend, flt.backend)):
        if value is not None:
            query = query.where(col(column) == value)
    if flt.torch is not None:
        query = query.where(sa.or_(col(EvidenceCell.torch_version) == flt.torch,
                                   col(EvidenceCell.torch_version).startswith(flt.torch + ".")))
    by_declared: dict[Any, list[EvidenceCell]] = {}
    observed: list[EvidenceCell] = []
    for cell in session.execute(query).scalars():
        key = CellKey(**{f: getattr(cell, f) for f in CellKey.model_fields})
        owner = declared.declared_cell_of(key)
        (observed if owner is None else by_declared.setdefault(owner, [])).append(cell)

    def row(cell: EvidenceCell, declared: bool) -> MatrixCell:
        key = {f: getattr(cell, f) for f in CellKey.model_fields}
        return MatrixCell(**key, **cell_summary(cell, declared=declared, min_hosts=2, min_submitters=1))

    rows: list[tuple[MatrixCell, Any]] = []
    for dcell in declared.cells:
        if not flt.torch_matches(dcell.torch_version):
            continue
        cells = by_declared.get(dcell)
        if not cells:
            rows.append((MatrixCell(torch_version=dcell.torch_version, torch_build=dcell.torch_build,
                                    python=dcell.python, os=dcell.os, arch=dcell.arch, declared=True,
                                    status="declared", health="none"), None))
        rows.extend((row(c, True), c.id) for c in sorted(cells or (), key=lambda c: c.key_hash))
    rows.extend((row(c, False), c.id) for c in sorted(observed, key=lambda c: (c.torch_version, c.backend, c.key_hash)))
    return [(r, cid) for r, cid in rows if flt.keeps(r)]


def _expected(service: Service, query: dict[str, Any], page: dict[str, int]) -> dict[str, Any]:
    app: Any = service.client.app
    matrix = state_of(app).matrix_repository.current()
    declared = declared_for(matrix.content_hash, matrix.data)
    with Session(service.engine) as session:
        rows = _assembled_afresh(session, declared, MatrixFilter(**query))
        window = rows[page["offset"] : page["offset"] + page["limit"]]
        return {
            "matrix_version": matrix.version, "total": len(rows), **page,
            "items": [r.model_dump(mode="json", exclude={"family", "build_runtime"})
                      for r in with_failing_checks(session, window)],
        }


def _answer(service: Service, query: dict[str, Any], page: dict[str, int]) -> dict[str, Any]:
    res = service.client.get("/v1/matrix", params=query | page)
    assert res.status_code == 200, res.text
    body = res.json()
    # the build's family and runtime come from build_variants.yaml at page time (routes/matrix.py)
    for item in body["items"]:
        family, runtime = item.pop("family"), item.pop("build_runtime")
        build = item["torch_build"]
        assert family == (label_family(build) if build else None)
        assert runtime is None or build in (f"cu{runtime.replace('.', '')}", f"rocm{runtime}")
    return body


def test_pages_are_what_assembling_every_row_afresh_gives(service: Service) -> None:
    _submit_all(service)
    seen_statuses = set()
    for query, page in itertools.product(FILTERS, PAGES):
        query = {k: v for k, v in query.items() if v is not None}
        answer = _answer(service, query, page)
        assert answer == _expected(service, query, page), query | page
        seen_statuses |= {r["status"] for r in answer["items"]}
    assert seen_statuses == {"declared", "verified", "partial", "broken", "observed"}


def test_each_answer_follows_the_report_before_it(service: Service) -> None:
    """Read between reports: each answer comes from the rows kept for the last one, updated (a new cell, or
    new counters of known cells) rather than assembled afresh."""
    page = dict(limit=500, offset=0)
    for i, (params, hosts) in enumerate(REPORTS * 2):
        for host in range(hosts):
            assert service.submit(synthetic_report(host=f"{i}-{host}", **params)).status_code == 201
            for query in ({"torch": "2.13"}, {"torch": "2.13", "backend": "cuda"}, {"status": "observed"}):
                assert _answer(service, query, page) == _expected(service, query, page), (i, host, query)


@pytest.fixture
def two_workers(database_url: str) -> Iterator[tuple[TestClient, TestClient]]:
    """Two apps over one database, as two uvicorn workers are; a long refresh period (the matrix rows must not
    depend on it)."""
    from compat_service.api.app import create_app
    from compat_service.config import Settings

    settings = Settings(database_url=database_url, auto_migrate=True, verified_min_hosts=2, verified_min_submitters=1,
                        matrix_refresh_s=3600)
    with TestClient(create_app(settings)) as first, TestClient(create_app(settings)) as second:
        yield first, second


def test_a_report_stored_through_another_worker_shows_at_once(two_workers: tuple[TestClient, TestClient]) -> None:
    from compat_service.db.evidence.withdraw import withdraw_submitter
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    reader, writer = two_workers
    engine = state_of(writer.app).engine
    public, secret = create_token(engine, ApiTokenCreate(scope="report", note="matrix rows"))
    query = {"torch": "2.13.0", "build": "cpu", "python": "3.11", "os": "linux", "arch": "x86_64"}

    def cpu_row() -> tuple[str, int]:
        (row,) = reader.get("/v1/matrix", params=query).json()["items"]
        return row["status"], row["reports"]

    assert cpu_row() == ("declared", 0)
    for host in ("a", "b"):
        auth = {"Authorization": f"Bearer {secret}"}
        res = writer.post("/v1/reports", json=synthetic_report(host=host), headers=auth)
        assert res.status_code == 201, res.text
        assert cpu_row() == ("declared" if host == "a" else "verified", 1 if host == "a" else 2)
    withdraw_submitter(engine, public.id, now=dt.datetime.now(dt.timezone.utc))
    assert cpu_row() == ("declared", 0)


def test_the_row_type_holds_the_wire_models_fields() -> None:
    """`MatrixRow` (the rows of GET /v1/matrix and the heatmap) holds `MatrixCell`'s fields but its failing
    checks, in its order, then the evidence cell id: a field added to the model must be added to the row."""
    from compat_service.db.evidence.matrix_cells import MatrixRow

    wire = [name for name in MatrixCell.model_fields if name != "failing_checks"]
    assert list(MatrixRow._fields) == [*wire, "evidence_cell_id"]
