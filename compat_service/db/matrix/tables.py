"""SQLModel tables for the matrix, its load bookkeeping and API tokens (revisions 0001, 0004).

Design: ``MatrixLoad.data`` keeps the validated MatrixData document of each load; the resolver, doctor
and ``GET /v1/matrix`` read that snapshot (``matrix_repository``), so the service and the offline CLI
resolve from identical data with no lossy reconstruction, and the matrix's schema is the domain's
pydantic models alone. The only normalized tables are the ones a query needs: torch releases with their
wheels and Python support, for ``GET /v1/torch`` (``torch_repository``). They are projections, not copies
of a file's shape: one row per patch with its minor's fields, per (patch, label, platform), per (patch,
Python, platform), so their columns are written here rather than derived from the domain models (see
docs/architecture.md). Each names its natural key in ``natural_key``: the importer upserts by it, so
reloading the same data keeps every id. Migration 0004 dropped the tables nothing read (sources, build
variants, CUDA toolkits, GPU arch lists, vendor plugins).

Tables are created only by the Alembic migrations, never by ``create_all`` in the app.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

# --------------------------------------------------------------------------- bookkeeping


class MatrixLoadBase(SQLModel):
    content_hash: str = Field(max_length=64, description="sha256 of the canonical MatrixData JSON")
    source_path: str = Field(max_length=1024)
    loaded_at: dt.datetime


class MatrixLoad(MatrixLoadBase, table=True):
    __tablename__ = "matrix_load"

    id: int | None = Field(default=None, primary_key=True)
    data: str = Field(sa_type=sa.Text, description="the validated MatrixData as JSON")


# --------------------------------------------------------------------------- matrix tables


class TorchReleaseBase(SQLModel):
    version: str = Field(max_length=32, unique=True, description="a torch patch release, e.g. 2.3.1")
    minor: str = Field(max_length=16, index=True)
    status: str = Field(max_length=16)
    release_date: dt.date | None = None
    torchvision: str | None = Field(default=None, max_length=32)
    torchaudio: str | None = Field(default=None, max_length=32)
    triton: str | None = Field(default=None, max_length=32)
    index_option: str | None = Field(default=None, max_length=32)


class TorchRelease(TorchReleaseBase, table=True):
    __tablename__ = "torch_release"
    natural_key: ClassVar[tuple[str, ...]] = ("version",)

    id: int | None = Field(default=None, primary_key=True)
    # Ordering key: a version sorted as text puts 2.10 before 2.9.
    sort_key: str = Field(max_length=64, index=True)


class TorchWheel(SQLModel, table=True):
    """A published (torch patch, build label, platform) combination."""

    __tablename__ = "torch_wheel"
    __table_args__ = (sa.UniqueConstraint("torch_version", "label", "platform"),)
    natural_key: ClassVar[tuple[str, ...]] = ("torch_version", "label", "platform")

    id: int | None = Field(default=None, primary_key=True)
    torch_version: str = Field(max_length=32, foreign_key="torch_release.version", ondelete="CASCADE")
    label: str = Field(max_length=32, index=True)
    family: str = Field(max_length=16)
    platform: str = Field(max_length=32)


class TorchPython(SQLModel, table=True):
    """A CPython version a torch patch has wheels for on a platform."""

    __tablename__ = "torch_python"
    __table_args__ = (sa.UniqueConstraint("torch_version", "python", "platform"),)
    natural_key: ClassVar[tuple[str, ...]] = ("torch_version", "python", "platform")

    id: int | None = Field(default=None, primary_key=True)
    torch_version: str = Field(max_length=32, foreign_key="torch_release.version", ondelete="CASCADE")
    python: str = Field(max_length=8, index=True)
    platform: str = Field(max_length=32)


#: every matrix table, parents before children (insert order; delete in reverse)
MATRIX_TABLES: tuple[type[SQLModel], ...] = (TorchRelease, TorchWheel, TorchPython)


# --------------------------------------------------------------------------- API tokens


class ApiTokenBase(SQLModel):
    scope: str = Field(max_length=16, description="report | read | admin")
    note: str | None = Field(default=None, max_length=255)
    #: the person or organisation holding the token, set by the admin (`token create --owner ORG`): a cell is
    #: verified by distinct owners, so two tokens of one owner count once; none given: the token is its own
    #: owner, ``token-<id>`` (revision 0009)
    owner: str | None = Field(default=None, min_length=1, max_length=64)


class ApiToken(ApiTokenBase, table=True):
    __tablename__ = "api_token"
    __table_args__ = (sa.Index("ix_api_token_owner", "owner"),)

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, description="sha256 hex of the secret")
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None
    #: the id of the owner's first token: what evidence counts a report's submitter by (revision 0009)
    owner_key: int | None = None


class ApiTokenCreate(ApiTokenBase):
    pass


class ApiTokenPublic(ApiTokenBase):
    id: int
    created_at: dt.datetime
    revoked_at: dt.datetime | None
    owner_key: int | None = None

    @property
    def counted_as(self) -> int:
        """The submitter a report sent with this token counts as: its owner (tokens from before 0009: itself)."""
        return self.owner_key or self.id
