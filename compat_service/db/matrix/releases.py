"""Queries behind ``GET /v1/torch``: torch releases with their wheels and Python support, filtered."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa
from pydantic import BaseModel
from sqlmodel import Session, col, func, select

from compat_service.db.matrix.tables import TorchPython, TorchRelease, TorchReleaseBase, TorchWheel
from compat_service.domain.backends import python_sort_key


class WheelSet(BaseModel):
    label: str
    family: str
    platforms: list[str]


class PythonSet(BaseModel):
    version: str
    platforms: list[str]


class TorchReleasePublic(TorchReleaseBase):
    variants: list[WheelSet]
    python: list[PythonSet]


@dataclass(frozen=True)
class ReleaseFilter:
    minor: str | None = None
    python: str | None = None
    #: a build label (cu121) or a family (cuda)
    backend: str | None = None
    platform: str | None = None


def _conditions(f: ReleaseFilter) -> list[sa.ColumnElement[bool]]:
    conds: list[sa.ColumnElement[bool]] = []
    if f.minor:
        conds.append(col(TorchRelease.minor) == f.minor)
    if f.backend or f.platform:
        wheel = select(TorchWheel.id).where(TorchWheel.torch_version == TorchRelease.version)
        if f.backend:
            wheel = wheel.where(sa.or_(col(TorchWheel.label) == f.backend, col(TorchWheel.family) == f.backend))
        if f.platform:
            wheel = wheel.where(TorchWheel.platform == f.platform)
        conds.append(wheel.exists())
    if f.python:
        py = select(TorchPython.id).where(
            TorchPython.torch_version == TorchRelease.version, TorchPython.python == f.python
        )
        if f.platform:
            py = py.where(TorchPython.platform == f.platform)
        conds.append(py.exists())
    return conds


def _public(session: Session, releases: list[TorchRelease]) -> list[TorchReleasePublic]:
    versions = [r.version for r in releases]
    wheels: dict[str, dict[tuple[str, str], list[str]]] = defaultdict(lambda: defaultdict(list))
    pythons: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    if versions:
        for w in session.exec(
            select(TorchWheel).where(col(TorchWheel.torch_version).in_(versions)).order_by(col(TorchWheel.id))
        ):
            wheels[w.torch_version][(w.label, w.family)].append(w.platform)
        for p in session.exec(
            select(TorchPython).where(col(TorchPython.torch_version).in_(versions)).order_by(col(TorchPython.id))
        ):
            pythons[p.torch_version][p.python].append(p.platform)
    return [
        TorchReleasePublic(
            **TorchReleaseBase.model_validate(r, from_attributes=True).model_dump(),
            variants=[
                WheelSet(label=label, family=family, platforms=sorted(platforms))
                for (label, family), platforms in wheels[r.version].items()
            ],
            python=[
                PythonSet(version=py, platforms=sorted(platforms))
                for py, platforms in sorted(pythons[r.version].items(), key=lambda kv: python_sort_key(kv[0]))
            ],
        )
        for r in releases
    ]


def list_releases(
    session: Session, f: ReleaseFilter, *, limit: int, offset: int
) -> tuple[int, list[TorchReleasePublic]]:
    """(total matching, one page of releases newest first)."""
    conds = _conditions(f)
    total = session.exec(select(func.count()).select_from(TorchRelease).where(*conds)).one()
    rows = session.exec(
        select(TorchRelease).where(*conds).order_by(col(TorchRelease.sort_key).desc()).offset(offset).limit(limit)
    ).all()
    return total, _public(session, list(rows))


def get_release(session: Session, version: str) -> TorchReleasePublic | None:
    row = session.exec(select(TorchRelease).where(TorchRelease.version == version)).first()
    return _public(session, [row])[0] if row else None
