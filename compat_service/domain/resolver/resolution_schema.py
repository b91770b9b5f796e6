"""The published JSON Schema of a resolution: what `accelenv resolve --format json` prints and
``GET /v1/resolve`` answers.

The wire form is written by the plain codec in resolution.py (no pydantic: the fast path of
`accelenv resolve`). This module describes the same object as pydantic models, for the service's OpenAPI
(the route's response model) and for the committed schema file ``compat_service/schemas/resolution.v1.json``.
tests/api/test_resolve_schema.py keeps the three in step: the file equals `ResolutionBody`'s schema,
and every golden resolution the codec writes validates against the model. Nothing on the CLI's resolve path
imports this module.

Regenerate the file after changing a model here:
    .venv/bin/python -m compat_service.domain.resolver.resolution_schema
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from compat_service.domain.evidence.lookup import EvidenceStatus
from compat_service.domain.json_types import JsonObject

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "resolution.v1.json"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PackageBody(_Closed):
    name: str = Field(description="distribution name, e.g. torch, torchvision, torch-npu")
    version: str = Field(description="exactly what goes after ==, with a local tag (+cu118) where needed")
    index_url: str | None = Field(description="the wheel index it comes from; null = the default index")
    url: str | None = Field(
        default=None, description="a wheel file outside any index, installed by its URL (NVIDIA's JetPack wheels)"
    )


class StackPackageBody(_Closed):
    name: str = Field(description="an ecosystem package resolved with torch: vllm, xformers, flash-attn, ...")
    version: str
    origin: Literal["index", "url", "sdist", "find-links"] = Field(
        description="index: the default package index; url: a prebuilt wheel outside it; sdist: built on the target; "
        "find-links: from the project's own wheel page (url), one per torch minor and build"
    )
    reason: str = Field(description="why this release: its pins, the torch build its binaries go with")
    sources: list[str] = Field(description="keys into matrix_data/sources.yaml")
    url: str | None = Field(description="the prebuilt wheel's URL where origin is url; the wheel page where find-links")
    no_deps: bool = Field(description="installed with --no-deps: its metadata would pull another torch")
    extras: list[str] = Field(
        default_factory=list,
        description="the extras it is installed with (transformer-engine[pytorch,core_cu13]); empty: none",
    )
    builds: str | None = Field(
        default=None,
        description="the distribution its extras pull that builds from source against the installed torch, without "
        "build isolation (transformer-engine-torch); null: none beyond an sdist origin",
    )


class RequirementBody(_Closed):
    name: str = Field(description="what the host needs that pip cannot install: nvidia-driver, cann, ...")
    version: str | None
    detail: str


class ReasonBody(_Closed):
    decision: str = Field(description="torch, python, variant, index, driver, evidence, ...")
    detail: str
    sources: list[str] = Field(description="keys into matrix_data/sources.yaml")


class EvidenceBody(_Closed):
    status: EvidenceStatus
    hosts: int
    detail: str | None


class ResolutionBody(_Closed):
    """A pinned install set for one target, with the reasons and the sources behind each decision."""

    model_config = ConfigDict(extra="forbid", title="Resolution")

    version: Literal["1"] = Field(description="the wire format's version")
    status: Literal["known", "rests-on-unknown"] = Field(
        description="known: every deciding fact is sourced; rests-on-unknown: see unknowns (--strict fails)"
    )
    unknowns: list[str] = Field(description="the deciding facts the matrix does not have")
    no_deps: list[str] = Field(description="packages installed with --no-deps, in their own command")
    torch: str
    pins: dict[str, str] = Field(description="package name -> version, for every package below")
    index_url: str | None
    index_option: Literal["--index-url", "--extra-index-url"]
    default_index_has_variant: bool
    backend: str = Field(description="build label of the torch wheel: cpu, cu121, rocm6.0, xpu")
    family: Literal["cpu", "cuda", "rocm", "xpu", "mps", "npu", "mlu"]
    python: str
    os: Literal["linux", "windows", "macos"]
    arch: str
    platform: str
    packages: list[PackageBody]
    requirements: list[RequirementBody]
    reasons: list[ReasonBody]
    warnings: list[str]
    evidence: EvidenceBody | None = Field(description="status of the chosen cell, when evidence was read")
    stack: list[StackPackageBody] = Field(
        default_factory=list,
        description="the ecosystem packages (--with vllm), in install order after packages; each with its "
        "source and reason",
    )
    install: InstallBody = Field(description="the install commands, as `--format pip` / `--format uv` print them")


class InstallBody(_Closed):
    pip: list[str] = Field(description="pip install commands, one per index, run in order")
    uv: list[str] = Field(description="the same with uv pip install")


ResolutionBody.model_rebuild()


def resolution_json_schema() -> JsonObject:
    return ResolutionBody.model_json_schema()


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(resolution_json_schema(), indent=2, sort_keys=True) + "\n")
