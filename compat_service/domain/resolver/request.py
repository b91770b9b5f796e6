"""What `resolve` is asked: `ResolveRequest`, built from plain strings (CLI flags, API query parameters).

`PARAMETERS` is the one table of the request's parameters: the CLI builds its argparse flags from it, the
API reads its query string and publishes its OpenAPI parameters from it, and `to_strings` writes it.
`ResolveRequest.from_strings(...)` is the one parser: the CLI calls it with its flags, the API with its
query parameters (``with`` arrives as ``with_``). Every malformed value raises `InvalidRequestError`
(exit 2, HTTP 422) naming the flag and the accepted forms.

No pydantic here on purpose: the request is parsed on the fast path of `accelenv resolve`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat_service.domain.backends import (
    ARCH_ALIASES,
    ARCHES,
    OSES,
    REQUEST_FAMILIES,
    RUNTIME_NAMES,
    is_build_label,
    label_family,
    normalise_arch,
)
from compat_service.domain.record import Record
from compat_service.domain.versions import cached_version

if TYPE_CHECKING:
    from compat_service.domain.host import HostFacts

#: packages `--with` may add next to torch
COMPANIONS = ("torchvision", "torchaudio")
DEFAULT_COMPANIONS = COMPANIONS

_PYTHON_RE = re.compile(r"^(\d\.\d{1,2})(\.\d+)?(t?)$")
_MINOR_RE = re.compile(r"^\d+\.\d+$")
_SPEC_START = ("<", ">", "=", "!", "~")
_GPU_ARCH_RE = re.compile(r"^(sm_\d{2,3}[af]?|gfx[0-9a-f]{3,5})$")

# -- `--with`: ecosystem packages of a stack (resolved by compat_service.domain.stacks) -----------------
# `split_with` turns the raw values (the CLI's repeatable --with, the API's repeated with=, each also
# comma-separated) into items, keeping a specifier's own commas (``xformers>=0.0.30,<0.0.33`` is one item).
_NAME_RE = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(.*)$")


class PackageRequest(Record):
    """An ecosystem package and the releases the request allows ('' = any)."""

    __slots__ = ("name", "specifier")
    name: str
    specifier: str

    def __init__(self, name: str, specifier: str = "") -> None:
        self.name = name
        self.specifier = specifier

    @property
    def text(self) -> str:
        return f"{self.name}{self.specifier}"

    def allows(self, version: str, prerelease: bool) -> bool:
        if not self.specifier:
            return not prerelease
        spec = SpecifierSet(self.specifier)
        # a pre-release only where the specifier names one (PEP 440's default)
        return spec.contains(version)


def split_with(values: Iterable[str]) -> list[str]:
    items: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if items and part[0] in "<>=!~":
                items[-1] += "," + part
            else:
                items.append(part)
    return items


def parse_package(text: str) -> PackageRequest | None:
    """``vllm``, ``vllm==0.15.1``, ``xformers>=0.0.30,<0.0.33``; None when it is not that shape."""
    match = _NAME_RE.match(text.strip())
    if match is None:
        return None
    name, spec = match.group(1), match.group(2).strip()
    if spec:
        if spec[0] not in "<>=!~":
            return None
        try:
            spec = str(SpecifierSet(spec))
        except InvalidSpecifier:
            return None
    # PEP 503's normalised name (packaging.utils would pull packaging.tags onto the fast path)
    return PackageRequest(re.sub(r"[-_.]+", "-", name).lower(), spec)


TorchSpecKind = Literal["latest", "minor", "exact", "specifier"]


class Parameter(Record):
    """One parameter of a resolve request, as the CLI flag and as the API query parameter."""

    __slots__ = (
        "name", "max_length", "description", "cli_help", "cli_default", "cli_dest", "metavar", "switch", "repeatable",
        "bare_value",
    )
    #: the query parameter (``gpu_arch``, ``with``)
    name: str
    #: the longest value the API accepts
    max_length: int
    #: the API's description (OpenAPI)
    description: str
    #: the CLI's help, where the CLI's default differs (this host, auto-detection)
    cli_help: str | None
    #: the CLI's default (None: the domain's default, or this host)
    cli_default: str | None
    #: the argparse destination, where it is not ``name``
    cli_dest: str | None
    metavar: str | None
    #: a yes/no switch (``--require-verified``; ``require_verified=true`` in a query)
    switch: bool
    #: may be given more than once (``--with vllm --with flash-attn``; ``with=vllm&with=flash-attn``)
    repeatable: bool
    #: the CLI flag may be given without a value, which then means this (``--musl`` alone: ``yes``)
    bare_value: str | None

    def __init__(
        self,
        name: str,
        max_length: int,
        description: str,
        cli_help: str | None = None,
        cli_default: str | None = None,
        cli_dest: str | None = None,
        metavar: str | None = None,
        switch: bool = False,
        repeatable: bool = False,
        bare_value: str | None = None,
    ) -> None:
        self.name = name
        self.max_length = max_length
        self.description = description
        self.cli_help = cli_help
        self.cli_default = cli_default
        self.cli_dest = cli_dest
        self.metavar = metavar
        self.switch = switch
        self.repeatable = repeatable
        self.bare_value = bare_value

    @property
    def flag(self) -> str:
        """The CLI's flag (``--gpu-arch``)."""
        return "--" + self.name.replace("_", "-")

    @property
    def api_name(self) -> str:
        """The API's query parameter as an error names it (``gpu_arch``; a switch ``strict=true``)."""
        return f"{self.name}=true" if self.switch else self.name

    @property
    def dest(self) -> str:
        return self.cli_dest or self.name


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("torch", 64, "latest (default), a minor 2.3, an exact 2.3.1 or a specifier '>=2.2,<2.4'",
              cli_help="latest, a minor (2.3), an exact version (2.3.1) or a PEP 440 specifier",
              cli_default="latest"),
    Parameter("python", 16, "3.11 or 3.13t; default: the newest the chosen torch supports",
              cli_help="3.11 or 3.13t (default: this interpreter)"),
    Parameter("os", 16, "linux (default), windows or macos",
              cli_help="linux, windows or macos (default: this host)", cli_dest="os_name", metavar="OS"),
    Parameter("arch", 16, "x86_64 (default), aarch64 or arm64",
              cli_help="x86_64, aarch64 or arm64 (default: this host)"),
    Parameter("backend", 32,
              "cpu (default), a label (cu121, rocm6.0, xpu) or a family (cuda, rocm, mps, npu, mlu)",
              cli_help="cpu, cu121, rocm6.0, xpu, a family (cuda, rocm, npu, mlu, mps) or auto",
              cli_default="auto"),
    Parameter("driver", 32, "the target's driver version, e.g. 535.104.05",
              cli_help="driver version of the target, e.g. 535.104.05"),
    Parameter("runtime", 32,
              "the target's vendor runtime: the CANN version for npu (8.0.0), the ROCm version for rocm "
              "(6.2.4), the Cambricon toolkit for mlu (2.15), the JetPack release of a Jetson (6.2)",
              cli_help="vendor runtime of the target: CANN for npu (8.0.0), ROCm for rocm (6.2.4), "
              "Cambricon toolkit for mlu (2.15), JetPack of a Jetson (6.2); --backend auto detects CANN and ROCm",
              metavar="VERSION"),
    Parameter("gpu_arch", 16, "the target's GPU architecture: sm_90, 9.0 or gfx942",
              cli_help="GPU architecture of the target: sm_90 (or 9.0), gfx942", metavar="ARCH"),
    Parameter("gpu", 128,
              "the target's GPU by name, e.g. 'RTX 5090' or 'A100' (several, comma-separated, for a multi-GPU "
              "host: the lowest architecture counts); mapped to gpu_arch with the matrix's GPU names",
              cli_help="GPU of the target by name ('RTX 5090', 'A100'; comma-separated for several): sets "
              "--gpu-arch from the matrix's GPU names", metavar="NAME"),
    Parameter("with", 64,
              "companions torchvision,torchaudio (default), a subset or none; and ecosystem packages resolved "
              "with torch: vllm, vllm==0.15.1, flash-attn, xformers, torchao, bitsandbytes, vllm-ascend "
              "(repeatable)",
              cli_help="torchvision,torchaudio (default) or none; ecosystem packages resolved with torch: "
              "vllm, vllm==0.15.1, flash-attn, ... (repeatable)", cli_dest="with_",
              metavar="PACKAGES", repeatable=True),
    Parameter("glibc", 16,
              "the target's glibc version (2.17, 2.28): only wheels whose manylinux tag it meets are pinned; "
              "without it the answer states the glibc its wheels need",
              cli_help="glibc version of the target, e.g. 2.17 (default: this host's, when resolving for it)",
              metavar="X.Y"),
    Parameter("musl", 16,
              "the target uses musl libc (Alpine): 'yes' or its version (1.2); PyTorch publishes no musllinux wheels",
              cli_help="the target uses musl libc (Alpine), optionally its version (default: this host's)",
              metavar="X.Y", bare_value="yes"),
    Parameter("macos", 16,
              "the target's macOS version (13.6, 14): only wheels whose macosx tag it meets are pinned",
              cli_help="macOS version of the target, e.g. 13.6 (default: this host's, when resolving for it)",
              metavar="X.Y"),
    Parameter("require_verified", 8, "true: accept only combinations probe reports verify",
              cli_help="accept only combinations probe reports verify (needs --server or --database)",
              switch=True),
    Parameter("strict", 8, "true: fail when the answer rests on data the matrix does not have (unknown)",
              cli_help="fail (exit 5, rests-on-unknown) when the answer rests on data the matrix lacks",
              switch=True),
)
#: distinct values kept per field parser (each a pure function of one parameter's text; a malformed value
#: raises, which is never kept): requests repeat a few values per parameter, so the service parses each once
FIELD_MEMO = 512
#: query parameter -> its `from_strings` keyword
_QUERY_KEYS = {p.name: "with_" if p.name == "with" else p.name for p in PARAMETERS}
#: the yes/no parameters, in the table's order (each its own `from_strings` keyword)
_SWITCHES = tuple(p.name for p in PARAMETERS if p.switch)
#: the values a switch is on / off with, in a query string (blank is off); any other value is refused
_SWITCH_ON = ("1", "true", "yes")
_SWITCH_OFF = ("", "0", "false", "no")


@lru_cache(maxsize=1)
def _flag_pattern() -> tuple[re.Pattern[str], dict[str, str]]:
    """The CLI flags of ``PARAMETERS`` (and ``--format``) as one pattern, and each flag's parameter name."""
    named = {p.flag: p.name for p in PARAMETERS}
    named["--format"] = "format"
    # longest first, and never inside a longer flag (--gpu must not eat --gpu-arch)
    flags = sorted(named, key=len, reverse=True)
    return re.compile("(?:" + "|".join(re.escape(n) for n in flags) + r")(?![\w-])"), named


#: the API's words for the parameters: their query parameter (a switch with its ``=true``)
API_WORDS: dict[str, str] = {p.name: p.api_name for p in PARAMETERS} | {"format": "format"}


def flag_wording(text: str, words: Mapping[str, str]) -> str:
    """``text`` with each CLI flag of ``PARAMETERS`` said as ``words`` names its parameter (keyed by
    ``Parameter.name``, and ``format``): the API's query parameters, the selector page's field labels."""
    if "--" not in text:
        return text
    pattern, named = _flag_pattern()
    return pattern.sub(lambda m: words[named[m.group(0)]], text)


def api_wording(text: str) -> str:
    """``text`` with each CLI flag of ``PARAMETERS`` said as the API's query parameter (``--torch 2.4`` ->
    ``torch 2.4``, ``drop --require-verified`` -> ``drop require_verified=true``): API errors speak API names."""
    if "--" not in text:
        return text
    if len(text) <= _MAX_KEPT_WORDING:
        return _kept_wording(text)
    return flag_wording(text, API_WORDS)


#: longest text whose API wording is kept (the unsatisfiable answers' causes and hints recur)
_MAX_KEPT_WORDING = 512


@lru_cache(maxsize=2048)
def _kept_wording(text: str) -> str:
    return flag_wording(text, API_WORDS)


class TorchSpec(Record):
    """`--torch`: latest, a minor (newest patch of it), an exact version, or a PEP 440 specifier."""

    __slots__ = ("text", "kind", "specifier")
    text: str
    kind: TorchSpecKind
    specifier: SpecifierSet | None

    def __init__(self, text: str, kind: TorchSpecKind, specifier: SpecifierSet | None = None) -> None:
        self.text = text
        self.kind = kind
        self.specifier = specifier

    def matches(self, version: str, minor: str) -> bool:
        if self.kind == "latest":
            return True
        if self.kind == "minor":
            return minor == self.text
        if self.kind == "exact":
            return cached_version(version) == cached_version(self.text)
        assert self.specifier is not None
        return self.specifier.contains(version, prereleases=True)

    def minor_named(self) -> str | None:
        """The one minor a minor or exact request can match (None: any), so the others are skipped unread."""
        if self.kind == "minor":
            return self.text
        if self.kind == "exact":
            return ".".join(self.text.split(".")[:2])
        return None

    def names_minor(self, minor: str) -> bool:
        """True when the request names this minor outright (then a 'partial' minor may be chosen)."""
        if self.kind == "minor":
            return minor == self.text
        if self.kind == "exact":
            return ".".join(self.text.split(".")[:2]) == minor
        return False


class BackendSpec(Record):
    """`--backend`: cpu, a build label (cu121, rocm6.0, xpu), a family (cuda, ...), or auto."""

    __slots__ = ("text", "kind", "family")
    text: str
    kind: Literal["label", "family", "auto"]
    family: str | None

    def __init__(self, text: str, kind: Literal["label", "family", "auto"], family: str | None) -> None:
        self.text = text
        self.kind = kind
        self.family = family

    @property
    def label(self) -> str | None:
        return self.text if self.kind == "label" else None


_LATEST = TorchSpec("latest", "latest")
_CPU = BackendSpec("cpu", "label", "cpu")


#: the request's fields, in order (`ResolveRequest.__init__`'s parameters)
REQUEST_FIELDS = (
    "torch", "python", "os", "arch", "backend", "driver", "gpu_arch", "with_", "stack", "runtime", "gpu",
    "backend_defaulted", "arch_defaulted", "require_verified", "strict", "python_version", "glibc", "musl", "macos",
)


class ResolveRequest:
    """One request, parsed. Never changed once made (`changed` makes a copy): its hash is computed once, when first
    asked, and kept, as packaging's `Tag` keeps its own, since the alternatives search looks up each request it
    builds in the matrix's memos (`RequestMemo`s: the stages' `tried`, the explanation's `nearest_torch`)."""

    __slots__ = (*REQUEST_FIELDS, "platform", "_hash")

    torch: TorchSpec
    #: "3.11" or "3.13t"; None = the newest the chosen torch supports (the service has no "this host")
    python: str | None
    os: str
    arch: str
    backend: BackendSpec
    driver: str | None
    gpu_arch: str | None
    with_: tuple[str, ...]
    #: ecosystem packages resolved together with torch (`compat_service.domain.stacks`), in request order
    stack: tuple[PackageRequest, ...]
    #: the host's vendor runtime (CANN for npu, ROCm for rocm, Cambricon's toolkit for mlu)
    runtime: str | None
    #: GPU product names (--gpu), mapped to gpu_arch by the resolver (the names table is matrix data)
    gpu: str | None
    #: no --backend and nothing implied a family: --gpu may still name one
    backend_defaulted: bool
    #: no --arch given: the answer says which it chose (arm64 for macOS)
    arch_defaulted: bool
    #: accept only combinations probe reports verify (needs evidence: --server or --database)
    require_verified: bool
    #: fail (rests-on-unknown) instead of answering when the answer rests on data the matrix does not have
    strict: bool
    #: the full Python version when the request gives one (3.14.1), checked against Requires-Python
    python_version: str | None
    #: the target's C library and OS version: glibc 2.17, musl ("yes" or 1.2), macOS 13.6 (None: not given)
    glibc: str | None
    musl: str | None
    macos: str | None
    #: "linux-x86_64": os and arch, read at every stage
    platform: str
    _hash: int

    def __init__(
        self,
        torch: TorchSpec = _LATEST,
        python: str | None = None,
        os: str = "linux",
        arch: str = "x86_64",
        backend: BackendSpec = _CPU,
        driver: str | None = None,
        gpu_arch: str | None = None,
        with_: tuple[str, ...] = DEFAULT_COMPANIONS,
        stack: tuple[PackageRequest, ...] = (),
        runtime: str | None = None,
        gpu: str | None = None,
        backend_defaulted: bool = False,
        arch_defaulted: bool = False,
        require_verified: bool = False,
        strict: bool = False,
        python_version: str | None = None,
        glibc: str | None = None,
        musl: str | None = None,
        macos: str | None = None,
    ) -> None:
        self.torch = torch
        self.python = python
        self.os = os
        self.arch = arch
        self.backend = backend
        self.driver = driver
        self.gpu_arch = gpu_arch
        self.with_ = with_
        self.stack = stack
        self.runtime = runtime
        self.gpu = gpu
        self.backend_defaulted = backend_defaulted
        self.arch_defaulted = arch_defaulted
        self.require_verified = require_verified
        self.strict = strict
        self.python_version = python_version
        self.glibc = glibc
        self.musl = musl
        self.macos = macos
        self.platform = f"{os}-{arch}"
        self._hash = -1  # not yet computed (hash() is never -1): an answer neither cached nor memoized never asks

    def __hash__(self) -> int:
        if self._hash == -1:
            self._hash = hash(_field_values(self))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not ResolveRequest:
            return NotImplemented
        assert isinstance(other, ResolveRequest)
        return self is other or (hash(self) == hash(other) and _field_values(self) == _field_values(other))

    def __repr__(self) -> str:
        return f"ResolveRequest({', '.join(f'{k}={v!r}' for k, v in self.fields().items())})"

    def __getstate__(self) -> dict[str, Any]:
        # the fields only: the hash is recomputed (a str hash differs between processes)
        return self.fields()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def fields(self) -> dict[str, Any]:
        """Every field by name, in order (what `__init__` takes)."""
        return dict(zip(REQUEST_FIELDS, _field_values(self), strict=True))

    def changed(self, **fields: Any) -> ResolveRequest:
        """A copy with ``fields`` changed (the values already parsed)."""
        return ResolveRequest(**(self.fields() | fields))

    @classmethod
    def from_strings(
        cls,
        *,
        torch: str | None = None,
        python: str | None = None,
        os: str | None = None,
        arch: str | None = None,
        backend: str | None = None,
        driver: str | None = None,
        gpu_arch: str | None = None,
        with_: str | Sequence[str] | None = None,
        require_verified: bool = False,
        strict: bool = False,
        runtime: str | None = None,
        gpu: str | None = None,
        glibc: str | None = None,
        musl: str | None = None,
        macos: str | None = None,
    ) -> ResolveRequest:
        # One value of a parameter (with=) parses the same every time: kept (_with_text, bounded)
        companions, stack = _with_text(with_) if isinstance(with_, str) else parse_with_stack(with_)
        os_name = _parse_os(os)
        driver_value = _parse_driver(driver)
        arch_value = _parse_gpu_arch(gpu_arch)
        runtime_value = _parse_runtime(runtime)
        backend_spec = _target_backend(backend, driver_value, arch_value)
        gpu_value = _parse_gpu(gpu)
        implied = implied_family(driver_value, arch_value)
        if backend is not None or gpu_value is None or implied is not None:
            check_target_flags(backend_spec, driver_value, runtime_value)
        # else --gpu names the family (MI300X --runtime 6.3.4 is rocm): the resolver checks once it has named it
        torch_spec, python_minor = parse_torch_spec(torch), parse_python(python)
        arch_name = _parse_arch(arch, os_name)
        glibc_value, musl_value, macos_value = _parse_host_platform(os_name, glibc, musl, macos)
        return cls(
            torch=torch_spec, python=python_minor, os=os_name, arch=arch_name, backend=backend_spec,
            driver=driver_value, gpu_arch=arch_value, with_=companions, stack=stack, runtime=runtime_value,
            gpu=gpu_value, backend_defaulted=backend is None and implied is None,
            arch_defaulted=arch is None or arch.strip() == "", require_verified=require_verified, strict=strict,
            python_version=_parse_python_full(python), glibc=glibc_value, musl=musl_value, macos=macos_value,
        )

    @classmethod
    def for_host(cls, host: HostFacts, **flags: Any) -> ResolveRequest:
        """The request for a detected host (`accelenv resolve` with no --backend, `doctor`'s fixes): its
        backend as detected (or as ACCELENV_BACKEND names it); the NVIDIA driver for a CUDA build; the vendor
        runtime (CANN, ROCm) for npu, rocm and mlu; the GPU architecture where builds are chosen by it (CUDA,
        ROCm: elsewhere --driver and --gpu-arch name a GPU target the backend is not). ``flags`` are
        `from_strings`' keywords; one given (not None) wins over what the host says."""
        family = parse_backend(host.backend).family
        detected = {
            "python": host.python,
            "os": host.os,
            "arch": host.arch,
            "backend": host.backend,
            "driver": host.driver if family == "cuda" else None,
            "gpu_arch": host.gpu_arch if family in ("cuda", "rocm") else None,
            "runtime": host.runtime if family in ("npu", "rocm", "mlu") else None,
            "glibc": host.glibc,
            "musl": host.musl,
            "macos": host.macos,
        }
        given = {k: v for k, v in flags.items() if v is not None}
        if given.keys() & _HOST_PLATFORM.keys():  # --glibc, --musl or --macos given: the others are not this host's
            detected.update(glibc=None, musl=None, macos=None)
        return cls.from_strings(**(detected | given))

    @classmethod
    def from_query(cls, values: Mapping[str, str | list[str] | None]) -> ResolveRequest:
        """The request from query parameters (``PARAMETERS`` names; absent or None ones take the default,
        other names are not read)."""
        kwargs: dict[str, object] = {_QUERY_KEYS[name]: value for name, value in values.items() if name in _QUERY_KEYS}
        for name in _SWITCHES:  # in the table's order: the first malformed one is named
            if name in kwargs:
                kwargs[name] = _switch(name, kwargs[name])  # type: ignore[arg-type]
        return cls.from_strings(**kwargs)  # type: ignore[arg-type]

    def to_strings(self) -> dict[str, str]:
        """The query-string form (the inverse of `from_strings`), as `--server` sends it."""
        out = {
            "torch": self.torch.text,
            "os": self.os,
            "arch": self.arch,
            "backend": self.backend.text,
            "with": ",".join([*(self.with_ or ("none",)), *(p.text for p in self.stack)]),
        }
        for key, value in (
            ("python", self.python), ("driver", self.driver), ("gpu_arch", self.gpu_arch), ("runtime", self.runtime),
            ("gpu", self.gpu), ("glibc", self.glibc), ("musl", self.musl), ("macos", self.macos),
        ):
            if value is not None:
                out[key] = value
        if self.python_version is not None and self.python is not None:
            out["python"] = self.python_version + ("t" if self.python.endswith("t") else "")
        if self.require_verified:
            out["require_verified"] = "true"
        if self.strict:
            out["strict"] = "true"
        return out


#: every field's value, in order: the tuple the hash and eq compare
_field_values = attrgetter(*REQUEST_FIELDS)


def invalid_request(message: str, hint: str, flag: str, value: str) -> Exception:
    # errors.py builds pydantic models: only the failure path pays (the start-up benchmarks/bench_resolve.py times).
    from compat_service.domain.errors import Cause, InvalidRequestError

    return InvalidRequestError(
        message, hint=hint, causes=[Cause(constraint=f"{flag} {value}", origin="request")]
    )


def _switch(name: str, value: str | list[str] | None) -> bool:
    """A query string's yes/no parameter: on, off, or an invalid request naming it (``strict=zzz``)."""
    if value is None:
        return False
    text = value.strip().lower() if isinstance(value, str) else ""
    if isinstance(value, str) and (text in _SWITCH_ON or text in _SWITCH_OFF):
        return text in _SWITCH_ON
    raise invalid_request(
        f"{name}={value!r} is not a yes/no value",
        f"give {name}=true or {name}=false, or leave {name} out (false)",
        f"query parameter {name}",
        repr(value),
    )


def _given(text: str | None, flag: str, example: str) -> str | None:
    """None when the parameter is absent; an empty value given on purpose is an invalid request."""
    if text is None:
        return None
    if text.strip() == "":
        raise invalid_request(
            f"{flag} is empty", f"give a value such as {example}, or leave {flag} out for the default", flag, "''"
        )
    return text


@lru_cache(maxsize=FIELD_MEMO)
def parse_torch_spec(text: str | None) -> TorchSpec:
    value = (_given(text, "--torch", "2.3 or latest") or "latest").strip()
    if value == "latest":
        return TorchSpec("latest", "latest")
    if _MINOR_RE.match(value):
        return TorchSpec(value, "minor")
    if value.startswith(_SPEC_START) or "," in value:
        try:
            return TorchSpec(value, "specifier", SpecifierSet(value))
        except InvalidSpecifier:
            pass
    else:
        try:
            version = cached_version(value)
        except InvalidVersion:
            version = None
        if version is not None and not version.local and len(version.release) >= 3:
            return TorchSpec(value, "exact")
    raise invalid_request(
        f"--torch {value!r} is not a torch version request",
        "use 'latest', a minor such as 2.3, an exact version such as 2.3.1, or a PEP 440 specifier "
        "such as '>=2.2,<2.4'",
        "--torch",
        value,
    )


@lru_cache(maxsize=FIELD_MEMO)
def parse_python(text: str | None) -> str | None:
    if _given(text, "--python", "3.11") is None:
        return None
    assert text is not None
    match = _PYTHON_RE.match(text.strip())
    if not match:
        raise invalid_request(
            f"--python {text!r} is not a CPython version",
            "give major.minor such as 3.11, or 3.13t for the free-threaded build",
            "--python",
            text,
        )
    return match.group(1) + match.group(3)


@lru_cache(maxsize=FIELD_MEMO)
def _parse_python_full(text: str | None) -> str | None:
    """``3.14.1`` -> ``3.14.1`` (checked against each pin's Requires-Python); a bare minor -> None."""
    if text is None:
        return None
    match = _PYTHON_RE.match(text.strip())
    return match.group(1) + match.group(2) if match and match.group(2) else None


_PLATFORM_VERSION_RE = re.compile(r"^\d{1,2}(\.\d{1,3})?$")
#: what each host-platform flag describes, and the OS it belongs to
_HOST_PLATFORM = {"glibc": ("linux", "2.17"), "musl": ("linux", "1.2"), "macos": ("macos", "13.6")}


def _parse_host_platform(
    os_name: str, glibc: str | None, musl: str | None, macos: str | None
) -> tuple[str | None, str | None, str | None]:
    """--glibc X.Y, --musl [X.Y], --macos X.Y: each a version of its OS's C library or release."""
    if glibc is None and musl is None and macos is None:
        return None, None, None
    glibc_value = _host_platform_value(os_name, "glibc", glibc)
    musl_value = _host_platform_value(os_name, "musl", musl)
    macos_value = _host_platform_value(os_name, "macos", macos)
    if glibc_value is not None and musl_value is not None:
        raise invalid_request(
            "--glibc and --musl both name the target's C library", "give the one the target uses",
            "--musl", musl_value,
        )
    return glibc_value, musl_value, macos_value


def _host_platform_value(os_name: str, name: str, text: str | None) -> str | None:
    """One host-platform flag's version (``yes`` for a bare --musl); None when it is not given."""
    if text is None or text.strip() == "":
        return None
    flag = f"--{name}"
    value = text.strip().lower()
    if name == "musl" and value in _SWITCH_ON:
        value = "yes"
    if value != "yes" and not _PLATFORM_VERSION_RE.match(value):
        raise invalid_request(
            f"{flag} {text!r} is not a version", f"give major.minor, e.g. {flag} {_HOST_PLATFORM[name][1]}",
            flag, text,
        )
    if os_name != _HOST_PLATFORM[name][0]:
        raise invalid_request(
            f"{flag} {value} describes a {_HOST_PLATFORM[name][0]} host, but the target is --os {os_name}",
            f"drop {flag}, or ask for --os {_HOST_PLATFORM[name][0]}", flag, value,
        )
    return value


def _parse_os(text: str | None) -> str:
    value = (text or "linux").strip().lower()
    if value not in OSES:
        raise invalid_request(
            f"--os {value!r} is not supported", f"use one of: {', '.join(OSES)}", "--os", value
        )
    return value


@lru_cache(maxsize=FIELD_MEMO)
def _parse_arch(text: str | None, os_name: str) -> str:
    # macOS without --arch means Apple silicon (Intel Macs have no torch wheels after 2.2); elsewhere x86_64
    value = (text or ("arm64" if os_name == "macos" else "x86_64")).strip().lower()
    value = ARCH_ALIASES.get(value, value)
    if value not in ARCHES:
        raise invalid_request(
            f"--arch {value!r} is not supported", f"use one of: {', '.join(ARCHES)}", "--arch", value
        )
    # The same CPU is 'arm64' on macOS and Windows, 'aarch64' on Linux (compat_service/domain/backends.py).
    return normalise_arch(os_name, value)


def parse_backend(text: str | None) -> BackendSpec:
    value = (_given(text, "--backend", "cpu or cuda") or "cpu").strip().lower()
    if value == "auto":
        return BackendSpec(value, "auto", None)
    if value in REQUEST_FAMILIES and not is_build_label(value):
        return BackendSpec(value, "family", value)
    if is_build_label(value):
        return BackendSpec(value, "label", label_family(value))
    raise invalid_request(
        f"--backend {value!r} is not a backend",
        "use cpu, a build label (cu121, rocm6.0, xpu), a family (cuda, rocm, xpu, mps, npu, mlu) or auto",
        "--backend",
        value,
    )


def implied_family(driver: str | None, gpu_arch: str | None) -> str | None:
    """The GPU family the target's flags name: gfxNNN is AMD (rocm), sm_XX or a driver alone NVIDIA (cuda)."""
    if gpu_arch is not None:
        return "rocm" if gpu_arch.startswith("gfx") else "cuda"
    return "cuda" if driver is not None else None


@lru_cache(maxsize=FIELD_MEMO)
def _target_backend(text: str | None, driver: str | None, gpu_arch: str | None) -> BackendSpec:
    """`--backend`, or with none given the family that --gpu-arch/--driver imply; a contradiction is an error."""
    implied = implied_family(driver, gpu_arch)
    if text is None and implied is not None:
        return BackendSpec(implied, "family", implied)
    spec = parse_backend(text)
    if gpu_arch is None and spec.family in RUNTIME_NAMES:
        return spec  # a --driver meant as the vendor runtime: check_target_flags says what to give instead
    if implied is not None and spec.family not in (None, "cuda", "rocm"):
        flag, value = ("--gpu-arch", gpu_arch) if gpu_arch is not None else ("--driver", driver or "")
        raise invalid_request(
            f"{flag} {value} names a {implied} GPU target, but --backend {spec.text} is not a GPU build",
            f"drop {flag} for a {spec.text} install, or ask for --backend {implied}",
            flag,
            value,
        )
    return spec


def check_target_flags(spec: BackendSpec, driver: str | None, runtime: str | None) -> None:
    """--driver is the NVIDIA driver and --runtime a vendor runtime: each is used by its families or refused."""
    family = spec.family
    if family is None:  # auto: the CLI's host detection fills both
        return
    name = RUNTIME_NAMES.get(family)
    if driver is not None and family != "cuda" and name is not None:
        raise invalid_request(
            f"--driver {driver} is an NVIDIA driver version, and --backend {spec.text} has no NVIDIA driver",
            f"give the host's {name} version with --runtime (e.g. --runtime {_RUNTIME_EXAMPLES[family]}), "
            "or drop --driver",
            "--driver",
            driver,
        )
    if runtime is not None and name is None and family != "cuda":  # cuda: a Jetson's JetPack (resolver/jetson.py)
        raise invalid_request(
            f"--runtime {runtime} names a vendor runtime (CANN, ROCm, Cambricon toolkit, JetPack), but "
            f"--backend {spec.text} has no vendor runtime to match",
            "use --runtime with --backend npu (CANN), rocm (ROCm), mlu (Cambricon toolkit) or a Jetson's cuda "
            "(JetPack), or drop it",
            "--runtime",
            runtime,
        )


_RUNTIME_EXAMPLES = {"npu": "8.0.0", "rocm": "6.2.4", "mlu": "2.15"}
_RUNTIME_RE = re.compile(r"^(?:ctr\s*|cann\s*|rocm\s*|jetpack\s*)?v?(\d+(?:\.[0-9a-z]+){0,3})$")


@lru_cache(maxsize=FIELD_MEMO)
def _parse_runtime(text: str | None) -> str | None:
    """A vendor runtime version: 8.0.0, 8.0.RC3 (CANN), 6.2.4 (ROCm), 2.15 or 'CTR 2.15' (Cambricon)."""
    if text is None or text.strip() == "":
        return None
    value = text.strip().lower()
    match = _RUNTIME_RE.match(value)
    version = match.group(1) if match else None
    try:
        Version(version or "")
    except InvalidVersion:
        version = None
    if version is None:
        raise invalid_request(
            f"--runtime {text.strip()!r} is not a runtime version",
            "give the version the vendor tool reports: CANN 8.0.0 or 8.0.RC3, ROCm 6.2.4, Cambricon CTR 2.15",
            "--runtime",
            text.strip(),
        )
    return version.replace("rc", "RC")  # CANN writes 8.0.RC3


@lru_cache(maxsize=FIELD_MEMO)
def _parse_gpu(text: str | None) -> str | None:
    if text is None or text.strip() == "":
        return None
    value = " ".join(text.split())
    if not any(ch.isalnum() for ch in value) or any(ord(ch) < 32 for ch in value):
        raise invalid_request(
            f"--gpu {value!r} is not a GPU name", "give the product name, e.g. 'RTX 5090' or 'A100'", "--gpu", value
        )
    return value


@lru_cache(maxsize=FIELD_MEMO)
def _parse_driver(text: str | None) -> str | None:
    if text is None or text.strip() == "":
        return None
    value = text.strip()
    try:
        Version(value)
    except InvalidVersion:
        raise invalid_request(
            f"--driver {value!r} is not a driver version",
            "give the version the driver reports, e.g. 535.104.05 (nvidia-smi) or 6.0.2 (ROCm)",
            "--driver",
            value,
        ) from None
    return value


@lru_cache(maxsize=FIELD_MEMO)
def _parse_gpu_arch(text: str | None) -> str | None:
    if text is None or text.strip() == "":
        return None
    value = text.strip().lower()
    # nvidia-smi prints compute capability as "9.0"; accept it and say it the way the matrix does.
    cc = re.match(r"^(\d{1,2})\.(\d)$", value)
    if cc:
        value = f"sm_{cc.group(1)}{cc.group(2)}"
    if not _GPU_ARCH_RE.match(value):
        raise invalid_request(
            f"--gpu-arch {value!r} is not a GPU architecture",
            "use an NVIDIA compute capability such as sm_90 (or 9.0) or an AMD target such as gfx942",
            "--gpu-arch",
            value,
        )
    return value


def parse_with_stack(values: str | Sequence[str] | None) -> tuple[tuple[str, ...], tuple[PackageRequest, ...]]:
    """``--with`` (each value comma-separated, repeatable): the companions and the ecosystem packages.

    Naming only ecosystem packages keeps the default companions (a package's own pins of them win)."""
    if values is None:
        return DEFAULT_COMPANIONS, ()
    texts = [values] if isinstance(values, str) else list(values)
    items = split_with(texts)
    if not items or all(i.strip().lower() == "none" for i in items):
        return parse_with("none" if texts else None), ()
    companions = [i for i in items if i.strip().lower() in (*COMPANIONS, "none")]
    stack: list[PackageRequest] = []
    for item in items:
        if item in companions:
            continue
        package = parse_package(item)
        if package is None or package.name in COMPANIONS or package.name == "torch":
            raise invalid_request(
                f"--with {item!r} is not a package request",
                "name a package, optionally with a PEP 440 specifier: vllm, vllm==0.15.1, 'xformers>=0.0.30'; "
                "torch itself is --torch; torchvision and torchaudio take no version here",
                "--with",
                item,
            )
        if all(p.name != package.name for p in stack):
            stack.append(package)
    chosen = parse_with(",".join(companions)) if companions else DEFAULT_COMPANIONS
    return chosen, tuple(stack)


@lru_cache(maxsize=FIELD_MEMO)
def _with_text(text: str) -> tuple[tuple[str, ...], tuple[PackageRequest, ...]]:
    return parse_with_stack(text)


def parse_with(text: str | None) -> tuple[str, ...]:
    if text is None:
        return DEFAULT_COMPANIONS
    value = text.strip().lower()
    if value in ("none", ""):
        return ()
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [n for n in names if n not in COMPANIONS]
    if unknown:
        raise invalid_request(
            f"--with {', '.join(unknown)}: not a companion package accelenv pins",
            f"use a comma-separated subset of {', '.join(COMPANIONS)}, or 'none' for torch alone",
            "--with",
            text,
        )
    return names
