"""The schema of ``matrix_data/ecosystem.yaml`` (pydantic: read only when the compiled catalog is rebuilt)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from compat_service.domain.backends import Platform

TORCH_BUILDS = ("default-index", "any", "prebuilt", "npu")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TorchRow(_Strict):
    """A torch requirement the package's metadata does not state (torchao's compatibility table)."""

    version: str
    #: specifiers (any of) of the torch its binaries were built for; null = the source does not say
    binaries: list[str] | None
    #: specifiers (any of) its Python API alone runs on; null = the source does not say
    python_api: list[str] | None = None
    source: list[str] = Field(min_length=1)


class WheelRow(_Strict):
    """One release's prebuilt wheel matrix outside the index (flash-attn's release assets)."""

    version: str
    torch: list[str] = Field(min_length=1)
    cuda_major: int
    python: list[str] = Field(min_length=1)
    exclude: list[dict[str, str]] = Field(default_factory=list)
    cxx11abi: list[Literal["FALSE", "TRUE"]] = Field(min_length=1)
    platform: Platform
    url: str
    source: list[str] = Field(min_length=1)


class PolicyRow(_Strict):
    """A version policy row (vllm-ascend <-> vllm <-> CANN); null = the source does not say."""

    version: str
    vllm: str | None
    cann: str | None
    source: list[str] = Field(min_length=1)


class EcosystemPackage(_Strict):
    name: str
    torch_build: Literal["default-index", "any", "prebuilt", "npu"] | None
    source: list[str] = Field(min_length=1)
    torch: list[TorchRow] = Field(default_factory=list)
    wheels: list[WheelRow] = Field(default_factory=list)
    policy: list[PolicyRow] = Field(default_factory=list)
    #: a final release X.Y.Z goes with this package's X.Y.Z (vllm-ascend -> vllm)
    final_release_matches: str | None = None


class EcosystemFile(_Strict):
    schema_: Literal["ecosystem/v1"] = Field(alias="schema")
    packages: list[EcosystemPackage]
