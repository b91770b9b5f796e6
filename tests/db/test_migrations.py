"""Migrations from an empty database, the head check, and the models agreeing with the migration."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

from compat_service.db import migrate
from compat_service.db.engine import make_engine
from compat_service.db.evidence.report_tables import StoredReport
from compat_service.db.matrix.loader import import_matrix
from compat_service.db.matrix.tables import MATRIX_TABLES, ApiToken, MatrixLoad
from compat_service.domain.errors import DatabaseNotReadyError
from compat_service.domain.matrix.loading.loader import load_matrix_data

OUR_TABLES = {
    t.__tablename__ for t in (*MATRIX_TABLES, MatrixLoad, ApiToken, StoredReport)  # type: ignore[attr-defined]
}


def test_upgrade_from_empty_reaches_head_and_creates_tables(database_url: str) -> None:
    engine = make_engine(database_url)
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    assert OUR_TABLES <= set(sa.inspect(engine).get_table_names())
    migrate.upgrade(engine)  # a second run is a no-op
    assert migrate.current_revision(engine) == migrate.head_revision()
    engine.dispose()


#: the matrix tables migration 0004 drops (nothing read them; the snapshot in matrix_load holds their data)
DROPPED_IN_0004 = {"source", "build_variant", "cuda_toolkit", "gpu_arch_list", "vendor_plugin"}


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def test_0004_drops_the_write_only_matrix_tables_and_its_downgrade_refills_them(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    assert not DROPPED_IN_0004 & _tables(engine)
    migrate.downgrade(engine, "0003_report_body_lz4")  # nothing loaded yet: the tables come back empty
    assert DROPPED_IN_0004 <= _tables(engine)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM source")).scalar() == 0
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    import_matrix(engine)

    migrate.downgrade(engine, "0003_report_body_lz4")
    assert migrate.current_revision(engine) == "0003_report_body_lz4"
    data = load_matrix_data()
    with engine.connect() as conn:
        count = {t: conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar() for t in sorted(DROPPED_IN_0004)}
        sources: dict[str, Any] = {key: c for key, c in conn.execute(sa.text("SELECT key, confidence FROM source"))}
        toolkit = conn.execute(
            sa.text("SELECT min_driver_linux FROM cuda_toolkit WHERE version = :v"),
            {"v": data.cuda.toolkits[-1].version},
        ).scalar()
        plugins = set(conn.execute(sa.text("SELECT plugin FROM vendor_plugin")).scalars())
    assert count == {
        "build_variant": len(data.build_variants.variants),
        "cuda_toolkit": len(data.cuda.toolkits),
        "gpu_arch_list": len(data.gpu_archs.arch_lists),
        "source": len(data.sources.sources),
        "vendor_plugin": len(data.vendor_backends.ascend_npu) + len(data.vendor_backends.cambricon_mlu),
    }
    assert sources == {s.key: s.confidence for s in data.sources.sources}
    assert toolkit == data.cuda.toolkits[-1].min_driver_linux
    assert plugins == {"torch_npu", "torch_mlu"}
    migrate.upgrade(engine)
    assert not DROPPED_IN_0004 & _tables(engine)
    engine.dispose()


def _indexes(engine: sa.Engine, table: str) -> dict[str, list[str | None]]:
    return {i["name"]: i["column_names"] for i in sa.inspect(engine).get_indexes(table)}  # type: ignore[misc]


def test_0006_orders_the_recent_reports_index_and_its_downgrade_restores_the_old_one(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    indexes = _indexes(engine, "probe_report")
    assert indexes["ix_probe_report_cell_recent"] == ["cell_id", "received_at", "report_id"]
    assert "ix_probe_report_cell_received" not in indexes
    with engine.connect() as conn:  # received_at descending: the order GET /v1/evidence lists a cell's reports
        if engine.dialect.name == "sqlite":
            order = [r[3] for r in conn.execute(sa.text("PRAGMA index_xinfo(ix_probe_report_cell_recent)")) if r[5]]
        else:
            order = list(conn.execute(sa.text(
                "SELECT pg_index_column_has_property('ix_probe_report_cell_recent'::regclass, n, 'desc') "
                "FROM generate_series(1, 3) n")).scalars())
    assert order == [0, 1, 0] if engine.dialect.name == "sqlite" else order == [False, True, False]
    migrate.downgrade(engine, "0005_evidence_submitters")
    indexes = _indexes(engine, "probe_report")
    assert indexes["ix_probe_report_cell_received"] == ["cell_id", "received_at"]
    assert "ix_probe_report_cell_recent" not in indexes
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    engine.dispose()


def test_require_head_refuses_an_empty_database_with_the_fix(database_url: str) -> None:
    engine = make_engine(database_url)
    engine.connect().close()  # an existing database (a SQLite file is created here) with no schema
    with pytest.raises(DatabaseNotReadyError) as info:
        migrate.require_head(engine)
    assert "accelenv db upgrade" in (info.value.hint or "")
    assert "none (empty database)" in info.value.message
    engine.dispose()


def test_require_head_does_not_create_a_missing_sqlite_file(sqlite_url: str, tmp_path: Path) -> None:
    engine = make_engine(sqlite_url)
    with pytest.raises(DatabaseNotReadyError) as info:
        migrate.require_head(engine)
    assert info.value.message == f"the database file {tmp_path / 'accelenv.sqlite3'} does not exist"
    assert "accelenv db init" in (info.value.hint or "")
    assert list(tmp_path.iterdir()) == []


def test_tables_match_the_models(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    with engine.connect() as conn:
        diffs = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata
        )
    engine.dispose()

    def table_of(diff: object) -> str | None:
        item = diff[0] if isinstance(diff, list) else diff
        for part in item[1:] if isinstance(item, tuple) else ():
            name = getattr(part, "name", None) if not isinstance(part, str) else None
            table = getattr(part, "table", None)
            if table is not None:
                return table.name
            if name in OUR_TABLES:
                return name
            if isinstance(part, str) and part in OUR_TABLES:
                return part
        return None

    ours = [d for d in diffs if table_of(d) in OUR_TABLES]
    assert ours == []


def test_unreachable_database_is_a_clear_error() -> None:
    engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(DatabaseNotReadyError) as info:
        migrate.current_revision(engine)
    assert "unreachable" in info.value.message


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
        assert (conn.execute(sa.text("PRAGMA busy_timeout")).scalar() or 0) >= 5000
    engine.dispose()


def test_concurrent_upgrades_take_turns(database_url: str) -> None:
    """Four processes (like service workers starting together) migrate one empty database at once."""
    script = (
        "import sys; from compat_service.db.engine import make_engine; from compat_service.db import migrate; "
        "migrate.upgrade(make_engine(sys.argv[1]))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, database_url], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    try:
        errors = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    engine = make_engine(database_url)
    assert migrate.current_revision(engine) == migrate.head_revision()
    engine.dispose()


def test_concurrent_upgrades_in_one_process_take_turns(database_url: str) -> None:
    engine = make_engine(database_url)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: migrate.upgrade(engine), range(4)))
    assert migrate.current_revision(engine) == migrate.head_revision()
    engine.dispose()


def test_report_bodies_are_compressed_with_lz4_where_postgresql_has_it(postgres_database: str) -> None:
    engine = make_engine(postgres_database)
    migrate.upgrade(engine)
    with engine.connect() as conn:
        has_lz4 = "lz4" in (conn.execute(
            sa.text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        ).scalar() or ())
        method = conn.execute(
            sa.text(
                "SELECT attcompression FROM pg_attribute "
                "WHERE attrelid = 'probe_report'::regclass AND attname = 'body'"
            )
        ).scalar()
    engine.dispose()
    assert method == ("l" if has_lz4 else "")
