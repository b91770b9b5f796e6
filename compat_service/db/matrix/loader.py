"""matrix_data → validate (every problem collected) → idempotent, transactional upsert into the database.

- Validation happens before the first write: a bad file set raises MatrixDataError listing every problem
  and the database is not touched.
- The write is one transaction: rows are upserted by their natural key (``natural_key`` on each table), so
  loading the same data again changes nothing and keeps every id; loading different data updates rows in
  place, inserts the new ones and deletes those gone. A ``matrix_load`` row records each change with the
  content hash and the validated document the resolver reads.
- Loading data whose hash equals the latest load is a no-op (no new ``matrix_load`` row either).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa
from packaging.version import Version
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, func, select

from compat_service.db.engine import core_table, session_scope
from compat_service.db.matrix.tables import MATRIX_TABLES, MatrixLoad, TorchPython, TorchRelease, TorchWheel
from compat_service.domain.errors import ConflictError, DatabaseNotReadyError
from compat_service.domain.matrix.model.schema import MatrixData, TorchMinor, TorchPatch

# Any constant works: it only has to be the same in every process that loads.
_PG_LOAD_LOCK = 0x616363656C656E76


@dataclass(frozen=True)
class ImportResult:
    load_id: int
    content_hash: str
    changed: bool
    counts: dict[str, int] = field(default_factory=dict)


def canonical_json(data: MatrixData) -> str:
    """The document whose sha256 is the matrix version: sorted keys, no whitespace."""
    return json.dumps(data.model_dump(mode="json", by_alias=True), sort_keys=True, separators=(",", ":"))


def content_hash(data: MatrixData) -> str:
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def version_sort_key(version: str) -> str:
    """A text key that sorts like the version: 2.9 < 2.10 (text order would say otherwise)."""
    parsed = Version(version)
    release = (list(parsed.release) + [0, 0, 0, 0])[:4]
    # Final releases sort after their pre-releases.
    pre = f"{parsed.pre[0]}{parsed.pre[1]:05d}" if parsed.pre else "z"
    return ".".join(f"{part:05d}" for part in release) + "." + pre


def matrix_rows(data: MatrixData) -> dict[type[SQLModel], list[dict[str, Any]]]:
    """Every normalized row of ``data``, per table, as plain dicts (the rest is read from the snapshot)."""
    family = {v.label: v.family for v in data.build_variants.variants}
    rows: dict[type[SQLModel], list[dict[str, Any]]] = {table: [] for table in MATRIX_TABLES}
    for minor in data.torch_releases.minors:
        for patch in minor.patches:
            rows[TorchRelease].append(
                {
                    "version": patch.version,
                    "minor": minor.minor,
                    "status": minor.status,
                    "release_date": patch.release_date,
                    "torchvision": patch.torchvision.version,
                    "torchaudio": patch.torchaudio.version,
                    "triton": patch.triton.version,
                    "index_option": minor.index_option,
                    "sort_key": version_sort_key(patch.version),
                }
            )
            wheels = _wheel_rows(minor, patch, family)
            rows[TorchWheel] += wheels
            rows[TorchPython] += _python_rows(minor, patch, {w["platform"] for w in wheels})
    return rows


def _wheel_rows(minor: TorchMinor, patch: TorchPatch, family: Mapping[str, str]) -> list[dict[str, Any]]:
    """One row per wheel variant and platform the patch publishes."""
    return [
        {
            "torch_version": patch.version,
            "label": variant.label,
            "family": family.get(variant.label, "unknown"),
            "platform": platform,
        }
        for variant in minor.variants
        if variant.patches is None or patch.version in variant.patches
        for platform in variant.platforms
    ]


def _python_rows(minor: TorchMinor, patch: TorchPatch, wheel_platforms: set[str]) -> list[dict[str, Any]]:
    """One row per Python and platform the patch supports (an entry naming no platform: every wheel's)."""
    pythons = {
        (python, platform)
        for entry in (patch.python_override or minor.python)
        for python in entry.versions
        for platform in (entry.platforms if entry.platforms else sorted(wheel_platforms))
    }
    return [{"torch_version": patch.version, "python": py, "platform": plat} for py, plat in sorted(pythons)]


def _key(model: type[SQLModel], values: Any) -> tuple[Any, ...]:
    get = values.get if isinstance(values, dict) else lambda name: getattr(values, name)
    return tuple(get(name) for name in model.natural_key)  # type: ignore[attr-defined]


def _sync(session: Session, rows: dict[type[SQLModel], list[dict[str, Any]]]) -> None:
    wanted = {model: {_key(model, row): row for row in rows[model]} for model in MATRIX_TABLES}
    existing = {model: {_key(model, r): r for r in session.exec(select(model))} for model in MATRIX_TABLES}
    # Children first, flushing per table, so no foreign key points at a deleted parent.
    for model in reversed(MATRIX_TABLES):
        for key, row in existing[model].items():
            if key not in wanted[model]:
                session.delete(row)
        session.flush()
    for model in MATRIX_TABLES:
        for key, values in wanted[model].items():
            _upsert(session, model, existing[model].get(key), values)
        session.flush()


def _upsert(session: Session, model: type[SQLModel], current: Any, values: dict[str, Any]) -> None:
    """Add the row, or set the fields of the stored one that differ."""
    if current is None:
        session.add(model(**values))
        return
    for name, value in values.items():
        if getattr(current, name) != value:
            setattr(current, name, value)


def latest_load(session: Session) -> MatrixLoad | None:
    return session.exec(select(MatrixLoad).order_by(MatrixLoad.id.desc()).limit(1)).first()  # type: ignore[union-attr]


def row_counts(session: Session) -> dict[str, int]:
    return {
        core_table(model).name: session.exec(select(func.count()).select_from(model)).one()
        for model in (*MATRIX_TABLES, cast("type[SQLModel]", MatrixLoad))
    }


def import_matrix_data(engine: Engine, data: MatrixData, *, source_path: str) -> ImportResult:
    """Upsert already-validated ``data`` in one transaction."""
    digest = content_hash(data)
    try:
        with session_scope(engine) as session:
            # Serialize concurrent loaders (several workers starting at once, a load during a start):
            # the second waits, then finds the data loaded and changes nothing.
            if engine.dialect.name == "postgresql":
                session.exec(sa.select(sa.func.pg_advisory_xact_lock(_PG_LOAD_LOCK)))  # type: ignore[call-overload]
            else:
                # A write as the first statement takes SQLite's write lock (waiting out the busy timeout)
                # before anything is read, so no snapshot goes stale under us.
                session.exec(sa.update(MatrixLoad).where(sa.false()).values(source_path=""))
            latest = latest_load(session)
            if latest is not None and latest.content_hash == digest:
                return ImportResult(latest.id or 0, digest, changed=False, counts=row_counts(session))
            _sync(session, matrix_rows(data))
            load = MatrixLoad(
                content_hash=digest,
                source_path=source_path,
                loaded_at=dt.datetime.now(dt.timezone.utc),
                data=canonical_json(data),
            )
            session.add(load)
            session.flush()
            return ImportResult(load.id or 0, digest, changed=True, counts=row_counts(session))
    except sa.exc.IntegrityError as exc:
        raise ConflictError(
            f"the matrix could not be stored: {exc.orig}",
            hint="another load may have run at the same time; run `accelenv db load` again",
        ) from exc
    except sa.exc.OperationalError as exc:
        raise DatabaseNotReadyError(
            f"the matrix could not be stored: {exc.orig}",
            hint="check that the database is reachable and not locked by a long transaction, then retry",
        ) from exc


def import_matrix(engine: Engine, path: Path | None = None) -> ImportResult:
    """Validate matrix_data at ``path`` (None = the bundled copy) and load it."""
    from compat_service.domain.matrix.loading.loader import load_matrix_data

    data = load_matrix_data(path)
    return import_matrix_data(engine, data, source_path=str(path) if path else "bundled matrix_data")


def prepare_database(
    engine: Engine, *, migrate_schema: bool, load_matrix: bool, matrix_path: Path | None = None
) -> ImportResult | None:
    """What a starting service needs: migrate (or require head), then load the matrix into an empty database.

    With ``migrate_schema`` false an unmigrated database raises DatabaseNotReadyError saying to run
    `accelenv db upgrade`. Returns the load when one happened.
    """
    from compat_service.db import migrate

    if migrate_schema:
        migrate.upgrade(engine)
    else:
        migrate.require_head(engine)
    if not load_matrix:
        return None
    with Session(engine) as session:
        if latest_load(session) is not None:
            return None
    return import_matrix(engine, matrix_path)
