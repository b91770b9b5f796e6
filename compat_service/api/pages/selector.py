"""The selector page's model: its choices (from the loaded matrix), its state (the URL) and its answer.

The answer is `GET /v1/resolve`'s own body for the page's resolve parameters
(`service_reads.resolution_body`), read
back with the one JSON reader (`resolution_from_json`) and rendered in every install format by the one
renderer the CLI uses (`install_formats.render`). The page adds no resolution logic, so for the same query
it says exactly what the API says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from packaging.version import Version

from compat_service.api.service_reads import resolution_body
from compat_service.domain.backends import ARCHES, OSES, REQUEST_FAMILIES
from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.model.rows import MatrixTables, TorchMinor
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import API_WORDS, COMPANIONS, PARAMETERS, flag_wording, split_with
from compat_service.domain.resolver.resolution import Resolution, resolution_from_json
from probes.host import parsers as tool_parsers

#: the install formats the page shows, in tab order, with their labels
FORMATS: tuple[tuple[str, str], ...] = (
    ("pip", "pip"),
    ("requirements", "requirements.txt"),
    ("uv", "uv (pyproject.toml)"),
    ("conda", "conda environment.yml"),
    ("docker", "Dockerfile"),
)
#: the form's label of each resolve parameter (the template's labels read them)
FIELD_LABELS = {
    "torch": "PyTorch",
    "python": "Python",
    "os": "OS",
    "arch": "CPU",
    "backend": "Accelerator",
    "driver": "Driver version",
    "gpu_arch": "GPU architecture",
    "runtime": "Vendor runtime",
    "glibc": "glibc version",
    "musl": "musl version",
    "macos": "macOS version",
    "with": "With",
    "require_verified": "Only combinations probe reports verify",
    "format": "Install as",
}
#: how the answer's texts name a parameter on the page: by its field, where the resolver (which speaks the
#: CLI's flags) says ``--driver``; mid-sentence a label that is no name reads in lower case ("no driver
#: version given") and "With" in quotes (a bare "drop With vllm" misreads); the GPU name comes from a pasted
#: nvidia-smi output, and the parameters the form has no field for (strict: only in a URL) keep their query
#: parameter's name
PAGE_WORDS = API_WORDS | FIELD_LABELS | {
    "driver": FIELD_LABELS["driver"].lower(),
    "backend": FIELD_LABELS["backend"].lower(),
    "with": f"“{FIELD_LABELS['with']}”",
    "gpu": "GPU name",
    "require_verified": f"“{FIELD_LABELS['require_verified']}”",
}
#: query parameters of the page itself (not passed on to the resolver: it ignores them anyway)
PAGE_PARAMS = ("format", "gpu_seen", "notice")
STATE_PARAMS = (*(p.name for p in PARAMETERS), *PAGE_PARAMS)
_CUDA_BACKEND = re.compile(r"^(cuda|cu\d{3})$")

NOTICES = {
    "paste-empty": "The pasted text holds no NVIDIA driver version or GPU that accelenv can read: paste the "
    "whole output of `nvidia-smi`, or of `nvidia-smi --query-gpu=driver_version,compute_cap,name --format=csv`.",
}


def _py_key(version: str) -> tuple[int, int, int]:
    major, minor = version.rstrip("t").split(".")[:2]
    return int(major), int(minor), 1 if version.endswith("t") else 0


def choices(data: MatrixTables) -> dict[str, Any]:
    """The values each control offers, from the loaded matrix (data, not code)."""
    minors = sorted(data.torch_releases.minors, key=lambda m: Version(m.minor), reverse=True)
    patches = sorted(
        (p.version for m in minors for p in m.patches), key=Version, reverse=True
    )
    labels: dict[str, list[str]] = {}
    for variant in data.build_variants.variants:
        labels.setdefault(variant.family, []).append(variant.label)
    return {
        "minors": [m.minor for m in minors],
        "patches": patches,
        "pythons": _pythons(minors),
        "oses": OSES,
        "arches": ARCHES,
        "families": REQUEST_FAMILIES,
        "labels": labels,
        "gpu_archs": _gpu_archs(data),
        "companions": ["torchvision,torchaudio", *COMPANIONS, "none"],
        "ecosystem": _ecosystem_names(),
    }


def _pythons(minors: list[TorchMinor]) -> list[str]:
    """Every Python some release lists (a minor's or a patch's override), newest first."""
    return sorted(
        {v for m in minors for s in m.python for v in s.versions}
        | {v for m in minors for p in m.patches for s in p.python_override or [] for v in s.versions},
        key=_py_key,
        reverse=True,
    )


def _gpu_archs(data: MatrixTables) -> list[str]:
    """The arch lists' architectures, then the ROCm releases' other gfx targets."""
    archs = sorted({a for row in data.gpu_archs.arch_lists for a in row.archs})
    return archs + sorted({g for r in data.rocm.releases for g in r.gfx_targets or []} - set(archs))


def _ecosystem_names() -> list[str]:
    """The packages the "with" field suggests (the ecosystem catalog's names)."""
    from compat_service.domain.stacks.catalog import load_catalog

    return load_catalog().names()


def state_of(request: Request) -> dict[str, str]:
    """The selection in the URL: every known parameter with a non-empty value, in a stable order; a repeatable
    one (``with``: the companions select and the packages field both send it) joined with commas."""
    q = request.query_params
    state = {name: q[name] for name in STATE_PARAMS if q.get(name, "").strip()}
    for p in PARAMETERS:
        values = [v.strip() for v in q.getlist(p.name) if v.strip()]
        if p.repeatable and len(values) > 1:
            state[p.name] = ",".join(values)
    return {name: state[name] for name in STATE_PARAMS if name in state}


def with_parts(value: str | None) -> tuple[str, str]:
    """``with`` as the page's two fields: the companions (the select's value) and the ecosystem packages."""
    items = split_with([value]) if value else []
    companions = [i for i in items if i.lower() in (*COMPANIONS, "none")]
    packages = [i for i in items if i.lower() not in (*COMPANIONS, "none")]
    return ",".join(companions), ", ".join(packages)


def is_canonical(request: Request, state: dict[str, str]) -> bool:
    """False when the URL holds empty or unknown parameters (a plain form submit): the page redirects."""
    items = request.query_params.multi_items()
    return len(items) == len(state) and all(state.get(k) == v for k, v in items)


def url_for_state(state: dict[str, str], **changes: Any) -> str:
    merged = dict(state)
    for name, value in changes.items():
        if value is None or value == "":
            merged.pop(name, None)
        else:
            merged[name] = _query_value(value)
    ordered = {k: merged[k] for k in STATE_PARAMS if k in merged}
    return "/" + ("?" + urlencode(ordered) if ordered else "")


def _query_value(value: object) -> str:
    """A parameter's value as the URL writes it (a list comma-separated, ``none`` when empty)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "none"
    return str(value)


@dataclass
class Answer:
    """The resolver's answer for the page: the API's JSON, and either the install texts or the error."""

    body: dict[str, Any]
    resolution: Resolution | None = None
    formats: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    alternatives: list[tuple[str, str]] = field(default_factory=list)

    @property
    def body_json(self) -> str:
        """The API's answer for a ``<script type="application/json">`` block (no ``</script>`` can close it)."""
        text = json.dumps(self.body, sort_keys=True)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


async def answer(request: Request, state: dict[str, str]) -> Answer:
    # the route's own answer to the page's resolve parameters (the page's own ones, format included, are not
    # the API's: its query is strict, and format= there would answer text)
    query = urlencode({k: v for k, v in state.items() if k not in PAGE_PARAMS}).encode("latin-1", "replace")
    try:
        raw = await resolution_body(request.app, query)
    except AccelenvError as exc:
        body = exc.to_body().model_dump(mode="json")
        alternatives = [
            (alt["description"], url_for_state(_without_page(state), **alt["request"]))
            for alt in body.get("alternatives", [])
        ]
        return Answer(body=body, error=body, alternatives=alternatives)
    body = json.loads(raw)
    resolution = in_page_words(resolution_from_json(body))
    # The page lists the warnings and the unknowns once, under the install (issue 29); its install texts are
    # the commands alone. The CLI's and the API's texts keep them as comments, for scripts.
    commands_only = resolution.changed(warnings=(), unknowns=())
    formats: list[tuple[str, str, str | None, str | None]] = []
    for fmt, label in FORMATS:
        try:
            formats.append((fmt, label, render(commands_only, fmt), None))
        except AccelenvError as exc:  # e.g. no Dockerfile for a Windows target
            formats.append((fmt, label, None, exc.message))
    return Answer(body=body, resolution=resolution, formats=formats)


def in_page_words(res: Resolution) -> Resolution:
    """The answer's texts with each CLI flag they name said as the page's field (``--driver`` -> Driver
    version): what the page shows and the install texts' comments. The API's JSON on the page stays the
    API's."""

    def say(text: str) -> str:
        return flag_wording(text, PAGE_WORDS)

    return res.changed(
        warnings=tuple(say(w) for w in res.warnings),
        unknowns=tuple(say(u) for u in res.unknowns),
        reasons=tuple(replace(r, detail=say(r.detail)) for r in res.reasons),
        requirements=tuple(replace(q, detail=say(q.detail)) for q in res.requirements),
        stack=tuple(replace(p, reason=say(p.reason)) for p in res.stack),
    )


def _without_page(state: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in state.items() if k not in ("gpu_seen", "notice")}


#: the query to paste (the one host detection runs), for the page's hint
NVIDIA_SMI_QUERY = f"nvidia-smi --query-gpu={','.join(tool_parsers.NVIDIA_SMI_QUERY_FIELDS)} --format=csv"


def from_nvidia_smi(text: str, state: dict[str, str]) -> str:
    """The selector URL with the driver and GPU read from pasted `nvidia-smi` output (probes' parsers):
    plain `nvidia-smi` gives the driver and GPU names, the `NVIDIA_SMI_QUERY` output also the architecture."""
    driver, capabilities, names = _nvidia_smi_facts(text)
    base = _without_page(state)
    if driver is None and not capabilities and not names:
        return url_for_state(base, notice="paste-empty")
    changes: dict[str, Any] = {"driver": driver or base.get("driver")}
    if capabilities:
        # a multi-GPU host: the lowest compute capability (a build must run on every GPU)
        changes["gpu_arch"] = min(capabilities, key=_capability_key)
    elif names:
        # plain nvidia-smi prints names only: the resolver maps them with the matrix's GPU names (gpu=)
        changes["gpu"] = ", ".join(dict.fromkeys(names))
    if names:
        changes["gpu_seen"] = ", ".join(dict.fromkeys(names))
    if not _CUDA_BACKEND.match(base.get("backend", "cpu")):
        changes["backend"] = "cuda"  # an NVIDIA host: its builds, not the CPU one
    return url_for_state(base, **changes)


def _nvidia_smi_facts(text: str) -> tuple[str | None, list[str], list[str]]:
    """The driver, the compute capabilities and the GPU names in pasted `nvidia-smi` output."""
    rows = tool_parsers.parse_nvidia_smi_query(text)
    driver = tool_parsers.parse_nvidia_smi_banner(text)["driver_version"]
    if driver is None:
        driver = next((r["driver_version"] for r in rows if r["driver_version"]), None)
    capabilities = [r["compute_cap"] for r in rows if r.get("compute_cap")]
    names = [g["name"] for g in tool_parsers.parse_nvidia_smi_gpus(text)] or [r["name"] for r in rows if r.get("name")]
    return driver, capabilities, names


def _capability_key(capability: str) -> tuple[int, ...]:
    return tuple(int(p) for p in capability.split(".") if p.isdigit())


def variant_lines(matrix: Any, resolution: Resolution | None, state: dict[str, str]) -> list[str]:
    """For a CUDA or ROCm answer: which wheel variant a PEP 817 installer (the published providers) and accelenv
    take for the selected host, and why they differ (compat_service/domain/variants/selection.py).

    The variants are those of the release's builds on PyTorch's indexes; an answer whose torch wheel comes from
    outside any index (a JetPack wheel, installed by its URL) takes none of them, so it gets no section."""
    if resolution is None or resolution.family not in ("cuda", "rocm"):
        return []
    if any(pin.url is not None for pin in resolution.packages if pin.name == "torch"):
        return []
    from compat_service.domain.errors import AccelenvError
    from compat_service.domain.variants.export import release_variants
    from compat_service.domain.variants.selection import explain_selection, explanation_lines, variant_host

    try:
        document = release_variants(matrix, resolution.torch_version, resolution.platform)["document"]
        host = variant_host(matrix, os=resolution.os, driver=state.get("driver") or None,
                            gpu_archs=state.get("gpu_arch") or None, gpu_names=state.get("gpu") or None,
                            rocm_version=(state.get("runtime") or None) if resolution.family == "rocm" else None)
        if not host.gpus:
            return []
        return explanation_lines(explain_selection(matrix, host, document))
    except AccelenvError:
        return []
