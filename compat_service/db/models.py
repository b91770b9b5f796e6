"""SQLModel tables for the matrix, its load bookkeeping and API tokens (revision 0001_matrix_and_tokens).

Design: the normalized tables (sources, build variants, torch releases with their wheels and Python
support, CUDA toolkits, GPU arch lists, vendor plugin rows) serve queries such as ``GET /v1/torch``.
``MatrixLoad.data`` keeps the validated MatrixData document of each load; the resolver reads that
snapshot (``matrix_repository``) so the service and the offline CLI resolve from identical data, with no
lossy reconstruction. Each normalized table names its natural key in ``natural_key``: the importer
upserts by it, so reloading the same data keeps every id.

Tables are created only by the Alembic migrations, never by ``create_all`` in the app.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlmodel import Field, SQLModel


def _json_list() -> Any:
    return Field(default_factory=list, sa_type=sa.JSON)


# --------------------------------------------------------------------------- bookkeeping


class MatrixLoadBase(SQLModel):
    content_hash: str = Field(max_length=64, description="sha256 of the canonical MatrixData JSON")
    source_path: str = Field(max_length=1024)
    loaded_at: dt.datetime


class MatrixLoad(MatrixLoadBase, table=True):
    __tablename__ = "matrix_load"

    id: int | None = Field(default=None, primary_key=True)
    data: str = Field(sa_type=sa.Text, description="the validated MatrixData as JSON")


class MatrixLoadPublic(MatrixLoadBase):
    id: int


# --------------------------------------------------------------------------- matrix tables


class SourceRow(SQLModel, table=True):
    __tablename__ = "source"
    natural_key: ClassVar[tuple[str, ...]] = ("key",)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=128, unique=True)
    title: str
    url: str | None = None
    confidence: str = Field(max_length=32)
    retrieved: dt.date | None = None
    note: str | None = None


class BuildVariantRow(SQLModel, table=True):
    __tablename__ = "build_variant"
    natural_key: ClassVar[tuple[str, ...]] = ("label",)

    id: int | None = Field(default=None, primary_key=True)
    label: str = Field(max_length=32, unique=True)
    family: str = Field(max_length=16)
    runtime: str | None = Field(default=None, max_length=32)
    runtime_full: str | None = Field(default=None, max_length=32)
    index_url: str
    source: list[str] = _json_list()


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


class CudaToolkitRow(SQLModel, table=True):
    __tablename__ = "cuda_toolkit"
    natural_key: ClassVar[tuple[str, ...]] = ("version",)

    id: int | None = Field(default=None, primary_key=True)
    version: str = Field(max_length=32, unique=True)
    min_driver_linux: str | None = Field(default=None, max_length=32)
    min_driver_windows: str | None = Field(default=None, max_length=32)
    source: list[str] = _json_list()


class GpuArchListRow(SQLModel, table=True):
    __tablename__ = "gpu_arch_list"
    __table_args__ = (sa.UniqueConstraint("torch", "variant", "platforms_key"),)
    natural_key: ClassVar[tuple[str, ...]] = ("torch", "variant", "platforms_key")

    id: int | None = Field(default=None, primary_key=True)
    torch: str = Field(max_length=64, description="PEP 440 specifier over torch versions")
    variant: str = Field(max_length=32)
    platforms_key: str = Field(max_length=255, description="the sorted platforms, comma-joined")
    platforms: list[str] = _json_list()
    archs: list[str] = _json_list()
    ptx: str | None = Field(default=None, max_length=16)
    source: list[str] = _json_list()


class VendorPluginRow(SQLModel, table=True):
    """A PrivateUse1 plugin release (torch_npu, torch_mlu) and the torch and toolkit it pairs with."""

    __tablename__ = "vendor_plugin"
    __table_args__ = (sa.UniqueConstraint("plugin", "plugin_version", "torch"),)
    natural_key: ClassVar[tuple[str, ...]] = ("plugin", "plugin_version", "torch")

    id: int | None = Field(default=None, primary_key=True)
    plugin: str = Field(max_length=32)
    plugin_version: str = Field(max_length=64)
    torch: str = Field(max_length=64)
    toolkit: str | None = Field(default=None, max_length=64)
    driver: str | None = Field(default=None, max_length=64)
    python: list[str] | None = Field(default=None, sa_type=sa.JSON)
    source: list[str] = _json_list()


#: every matrix table, parents before children (insert order; delete in reverse)
MATRIX_TABLES: tuple[type[SQLModel], ...] = (
    SourceRow,
    BuildVariantRow,
    TorchRelease,
    TorchWheel,
    TorchPython,
    CudaToolkitRow,
    GpuArchListRow,
    VendorPluginRow,
)


# --------------------------------------------------------------------------- API tokens


class ApiTokenBase(SQLModel):
    scope: str = Field(max_length=16, description="report | read | admin")
    note: str | None = Field(default=None, max_length=255)


class ApiToken(ApiTokenBase, table=True):
    __tablename__ = "api_token"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, description="sha256 hex of the secret")
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None


class ApiTokenCreate(ApiTokenBase):
    pass


class ApiTokenPublic(ApiTokenBase):
    id: int
    created_at: dt.datetime
    revoked_at: dt.datetime | None
