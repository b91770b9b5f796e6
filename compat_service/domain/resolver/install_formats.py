"""Every output format of `accelenv resolve`, generated from one `Resolution`.

- json: `resolution_to_json` (the service returns the same object)
- pip: the command in the form the official PyTorch commands use for that release; packages from the
  default index (torch-npu) get their own command after torch, as Ascend documents it, and --no-deps
  companions (mlu) theirs; the warnings first, as comments
- requirements: a requirements.txt with its index line, the warnings as comments

One index rule for every format: the index line/option is the resolution's ``index_option`` as is. The
resolver decides it (answer.py): the release's own option from the matrix (``--index-url``, or
``--extra-index-url`` with local version pins for 1.13-era releases), and ``--extra-index-url`` with local
pins when the install also takes packages from the default index (torch-npu), since one file has one set
of indexes.
- uv: a ``pyproject.toml`` snippet (``[[tool.uv.index]]`` with ``explicit = true`` + ``[tool.uv.sources]``),
  the ``uv pip install`` line as a comment at its top so the whole output stays valid TOML
- conda: an environment.yml with a pip section
- docker: a Dockerfile fragment (Linux targets only)
- text: for people

A stack (`--with vllm`) adds its ecosystem packages after torch, in an order that never lets them replace
torch: with torch from the default index they join its one command (pip resolves everything at once); with
torch from another index they follow in a second command that repeats every torch pin, so pip keeps the
installed builds; a source build (flash-attn without a prebuilt wheel) and a ``--no-deps`` package get
commands of their own (the warnings, printed as comments, say why):

- a source build whose build imports torch (flash-attn's setup.py) runs without build isolation, after torch:
  pip's ``--no-build-isolation``; in the uv format ``[tool.uv] no-build-isolation-package``. A requirements
  file or a conda environment cannot order it after torch (pip builds while it resolves, before anything is
  installed, and a requirements file takes no ``--no-build-isolation``): they leave it out of the file and say
  the command to run after it, as a comment.
- a package whose metadata pins another torch (vLLM paired with vllm-ascend) is installed with ``--no-deps``
  (pip has no override of a dependency's pin), and then its other requirements, read from the installed
  distribution's metadata, with every pin of the answer held; the uv format states the answer's pins as
  ``[tool.uv] override-dependencies`` instead, uv's documented override of a dependency's pin.
- a package from its project's own wheel page (PyG, mmcv: origin ``find-links``) takes the page as
  ``--find-links`` in every format (uv: a flat index used only for that package).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from compat_service.domain.resolver.install_commands import (
    after_torch,
    find_links,
    index_lines,
    pip_commands,
    source_built,
    spec,
    stack_spec,
    torch_pins,
)
from compat_service.domain.resolver.resolution import Resolution, resolution_to_json

FORMATS = ("text", "json", "pip", "requirements", "uv", "conda", "docker")


def render(res: Resolution, fmt: str) -> str:
    """The resolution in `fmt` (one of FORMATS); the text ends with a newline."""
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        from compat_service.domain.resolver.request import invalid_request

        raise invalid_request(
            f"--format {fmt!r} is not an output format", f"use one of: {', '.join(FORMATS)}", "--format", fmt
        )
    return renderer(res)


def _stack_lines(res: Resolution) -> list[str]:
    """requirements.txt / conda pip lines of the stack: what one pip run can install (see `_after_lines`), after
    the wheel pages of the packages from their project's own page (``--find-links``)."""
    plain = [pin for pin in res.stack if not source_built(pin) and not pin.no_deps]
    return [f"--find-links {url}" for url in find_links(plain)] + [
        pin.url if pin.origin == "url" and pin.url else stack_spec(pin).strip('"') for pin in plain]


def _after_lines(res: Resolution, comment: str = "#") -> list[str]:
    """What a file cannot install, as comments: the commands to run once it is installed."""
    after = after_torch(res, "pip install")
    if not after:
        return []
    why = []
    if any(source_built(p) for p in res.stack):
        why.append("a source build whose build imports torch runs without build isolation, after torch")
    if any(p.no_deps for p in res.stack):
        why.append("a package pinning another torch goes in with --no-deps, then its other requirements")
    lines = [f"{comment} then run, once this is installed ({'; '.join(why)}):"]
    return lines + [f"{comment}   {command}" for command in after]


def _pip(res: Resolution) -> str:
    return "\n".join([*_warning_comments(res), *pip_commands(res)]) + "\n"


def _header(res: Resolution) -> str:
    return f"# accelenv: torch {res.torch_version} ({res.backend}) for Python {res.python} on {res.platform}"


def _warning_comments(res: Resolution) -> list[str]:
    """The warnings (and an answer's unknowns) as comments, so a script's output keeps them."""
    lines = [f"# warning: {w}" for w in res.warnings]
    if res.unknowns:
        lines.append(f"# status: {res.status}: " + "; ".join(res.unknowns))
    return lines


def _requirements(res: Resolution) -> str:
    lines = [_header(res), *_warning_comments(res), *index_lines(res)]
    # requirements.txt has no per-package --no-deps: say so where it applies
    lines += [spec(p) + ("  # install with --no-deps" if p.name in res.no_deps else "") for p in res.packages]
    lines += _stack_lines(res)
    lines += _after_lines(res)
    return "\n".join(lines) + "\n"


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _uv(res: Resolution) -> str:
    index_name = f"pytorch-{res.backend}"
    commands = pip_commands(res, tool="uv pip install")
    lines = [_header(res), *(f"# {c}" for c in commands), "", "[project]", "dependencies = ["]
    lines += [f"  {_toml_str(spec(p))}," for p in res.packages]
    lines += [f"  {_toml_str(stack_spec(p).strip(chr(34)))}," for p in res.stack]
    lines.append("]")
    lines += _uv_settings(res)
    on_index = torch_pins(res)
    sources: list[str] = []
    if res.index_url is not None:
        lines += [
            "",
            "[[tool.uv.index]]",
            f"name = {_toml_str(index_name)}",
            f"url = {_toml_str(res.index_url)}",
            "explicit = true",
        ]
        sources += [f"{p.name} = [{{ index = {_toml_str(index_name)} }}]" for p in on_index]
    # a project's own wheel page (--find-links) is a flat index in uv, used only for that package
    for pin in res.stack:
        if pin.origin == "find-links" and pin.url:
            name = f"{pin.name}-wheels"
            lines += ["", "[[tool.uv.index]]", f"name = {_toml_str(name)}", f"url = {_toml_str(pin.url)}",
                      'format = "flat"', "explicit = true"]
            sources.append(f"{pin.name} = [{{ index = {_toml_str(name)} }}]")
    if sources:
        lines += ["", "[tool.uv.sources]", *sources]
    return "\n".join(lines) + "\n"


def _uv_settings(res: Resolution) -> list[str]:
    """``[tool.uv]``: a source build whose build imports torch (flash-attn) without build isolation, and the
    answer's pins over those of a package that pins another torch (uv's override-dependencies)."""
    builds = [p.builds or p.name for p in res.stack if source_built(p)]
    overridden = [p for p in res.stack if p.no_deps]
    if not builds and not overridden:
        return []
    lines = ["", "[tool.uv]"]
    if builds:
        lines += [f"# {', '.join(builds)}: built from source against the installed torch (its build imports torch),",
                  "# so without build isolation: install torch first (the first command above), then sync",
                  "no-build-isolation-package = [" + ", ".join(_toml_str(n) for n in builds) + "]"]
    if overridden:
        names = ", ".join(p.name for p in overridden)
        lines += [f"# {names} pin(s) another torch than this answer's: the answer's pins override theirs",
                  "override-dependencies = [" + ", ".join(_toml_str(spec(p)) for p in res.packages) + "]"]
    return lines


def _conda(res: Resolution) -> str:
    name = f"torch-{res.torch_version}-{res.backend}".replace("+", "-")
    lines = [
        _header(res),
        f"name: {name}",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        f"  - python={res.python.rstrip('t')}",
        "  - pip",
        "  - pip:",
    ]
    lines += [f"      - {line}" for line in index_lines(res)]
    lines += [f"      - {spec(p)}" for p in res.packages]
    lines += [f"      - {line}" for line in _stack_lines(res)]
    lines += _after_lines(res)
    return "\n".join(lines) + "\n"


def _docker(res: Resolution) -> str:
    if res.os != "linux":
        from compat_service.domain.resolver.request import invalid_request

        raise invalid_request(
            f"--format docker builds a Linux image; the target is {res.platform}",
            "use --os linux for a container, or another --format",
            "--format",
            "docker",
        )
    lines = [_header(res), f"FROM python:{res.python.rstrip('t')}-slim"]
    for command in pip_commands(res, tool="pip install --no-cache-dir"):
        lines.append(f"RUN {command}")
    for req in res.requirements:
        lines.append(f"# host needs {req.name}{' >= ' + req.version if req.version else ''}: {req.detail}")
    if res.family == "cuda":
        lines += [
            "# A host driver below the CUDA toolkit's own floor: NVIDIA's forward compatibility (the",
            "# cuda-compat-<major>-<minor> package in the image, its libraries first on LD_LIBRARY_PATH) runs a newer",
            "# CUDA on an older driver only on data-centre GPUs, and never on New Feature Branch drivers",
            "# (NVIDIA CUDA Compatibility, Forward Compatibility [nv_forward_compat]); otherwise upgrade the driver.",
        ]
    return "\n".join(lines) + "\n"


def _json(res: Resolution) -> str:
    return json.dumps(resolution_to_json(res), indent=2) + "\n"


def _text(res: Resolution) -> str:
    lines = [
        f"torch {res.torch_version} · {res.backend} ({res.family}) · Python {res.python} · {res.platform}",
        f"status: {res.status}",
        *(f"  ? rests on: {u}" for u in res.unknowns),
        "",
        "install:",
        *(f"  {c}" for c in pip_commands(res)),
    ]
    if res.stack:
        lines += ["", "with:"]
        lines += [f"  {p.name} {p.version} ({p.origin}): {p.reason}" for p in res.stack]
    if res.requirements:
        lines += ["", "the host needs:"]
        lines += [
            f"  {r.name}{' >= ' + r.version if r.version else ''}  ({r.detail})" for r in res.requirements
        ]
    lines += ["", "why:"]
    for reason in res.reasons:
        sources = f"  [{', '.join(reason.sources)}]" if reason.sources else ""
        lines.append(f"  {reason.decision}: {reason.detail}{sources}")
    if res.warnings:
        lines += ["", "warnings:"]
        lines += [f"  ! {w}" for w in res.warnings]
    if res.stack and res.unknowns:
        lines += ["", f"status: {res.status} (what the matrix does not know):"]
        lines += [f"  ? {u}" for u in res.unknowns]
    return "\n".join(lines) + "\n"


_RENDERERS: dict[str, Callable[[Resolution], str]] = {
    "text": _text,
    "json": _json,
    "pip": _pip,
    "requirements": _requirements,
    "uv": _uv,
    "conda": _conda,
    "docker": _docker,
}
