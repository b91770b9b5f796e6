"""The schema of ``matrix_data/ecosystem.yaml`` (pydantic: read only when the compiled catalog is rebuilt)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from compat_service.domain.backends import Platform

TORCH_BUILDS = ("default-index", "any", "prebuilt", "npu", "wheel-pages", "jit")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TorchRow(_Strict):
    """A torch requirement the package's metadata does not state (torchao's compatibility table)."""

    #: a release (``0.14.1``), or a release series (``0.8``: every 0.8.x without a row of its own)
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


class WheelPageRow(_Strict):
    """Releases on the project's own wheel pages (pip's ``--find-links``): one page per torch minor and build
    label, named by ``url`` (``{torch}`` the torch minor, ``{build}`` the label) - PyG's, mmcv's, DGL's. The
    page's wheels were built against that torch minor and build; the default index holds only the sdist."""

    #: the releases these pages carry
    versions: list[str] = Field(min_length=1)
    #: torch minors (``2.5``) with a page
    torch: list[str] = Field(min_length=1)
    #: build labels with a page for each of those minors (``cpu``, ``cu124``)
    builds: list[str] = Field(min_length=1)
    platforms: list[Platform] = Field(min_length=1)
    #: the Pythons the pages have wheels for; null = the source does not say (said in the answer)
    python: list[str] | None = None
    url: str = Field(pattern=r"^https://.*\{torch\}.*$")
    source: list[str] = Field(min_length=1)


class PolicyRow(_Strict):
    """A version policy row (vllm-ascend <-> vllm <-> CANN); null = the source does not say."""

    version: str
    vllm: str | None
    cann: str | None
    source: list[str] = Field(min_length=1)


class AbiRow(_Strict):
    """The C++ ABI of the default-index torch builds a torch specifier covers (flash-attn's wheel name has it)."""

    torch: str
    abi: Literal["FALSE", "TRUE"]
    source: list[str] = Field(min_length=1)


class GpuFloor(_Strict):
    """The oldest NVIDIA architecture the package's kernels run on (flash-attn 2: Ampere, sm_80)."""

    arch: str = Field(pattern=r"^sm_\d{2,3}$")
    detail: str
    source: list[str] = Field(min_length=1)


class TorchIndexRow(_Strict):
    """The torch build a package's wheels were compiled against, per range of its releases, where its documents
    name one (vLLM 0.11.1-0.19.x: CUDA 12.9, torch from /whl/cu129, not the default-index cu128 build)."""

    #: the package's releases the row covers (a specifier: ``>=0.11.1,<0.20``)
    versions: str
    #: the torch build label (build_variants.yaml) its binaries were built against
    label: str
    detail: str
    source: list[str] = Field(min_length=1)


class CompanionRow(_Strict):
    """A package a range of releases requires without a torch-aware pin (vLLM >= 0.25 requires torchcodec): the
    stack pins the release of it built for the torch it chose (that package's own curated table)."""

    #: the releases that require it (a specifier: ``>=0.25``)
    versions: str
    #: the ecosystem package required (it has rows of its own in this file)
    package: str
    source: list[str] = Field(min_length=1)


class ExtensionRow(_Strict):
    """How a range of releases installs its PyTorch integration where the package alone gives none
    (transformer-engine: the ``[pytorch]`` extra, whose transformer-engine-torch is an sdist built on the target
    against the installed torch, so without build isolation, after torch)."""

    #: the package's releases the row covers (a specifier: ``>=2.9``)
    versions: str
    #: the extra that brings the PyTorch integration (``pytorch``)
    extra: str
    #: the distribution the extra pulls that builds from source against the installed torch (no build isolation)
    builds: str
    #: torch's CUDA major -> the extra that selects the core library built for it (``13: core_cu13``; null: the
    #: package requires that core itself); a CUDA major without an entry has no core (the release is not offered)
    cuda_extras: dict[int, str | None] = Field(min_length=1)
    #: the platforms its installation guide names; others rest on unknown
    platforms: list[Platform] = Field(min_length=1)
    detail: str
    source: list[str] = Field(min_length=1)


class EcosystemPackage(_Strict):
    name: str
    torch_build: Literal["default-index", "any", "prebuilt", "npu", "wheel-pages", "jit", "extension"] | None
    source: list[str] = Field(min_length=1)
    torch: list[TorchRow] = Field(default_factory=list)
    wheels: list[WheelRow] = Field(default_factory=list)
    policy: list[PolicyRow] = Field(default_factory=list)
    #: the project's own wheel pages (torch_build wheel-pages)
    wheel_pages: list[WheelPageRow] = Field(default_factory=list)
    #: the C++ ABI of torch's default-index builds per torch specifier (first match); none: unknown
    cxx11abi: list[AbiRow] = Field(default_factory=list)
    gpu_floor: GpuFloor | None = None
    #: the torch build the package's wheels were compiled against, per release range (first match); a release
    #: without a row goes with the default-index build of its pin (``torch_build: default-index``)
    torch_index: list[TorchIndexRow] = Field(default_factory=list)
    #: ecosystem packages its releases require unpinned: the stack pins the one built for its torch
    companions: list[CompanionRow] = Field(default_factory=list)
    #: per release range, the extra that installs its PyTorch integration (torch_build extension), first match
    extension: list[ExtensionRow] = Field(default_factory=list)
    #: a final release X.Y.Z goes with this package's X.Y.Z (vllm-ascend -> vllm)
    final_release_matches: str | None = None


class OraclePlatform(_Strict):
    """How the refresh's resolution oracle asks for one platform: uv's ``--python-platform`` and the backend
    the stack question names (``cuda`` where the ecosystem's wheels are CUDA builds, else the platform's own)."""

    platform: Platform
    uv_platform: str
    backend: str
    #: the macOS version asked for (uv's MACOSX_DEPLOYMENT_TARGET); null elsewhere
    macos: str | None = None


class OracleConfig(_Strict):
    """What `matrix refresh --oracle` resolves: for each ecosystem package its newest ``releases`` live
    releases, on each platform below it publishes for, at each Python below its wheels take."""

    releases: int = Field(ge=1)
    pythons: list[str] = Field(min_length=1)
    platforms: list[OraclePlatform] = Field(min_length=1)


class EcosystemFile(_Strict):
    schema_: Literal["ecosystem/v1"] = Field(alias="schema")
    oracle: OracleConfig | None = None
    packages: list[EcosystemPackage]


class OracleOutcome(_Strict):
    """One stack answer checked by a real resolver: resolvable with every pin unchanged, or not and why."""

    package: str
    version: str
    platform: Platform
    python: str
    #: the torch the stack answer pins (the version the oracle was given)
    torch: str
    #: the answer's pins given to the resolver (``name==version``)
    requested: list[str]
    resolvable: bool
    #: the requirement the resolver names as failing (``flashinfer-python==0.7.3``); null when resolvable
    failing: str | None = None
    #: pins the resolver changed or dropped (``torchvision==0.25.0 -> 0.25.1``); empty when unchanged
    changed: list[str] = Field(default_factory=list)
    #: unresolvable from wheels alone: ``failing`` has no wheel for the target and would be built from its sdist
    #: (not a refusal: said as such)
    needs_build: bool = False
    #: the wheel pages given to the resolver as ``--find-links`` (a package from its project's own page: PyG,
    #: mmcv); empty when every pin comes from the index
    find_links: list[str] = Field(default_factory=list)


class StackOracleFile(_Strict):
    """``matrix_data/index/stack-oracle.yaml``: generated by `accelenv matrix refresh --oracle`."""

    schema_: Literal["stack_oracle/v1"] = Field(alias="schema")
    #: ``pip-default`` or the index URL the resolver read (location.py's label)
    index: str
    retrieved: str
    #: the resolver and its version (``uv 0.13.9``)
    resolver: str
    outcomes: list[OracleOutcome]
