"""Loading matrix_data: idempotent, transactional, all-or-nothing (SQLite and PostgreSQL)."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path
from typing import cast

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, select

from compat_service.db.engine import core_table
from compat_service.db.matrix.loader import (
    content_hash,
    import_matrix,
    import_matrix_data,
    row_counts,
    version_sort_key,
)
from compat_service.db.matrix.snapshot_follower import MatrixRepository, read_snapshot
from compat_service.db.matrix.tables import MATRIX_TABLES, MatrixLoad, TorchRelease, TorchWheel
from compat_service.domain.errors import MatrixDataError
from compat_service.domain.matrix.loading.loader import default_path, load_matrix_data, load_matrix_rows
from compat_service.domain.matrix.model.rows import MatrixTables
from compat_service.domain.matrix.model.schema import SourcesFile


def database_digest(engine: Engine) -> str:
    """sha256 over every row (ids included) of every matrix table and matrix_load."""
    digest = hashlib.sha256()
    with Session(engine) as session:
        for model in (*MATRIX_TABLES, cast("type[SQLModel]", MatrixLoad)):
            for row in session.exec(select(model).order_by(core_table(model).c.id)):
                digest.update(json.dumps(row.model_dump(mode="json"), sort_keys=True).encode())
    return digest.hexdigest()


def test_load_fills_every_table_and_records_the_load(engine: Engine) -> None:
    result = import_matrix(engine)
    assert result.changed
    assert result.content_hash == content_hash(load_matrix_data())
    for model in MATRIX_TABLES:
        assert result.counts[core_table(model).name] > 0, model
    assert result.counts["matrix_load"] == 1
    with Session(engine) as session:
        release = session.exec(select(TorchRelease).where(TorchRelease.version == "2.3.1")).one()
        assert release.minor == "2.3"
        labels = set(session.exec(select(TorchWheel.label).where(TorchWheel.torch_version == "2.3.1")))
        assert {"cpu", "cu121"} <= labels


def test_the_service_reads_the_rows_the_cli_reads(engine: Engine) -> None:
    """The stored load builds the same row classes, equal row for row, as the YAML does on the CLI."""
    import_matrix(engine)
    snapshot = read_snapshot(engine)
    assert snapshot is not None and type(snapshot.data) is MatrixTables
    assert snapshot.data == load_matrix_rows()


def test_loading_twice_changes_nothing(engine: Engine, tmp_path: Path) -> None:
    path = shutil.copytree(default_path(), tmp_path / "matrix_data")
    first = import_matrix(engine, path)
    before = database_digest(engine)
    with Session(engine) as session:
        counts = row_counts(session)
    second = import_matrix(engine, path)
    assert not second.changed
    assert second.load_id == first.load_id
    assert second.counts == counts
    assert database_digest(engine) == before


def test_changed_data_updates_in_place_and_keeps_ids(engine: Engine) -> None:
    data = load_matrix_data()
    import_matrix_data(engine, data, source_path="a")
    with Session(engine) as session:
        ids_before = {r.version: r.id for r in session.exec(select(TorchRelease))}
        wheels_before = {(w.torch_version, w.label, w.platform): w.id for w in session.exec(select(TorchWheel))}
    releases = data.torch_releases
    minor, *other_minors = releases.minors
    patch, *other_patches = minor.patches
    redated = patch.model_copy(update={"release_date": dt.date(2000, 1, 2)})
    first, *rest = data.sources.sources
    renamed = first.model_copy(update={"title": first.title + " (renamed)"})
    changed = data.model_copy(
        update={
            "sources": SourcesFile.model_validate({"schema": "sources/v1", "sources": [renamed, *rest]}),
            "torch_releases": releases.model_copy(
                update={"minors": [minor.model_copy(update={"patches": [redated, *other_patches]}), *other_minors]}
            ),
        }
    )
    result = import_matrix_data(engine, changed, source_path="b")
    assert result.changed and result.content_hash != content_hash(data)
    with Session(engine) as session:
        rows = {r.version: r for r in session.exec(select(TorchRelease))}
        assert {v: r.id for v, r in rows.items()} == ids_before
        assert rows[patch.version].release_date == dt.date(2000, 1, 2)
        assert {(w.torch_version, w.label, w.platform): w.id for w in session.exec(select(TorchWheel))} == wheels_before
        assert len(session.exec(select(MatrixLoad)).all()) == 2
    # The resolver's view (the snapshot: sources, variants, toolkits, arch lists...) follows the newest load.
    snapshot = read_snapshot(engine)
    assert snapshot is not None and snapshot.content_hash == result.content_hash
    assert MatrixRepository(engine, refresh_s=0).current().data.sources.sources[0].title == renamed.title


def _broken_copy(tmp_path: Path) -> Path:
    target = tmp_path / "matrix_data"
    shutil.copytree(default_path(), target)
    sources = target / "sources.yaml"
    sources.write_text(sources.read_text().replace("    confidence:", "    confidance:", 1))
    releases = target / "torch_releases.yaml"
    releases.write_text(releases.read_text() + "\n  - this is: [not valid\n")
    return target


def test_bad_files_are_rejected_whole_and_the_database_is_untouched(engine: Engine, tmp_path: Path) -> None:
    import_matrix(engine)
    before = database_digest(engine)
    with pytest.raises(MatrixDataError) as info:
        import_matrix(engine, _broken_copy(tmp_path))
    causes = " ".join(f"{c.constraint} {c.origin} {c.detail}" for c in info.value.causes)
    assert len(info.value.causes) >= 2
    assert "sources.yaml" in causes and "torch_releases.yaml" in causes
    assert database_digest(engine) == before


@pytest.mark.parametrize(
    ("smaller", "larger"),
    [("2.9.0", "2.10.0"), ("2.3.0", "2.3.1"), ("2.6.0rc1", "2.6.0"), ("1.13.1", "2.0.0")],
    ids=["minor-digits", "patch", "pre-release", "major"],
)
def test_version_sort_key_orders_like_versions(smaller: str, larger: str) -> None:
    assert version_sort_key(smaller) < version_sort_key(larger)


def test_concurrent_loads_store_the_matrix_once(engine: Engine) -> None:
    data = load_matrix_data()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(lambda i: import_matrix_data(engine, data, source_path=f"loader {i}"), range(4))
        )
    assert sum(r.changed for r in results) == 1
    assert len({r.load_id for r in results}) == 1
    with Session(engine) as session:
        assert len(session.exec(select(MatrixLoad)).all()) == 1
