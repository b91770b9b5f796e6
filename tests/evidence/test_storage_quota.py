"""Issue 34: a per-token storage quota for report data (ACCELENV_QUOTA_TOKEN_REPORT_BYTES), on SQLite and
PostgreSQL, through the real app: a token past it is refused 403 `report-storage-quota` and nothing of the
refused submission is stored; other tokens go on; resubmitting a stored report costs nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from compat_service.api.deps import state_of
from tests.evidence.conftest import make_token
from tests.evidence.recount import assert_counters_equal_a_recount
from tests.synthetic_reports import synthetic_report


def _recount(client: TestClient) -> dict[int, tuple[int, int]]:
    """Reports and body bytes per token, counted afresh from the stored reports."""
    engine = state_of(client.app).engine
    counts: dict[int, tuple[int, int]] = {}
    with engine.connect() as conn:
        for token_id, body in conn.execute(sa.text("SELECT submitter_id, body FROM probe_report")):
            reports, size = counts.get(token_id, (0, 0))
            counts[token_id] = (reports + 1, size + len(body.encode()))
    return counts


@pytest.fixture
def quota_app(database_url: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    from compat_service.api.app import create_app
    from compat_service.config import Settings

    settings = Settings(database_url=database_url, auto_migrate=True, matrix_refresh_s=0, token_cache_s=0,
                        quota_token_report_bytes=0)
    app = create_app(settings)
    with TestClient(app) as client:
        engine = state_of(app).engine
        tokens = {name: make_token(engine, scope) for name, scope in
                  (("alice", "report"), ("bob", "report"), ("reader", "read"))}
        yield client, tokens


def _usage(client: TestClient) -> dict[int, tuple[int, int]]:
    engine = state_of(client.app).engine
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT token_id, reports, report_bytes FROM token_storage")).all()
    return {token_id: (reports, size) for token_id, reports, size in rows}


def _post(client: TestClient, tokens: dict[str, str], who: str, report: dict[str, Any]) -> Any:
    return client.post("/v1/reports", json=report, headers={"Authorization": f"Bearer {tokens[who]}"})


def test_a_token_past_its_storage_quota_is_refused_and_stores_nothing(
    quota_app: tuple[TestClient, dict[str, str]],
) -> None:
    client, tokens = quota_app
    first = synthetic_report(host="a")
    assert _post(client, tokens, "alice", first).status_code == 201
    (used,) = [size for _, size in _usage(client).values()]
    # the count is the stored body's bytes, the same the quota compares
    assert used > 1000
    # a quota that leaves room for one more report of that size and not two
    state_of(client.app).settings.quota_token_report_bytes = used * 2 + used // 2
    assert _post(client, tokens, "alice", synthetic_report(host="b")).status_code == 201
    third = synthetic_report(host="c")
    refused = _post(client, tokens, "alice", third)
    assert refused.status_code == 403, refused.text
    body = refused.json()
    assert body["code"] == "report-storage-quota"
    assert "ACCELENV_QUOTA_TOKEN_REPORT_BYTES" in body["hint"]
    assert f"of its {used * 2 + used // 2} bytes" in body["message"]
    reader = {"Authorization": f"Bearer {tokens['reader']}"}
    assert client.get(f"/v1/reports/{third['report_id']}", headers=reader).status_code == 404
    # resubmitting a stored report changes nothing and costs nothing
    again = _post(client, tokens, "alice", first)
    assert again.status_code == 200, again.text
    assert [reports for reports, _ in _usage(client).values()] == [2]
    # another token has its own quota
    assert _post(client, tokens, "bob", third).status_code == 201
    assert sorted(reports for reports, _ in _usage(client).values()) == [1, 2]
    assert _usage(client) == _recount(client)
    assert_counters_equal_a_recount(state_of(client.app).engine)


def test_a_batch_past_the_quota_stores_none_of_its_reports(
    quota_app: tuple[TestClient, dict[str, str]],
) -> None:
    client, tokens = quota_app
    state_of(client.app).settings.quota_token_report_bytes = 2_000  # one report fits, three do not
    batch = [synthetic_report(host=h) for h in ("a", "b", "c")]
    res = client.post("/v1/reports/batch", json=batch, headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert res.status_code == 403 and res.json()["code"] == "report-storage-quota", res.text
    assert "3 new report(s)" in res.json()["message"]
    assert _usage(client) == {} and _recount(client) == {}
    # one report alone fits
    res = client.post("/v1/reports/batch", json=batch[:1], headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert [r["status"] for r in res.json()["results"]] == ["created"], res.text
    assert _usage(client) == _recount(client)


def test_no_quota_by_default_and_the_usage_is_still_counted(
    quota_app: tuple[TestClient, dict[str, str]],
) -> None:
    client, tokens = quota_app
    reports = [synthetic_report(host=h) for h in ("a", "b")]
    res = client.post("/v1/reports/batch", json=reports, headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert res.status_code == 200, res.text
    assert len(_usage(client)) == 1 and _usage(client) == _recount(client)


def test_the_migration_counts_what_was_stored_before(database_url: str) -> None:
    """Revision 0010 fills token_storage from the reports already stored: downgrade past it with two reports
    stored, upgrade again, and the counts are the same as the ingest's."""
    from compat_service.api.app import create_app
    from compat_service.config import Settings
    from compat_service.db import migrate

    app = create_app(Settings(database_url=database_url, auto_migrate=True, matrix_refresh_s=0))
    with TestClient(app) as client:
        engine = state_of(app).engine
        token = make_token(engine)
        for host in ("a", "b"):
            res = client.post("/v1/reports", json=synthetic_report(host=host),
                              headers={"Authorization": f"Bearer {token}"})
            assert res.status_code == 201, res.text
        counted = _usage(client)
        migrate.downgrade(engine, "0009_token_owner")
        migrate.upgrade(engine)
        assert _usage(client) == counted


def test_concurrent_submissions_never_overshoot_the_quota(engine: sa.Engine) -> None:
    """Eight threads store 40 reports of one token, one transaction each, against a quota that fits about a
    dozen: the database's conditional update decides, so the stored bytes stay within it and equal a recount."""
    from concurrent.futures import ThreadPoolExecutor

    from sqlmodel import Session

    from compat_service.db.evidence.ingest import ingest_prepared
    from compat_service.db.evidence.prepare import prepare_report
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token
    from compat_service.domain.errors import ReportStorageQuotaError
    from compat_service.domain.evidence.report import ProbeReport

    token = create_token(engine, ApiTokenCreate(scope="report"))[0]
    reports = [ProbeReport.model_validate(synthetic_report(host=f"h{n}")) for n in range(40)]
    sizes = [len(prepare_report(r).report_row["body"].encode()) for r in reports]
    quota = sum(sorted(sizes)[:12])

    def store(report: ProbeReport) -> object:
        with Session(engine) as session:
            prepared = prepare_report(report, submitter_id=token.id, byte_quota=quota)
            return ingest_prepared(session, [prepared])[0]

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(store, reports))
    refused = [o for o in outcomes if isinstance(o, ReportStorageQuotaError)]
    created = len(outcomes) - len(refused)
    assert 10 <= created <= 12 and len(refused) == 40 - created
    with engine.connect() as conn:
        used = conn.execute(sa.text("SELECT reports, report_bytes FROM token_storage")).one()
        bodies = conn.execute(sa.text("SELECT body FROM probe_report")).scalars().all()
    assert used == (created, sum(len(b.encode()) for b in bodies)) and used[1] <= quota
