"""What `resolve` answers: `Resolution`, and its one JSON form.

`resolution_to_json` is the only serialiser: `accelenv resolve --format json` prints it and the service's
``GET /v1/resolve`` returns it, so both speak the same object. `resolution_from_json` reads it back (the
CLI's ``--server`` path renders every format from it). Plain dataclasses, no pydantic: this is on the
fast path of `accelenv resolve`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import Any

from compat_service.domain.record import Record
from compat_service.domain.resolver.install_commands import pip_commands

#: bump when a field changes meaning; additive fields keep it
JSON_VERSION = "1"


@dataclass(frozen=True)
class Reason:
    """One decision and the matrix rows behind it (keys into sources.yaml)."""

    decision: str
    detail: str
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Rows behind one decision often share a source; list each once, in order.
        object.__setattr__(self, "sources", tuple(dict.fromkeys(self.sources)))


@dataclass(frozen=True)
class Pin:
    """One package of the torch install: ``name==version``, from ``index_url`` or ``url``."""

    name: str
    #: exactly what goes after ``==`` (with a local tag such as +cu118 where the install needs one)
    version: str
    #: the wheel index this package comes from; None = the default package index
    index_url: str | None
    #: a wheel file outside any index, installed by its URL (NVIDIA's JetPack wheels); None = from an index
    url: str | None = None


@dataclass(frozen=True)
class StackPin:
    """An ecosystem package installed with torch (`resolve --with`), after the torch packages."""

    name: str
    version: str
    #: where it comes from: "index" (the default package index), "url" (a prebuilt wheel outside the
    #: index, `url`), "sdist" (built from source on the target), "find-links" (from the project's own wheel
    #: page, `url`: PyG's, mmcv's; pip's --find-links)
    origin: str
    #: why this release: its pins, the torch build its binaries go with, the curated row it follows
    reason: str
    #: keys into matrix_data/sources.yaml behind the choice
    sources: tuple[str, ...] = ()
    url: str | None = None
    #: installed with --no-deps in a command of its own: its metadata would pull another torch
    no_deps: bool = False
    #: the extras it is installed with (transformer-engine[pytorch,core_cu13]), in order
    extras: tuple[str, ...] = ()
    #: the distribution built from source without build isolation where it is not the pin itself (an extra's
    #: transformer-engine-torch); None: the pin (origin "sdist") or nothing
    builds: str | None = None


@dataclass(frozen=True)
class HostRequirement:
    """Something the target needs that pip cannot install: a driver, CANN, a vendor SDK."""

    name: str
    version: str | None
    detail: str


#: a resolution's fields, in order (`Resolution.__init__`'s parameters)
RESOLUTION_FIELDS = (
    "torch_version", "backend", "family", "python", "os", "arch", "packages", "index_url", "index_option",
    "default_index_has_variant", "requirements", "reasons", "warnings", "evidence", "unknowns", "no_deps", "stack",
)


class Resolution:
    """The answer. Never changed once made (`changed` makes a copy); plain slots, since the resolver makes one
    per request."""

    __slots__ = RESOLUTION_FIELDS

    torch_version: str
    backend: str  # build label of the torch wheel: cpu, cu121, rocm6.0, xpu
    family: str  # cpu, cuda, rocm, xpu, mps, npu, mlu
    python: str
    os: str
    arch: str
    packages: tuple[Pin, ...]
    #: the index the torch packages come from; None = the default package index is right
    index_url: str | None
    #: "--index-url" or "--extra-index-url", as the official commands for this release use it
    index_option: str
    default_index_has_variant: bool
    requirements: tuple[HostRequirement, ...]
    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...]
    #: evidence status of the chosen cell, when an EvidenceLookup was given
    evidence: dict[str, Any] | None
    #: what the answer rests on that the matrix does not know (empty: every deciding fact is sourced)
    unknowns: tuple[str, ...]
    #: packages installed with --no-deps in their own command (the mlu companions; vendor_backends installs)
    no_deps: tuple[str, ...]
    #: the ecosystem packages of the stack (`--with vllm`), in install order, after `packages`
    stack: tuple[StackPin, ...]

    def __init__(
        self,
        torch_version: str,
        backend: str,
        family: str,
        python: str,
        os: str,
        arch: str,
        packages: tuple[Pin, ...],
        index_url: str | None,
        index_option: str,
        default_index_has_variant: bool,
        requirements: tuple[HostRequirement, ...] = (),
        reasons: tuple[Reason, ...] = (),
        warnings: tuple[str, ...] = (),
        evidence: dict[str, Any] | None = None,
        unknowns: tuple[str, ...] = (),
        no_deps: tuple[str, ...] = (),
        stack: tuple[StackPin, ...] = (),
    ) -> None:
        self.torch_version = torch_version
        self.backend = backend
        self.family = family
        self.python = python
        self.os = os
        self.arch = arch
        self.packages = packages
        self.index_url = index_url
        self.index_option = index_option
        self.default_index_has_variant = default_index_has_variant
        self.requirements = requirements
        self.reasons = reasons
        self.warnings = warnings
        self.evidence = evidence
        self.unknowns = unknowns
        self.no_deps = no_deps
        self.stack = stack

    def fields(self) -> dict[str, Any]:
        """Every field by name, in order (what `__init__` takes)."""
        return dict(zip(RESOLUTION_FIELDS, _resolution_values(self), strict=True))

    def changed(self, **fields: Any) -> Resolution:
        """A copy with ``fields`` changed."""
        return Resolution(**(self.fields() | fields))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Resolution:
            return NotImplemented
        return _resolution_values(self) == _resolution_values(other)

    def __hash__(self) -> int:
        return hash(_resolution_values(self))

    def __repr__(self) -> str:
        return f"Resolution({', '.join(f'{k}={v!r}' for k, v in self.fields().items())})"

    @property
    def status(self) -> str:
        """"known" when every deciding fact is sourced, "rests-on-unknown" otherwise (see `unknowns`)."""
        return "rests-on-unknown" if self.unknowns else "known"

    @property
    def platform(self) -> str:
        return f"{self.os}-{self.arch}"

    @property
    def pins(self) -> dict[str, str]:
        return {p.name: p.version for p in self.packages}


_resolution_values = attrgetter(*RESOLUTION_FIELDS)


def resolution_to_json(res: Resolution, *, for_orjson: bool = False) -> dict[str, Any]:
    """The wire form, shared by the CLI (--format json) and the service (GET /v1/resolve).

    With ``for_orjson`` the rows stay the frozen dataclasses and the lists the tuples they are: orjson writes
    a dataclass as the object of its fields in their order, which are exactly the keys below, and a tuple as
    an array, so its bytes are the same (a test holds them equal), and the uncached service builds no dict
    per row (a third of the time it spent writing an answer)."""
    if for_orjson:
        pip, uv = _commands(res.packages, res.index_url, res.index_option, res.no_deps, res.stack)
        return {
            "version": JSON_VERSION, "status": res.status, "unknowns": res.unknowns, "no_deps": res.no_deps,
            "torch": res.torch_version, "pins": res.pins, "index_url": res.index_url,
            "index_option": res.index_option, "default_index_has_variant": res.default_index_has_variant,
            "backend": res.backend, "family": res.family, "python": res.python, "os": res.os, "arch": res.arch,
            "platform": res.platform, "packages": res.packages, "requirements": res.requirements,
            "reasons": res.reasons, "warnings": res.warnings, "evidence": res.evidence, "stack": res.stack,
            "install": {"pip": pip, "uv": uv},
        }
    return {
        "version": JSON_VERSION,
        "status": res.status,
        "unknowns": list(res.unknowns),
        "no_deps": list(res.no_deps),
        "torch": res.torch_version,
        "pins": res.pins,
        "index_url": res.index_url,
        "index_option": res.index_option,
        "default_index_has_variant": res.default_index_has_variant,
        "backend": res.backend,
        "family": res.family,
        "python": res.python,
        "os": res.os,
        "arch": res.arch,
        "platform": res.platform,
        "packages": [
            {"name": p.name, "version": p.version, "index_url": p.index_url, "url": p.url} for p in res.packages
        ],
        "requirements": [
            {"name": r.name, "version": r.version, "detail": r.detail} for r in res.requirements
        ],
        "reasons": [
            {"decision": r.decision, "detail": r.detail, "sources": list(r.sources)} for r in res.reasons
        ],
        "warnings": list(res.warnings),
        "evidence": res.evidence,
        "stack": [
            {"name": p.name, "version": p.version, "origin": p.origin, "reason": p.reason,
             "sources": list(p.sources), "url": p.url, "no_deps": p.no_deps, "extras": list(p.extras),
             "builds": p.builds}
            for p in res.stack
        ],
        "install": install_commands(res),
    }


def install_commands(res: Resolution) -> dict[str, list[str]]:
    """The install commands (one per index), as `--format pip` and the top of `--format uv` print them."""
    pip, uv = _commands(res.packages, res.index_url, res.index_option, res.no_deps, res.stack)
    return {"pip": list(pip), "uv": list(uv)}


@lru_cache(maxsize=4096)
def _commands(
    packages: tuple[Pin, ...], index_url: str | None, index_option: str, no_deps: tuple[str, ...],
    stack: tuple[StackPin, ...],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The commands depend on these fields alone; kept, since many answers share them (the uncached
    service writes them into every answer)."""
    shape = _CommandInput(packages, index_url, index_option, no_deps, stack)
    return tuple(pip_commands(shape)), tuple(pip_commands(shape, tool="uv pip install"))


class _CommandInput(Record):
    """The fields of a `Resolution` that `install_commands.pip_commands` reads."""

    __slots__ = ("packages", "index_url", "index_option", "no_deps", "stack")
    packages: tuple[Pin, ...]
    index_url: str | None
    index_option: str
    no_deps: tuple[str, ...]
    stack: tuple[StackPin, ...]

    def __init__(
        self,
        packages: tuple[Pin, ...],
        index_url: str | None,
        index_option: str,
        no_deps: tuple[str, ...],
        stack: tuple[StackPin, ...],
    ) -> None:
        self.packages = packages
        self.index_url = index_url
        self.index_option = index_option
        self.no_deps = no_deps
        self.stack = stack


def resolution_from_json(body: dict[str, Any]) -> Resolution:
    """Inverse of `resolution_to_json`; raises KeyError/TypeError on a body that is not one."""
    return Resolution(
        torch_version=body["torch"],
        backend=body["backend"],
        family=body["family"],
        python=body["python"],
        os=body["os"],
        arch=body["arch"],
        packages=tuple(Pin(p["name"], p["version"], p["index_url"], p.get("url")) for p in body["packages"]),
        index_url=body["index_url"],
        index_option=body["index_option"],
        default_index_has_variant=bool(body["default_index_has_variant"]),
        requirements=tuple(
            HostRequirement(r["name"], r["version"], r["detail"]) for r in body["requirements"]
        ),
        reasons=tuple(Reason(r["decision"], r["detail"], tuple(r["sources"])) for r in body["reasons"]),
        warnings=tuple(body["warnings"]),
        evidence=body.get("evidence"),
        unknowns=tuple(body.get("unknowns", ())),
        no_deps=tuple(body.get("no_deps", ())),
        stack=tuple(
            StackPin(p["name"], p["version"], p["origin"], p["reason"], tuple(p["sources"]), p["url"], p["no_deps"],
                     tuple(p.get("extras", ())), p.get("builds"))
            for p in body.get("stack", ())
        ),
    )
