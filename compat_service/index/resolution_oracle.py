"""A real resolver as the oracle: does a set of requirements install on a target, and with which pins?

`resolve_closure` runs ``uv pip compile`` (the ``uv`` distribution on the package index: the ``refresh`` extra)
as a subprocess, no shell, against the index the caller names (``IndexLocation`` from ``location``: the
``--index-url`` flag, pip's configuration or pip's default) plus any extra index URLs, for one target
(``--python-platform``, ``--python-version``), with optional constraints. The answer is a `Resolution`: the
whole pinned closure, each pin with the hashes the index states and the index it came from, or, when no
solution exists, uv's explanation and the requirement it names as failing (the one that does not exist, has
no wheel for the target, or conflicts).

The run is reproducible from its arguments alone: uv's configuration files are not read (``--no-config``),
the ``UV_*`` environment is not passed on, no Python is downloaded, and nothing is built (``--no-build`` by
default: a package published only as an sdist fails as "no usable wheels" rather than running its build
backend on this machine).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from compat_service.domain.errors import Cause, InvalidRequestError
from compat_service.index.errors import IndexUnreachableError

__all__ = ["OracleTarget", "Pin", "Resolution", "find_uv", "resolve_closure"]

#: uv's messages naming the requirement a resolution fails on, most specific first
_REQ = r"(?P<req>(?<![\w.])[A-Za-z][A-Za-z0-9._\-]*(?:\[[^\]]*\])?(?:[=<>!~]=?[^\s]+)?)"
_FAILING = (
    re.compile(r"there is no version of " + _REQ),
    re.compile(_REQ + r" was not found in the package registry"),
    re.compile(_REQ + r" has no (?:usable )?wheels"),
    re.compile(r"Because " + _REQ + r" depends on"),
)
#: the markers uv writes into a requirement (``llguidance{platform_machine == 'x86_64'}>=1.7``)
_MARKER = re.compile(r"\{[^}]*\}")
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._\-]*)(?:\[[^\]]*\])?==(?P<version>[^\s;\\]+)")
_HASH = re.compile(r"--hash=(?P<hash>[a-z0-9]+:[0-9a-f]+)")
_FROM = re.compile(r"^\s+# from (?P<index>\S+)")


@dataclass(frozen=True)
class OracleTarget:
    """One host to resolve for: uv's ``--python-platform`` (``x86_64-manylinux_2_28``, ``aarch64-manylinux_2_28``,
    ``x86_64-pc-windows-msvc``, ``aarch64-apple-darwin``, ...), a Python ``major.minor`` and, for macOS, the
    macOS version (``14.0``; uv's own default otherwise, the oldest macOS Apple still supports)."""

    python_platform: str
    python_version: str
    macos: str | None = None


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    #: ``sha256:...`` as the index states them (empty when it states none)
    hashes: tuple[str, ...] = ()
    #: the index URL uv took it from (None when uv did not say)
    index: str | None = None


@dataclass(frozen=True)
class Resolution:
    requirements: tuple[str, ...]
    target: OracleTarget
    resolvable: bool
    #: the closure, by canonical name (empty when not resolvable)
    pins: dict[str, Pin] = field(default_factory=dict)
    #: the requirement uv names as the reason (``flashinfer-python==0.7.3``), when not resolvable
    failing_requirement: str | None = None
    #: uv's explanation, verbatim (colour off), when not resolvable
    failure: str | None = None
    #: not resolvable from wheels alone: a requirement publishes no wheel for the target (``--no-build``), so
    #: pip would build its sdist on the host (tensorrt's sdist fetches NVIDIA's wheels when built)
    needs_build: bool = False

    def version_of(self, name: str) -> str | None:
        pin = self.pins.get(canonicalize_name(name))
        return pin.version if pin else None

    def causes(self) -> list[Cause]:
        """The failure as the error tree's causes (one per line of uv's explanation)."""
        if self.resolvable or not self.failure:
            return []
        lines = [line.strip() for line in self.failure.splitlines() if line.strip()]
        return [Cause(constraint=line, origin="uv pip compile") for line in lines]


def find_uv() -> str:
    """The uv executable: the one the ``uv`` distribution installed beside this Python, else one on PATH."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise InvalidRequestError(
        "the resolution oracle needs uv, which is not installed",
        hint="pip install 'accelenv[refresh]' (installs the uv distribution from the package index)",
    )


def parse_compiled(text: str) -> dict[str, Pin]:
    """The pins of ``uv pip compile --generate-hashes --emit-index-annotation`` output."""
    pins: dict[str, Pin] = {}
    current: tuple[str, str] | None = None
    hashes: list[str] = []
    index: str | None = None

    def close() -> None:
        if current is not None:
            pins[canonicalize_name(current[0])] = Pin(current[0], current[1], tuple(hashes), index)

    for line in text.splitlines():
        pin = _PIN.match(line)
        if pin:
            close()
            current, hashes, index = (pin["name"], pin["version"]), [], None
        hashes.extend(m["hash"] for m in _HASH.finditer(line))
        source = _FROM.match(line)
        if source:
            index = source["index"]
    close()
    return pins


def failing_requirement(explanation: str) -> str | None:
    """The requirement uv's explanation names first as missing, wheel-less or conflicting."""
    plain = _MARKER.sub("", explanation)
    for pattern in _FAILING:
        match = pattern.search(plain)
        if match:
            return match["req"].rstrip(".")
    return None


def _explanation(stderr: str) -> str | None:
    """uv's "no solution" explanation, or None when the failure was something else (network, bad flag)."""
    marker = "No solution found when resolving dependencies"
    if marker not in stderr:
        return None
    rest = stderr.split(marker, 1)[1].lstrip(":").strip()
    return rest.removeprefix("cause:").strip() or marker


def resolve_closure(
    requirements: Sequence[str],
    target: OracleTarget,
    *,
    index_url: str,
    extra_index_urls: Sequence[str] = (),
    find_links: Sequence[str] = (),
    constraints: Sequence[str] = (),
    index_strategy: str = "first-index",
    build: bool = False,
    prerelease: bool = False,
    cache_dir: Path | None = None,
    timeout: float = 300.0,
    uv: str | None = None,
) -> Resolution:
    """Resolve ``requirements`` (PEP 508 strings) for ``target`` with uv against ``index_url`` (+ extras).

    ``constraints`` limit versions without requiring the package (``torch==2.9.0``). uv reads the extra index
    URLs before ``index_url`` (a package found on one is taken from there). ``find_links``: a project's own wheel
    pages (PyG's, mmcv's: pip's and uv's ``--find-links``), read beside the indexes. ``index_strategy`` is
    uv's: ``first-index`` (a package found on an earlier index is taken only from it, the safe default for
    a variant index such as a torch one) or ``unsafe-best-match``. Raises `IndexUnreachableError` when uv
    fails for any reason other than "no solution" (an index that cannot be read, a timeout).
    """
    if not requirements:
        raise InvalidRequestError("nothing to resolve", hint="pass at least one requirement")
    uv = uv or find_uv()
    with tempfile.TemporaryDirectory(prefix="accelenv-oracle-") as work:
        req_file = Path(work, "requirements.in")
        req_file.write_text("\n".join(requirements) + "\n")
        args = [
            uv, "pip", "compile", str(req_file),
            "--python-platform", target.python_platform,
            "--python-version", target.python_version,
            # this interpreter, named: uv's search for one of --python-version costs ~2 s a run (nothing is built)
            "--python", sys.executable,
            "--index-url", index_url,
            "--index-strategy", index_strategy,
            "--generate-hashes", "--emit-index-annotation",
            "--no-header", "--no-config", "--no-python-downloads", "--color", "never", "--quiet",
            "--cache-dir", str(cache_dir or Path(work, "cache")),
        ]
        for extra in extra_index_urls:
            args += ["--extra-index-url", extra]
        for page in find_links:
            args += ["--find-links", page]
        if constraints:
            constraint_file = Path(work, "constraints.txt")
            constraint_file.write_text("\n".join(constraints) + "\n")
            args += ["--constraint", str(constraint_file)]
        if not build:
            args.append("--no-build")
        if prerelease:
            args += ["--prerelease", "allow"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
        env["NO_COLOR"] = "1"
        env.pop("MACOSX_DEPLOYMENT_TARGET", None)
        if target.macos:
            env["MACOSX_DEPLOYMENT_TARGET"] = target.macos  # how uv takes the macOS version of --python-platform
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            raise IndexUnreachableError(
                f"uv pip compile did not finish within {timeout:.0f} s",
                hint="check that the index answers; pass a longer timeout for a large closure",
            ) from exc
    if done.returncode == 0:
        return Resolution(tuple(requirements), target, True, parse_compiled(done.stdout))
    explanation = _explanation(done.stderr)
    if explanation is None:
        raise IndexUnreachableError(
            "uv pip compile failed without a resolution answer",
            hint="check the index URL and that it answers",
            causes=[Cause(constraint=line, origin="uv pip compile") for line in done.stderr.strip().splitlines()[:8]],
        )
    return Resolution(
        tuple(requirements), target, False,
        failing_requirement=failing_requirement(explanation), failure=explanation,
        needs_build=not build and "Wheels are required for" in explanation,
    )
