"""The I/O of `accelenv lock`: the closure from the resolution oracle, each pin's files from its index.

For one host class: accelenv's resolver gives the torch build and its index (`Resolution`); the oracle
(``resolution_oracle.resolve_closure``: uv against the configured index, the torch index first) pins the
whole closure with that build as a constraint; each pin's project page on the index uv took it from gives
its wheels for the target (tags read as `matrix refresh` reads them: ``facts.python_of``,
``facts.platforms_of``), with the sha256 the page states. A file whose page states none is hashed from its
downloaded bytes (``hash_source = downloaded``) unless ``require_index_hashes``, which refuses instead.
A ``{name}-{version}-variants.json`` the page links (PEP 825) goes into the lock too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from compat_service.domain.errors import Cause, InvalidRequestError
from compat_service.domain.lock.hosts import answer_of
from compat_service.domain.lock.pylock import (
    HASH_FROM_DOWNLOAD,
    HASH_FROM_INDEX,
    LockedFile,
    LockedPackage,
    pylock_document,
    summary,
    validate,
)
from compat_service.domain.resolver.resolution import Resolution
from compat_service.index.client import IndexClient
from compat_service.index.facts import platforms_of, python_of
from compat_service.index.generated import load_config
from compat_service.index.resolution_oracle import OracleTarget, resolve_closure

#: the glibc a Linux lock assumes unless told (``--glibc``): vLLM's wheels need 2.31 (manylinux_2_31), torch's
#: 2.28 from 2.6; PEP 508 has no glibc marker, so the lock records it under [tool.accelenv]
DEFAULT_GLIBC = "2.31"
#: accelenv platform -> uv's ``--python-platform`` ({glibc}: the target's, for Linux) and the PEP 508 marker
#: of a lock's environment
TARGETS: dict[str, tuple[str, str]] = {
    "linux-x86_64": ("x86_64-manylinux_{glibc}", 'sys_platform == "linux" and platform_machine == "x86_64"'),
    "linux-aarch64": ("aarch64-manylinux_{glibc}", 'sys_platform == "linux" and platform_machine == "aarch64"'),
    "windows-x86_64": ("x86_64-pc-windows-msvc", 'sys_platform == "win32" and platform_machine == "AMD64"'),
    "macos-arm64": ("aarch64-apple-darwin", 'sys_platform == "darwin" and platform_machine == "arm64"'),
    "macos-x86_64": ("x86_64-apple-darwin", 'sys_platform == "darwin" and platform_machine == "x86_64"'),
}


@dataclass(frozen=True)
class LockInputs:
    #: the default index (pip's configured one, or --index-url)
    index_url: str
    #: a mirror of the torch indexes: ``{label}`` stands for the build label (http://mirror/whl/{label}/)
    torch_index: str | None = None
    require_index_hashes: bool = False
    matrix_path: Path | None = None
    #: the target's glibc (Linux): which manylinux wheels the closure may take
    glibc: str = DEFAULT_GLIBC


def _fits(filename: str, platform: str, python: str, config: Any) -> bool:
    try:
        _name, _version, _build, tags = parse_wheel_filename(filename)
    except ValueError:
        return False
    for tag in tags:
        py = python_of(tag)
        if py is None:
            continue
        py_ok = py in ("any", python) or (
            py.endswith("+") and not python.endswith("t")
            and Version(py.removesuffix("+")) <= Version(python)
        )
        if py_ok and platform in platforms_of(tag.platform, config):
            return True
    return False


def _download_sha256(client: IndexClient, url: str) -> str:
    digest = hashlib.sha256()
    with client.http.stream("GET", url, follow_redirects=True) as response:
        if response.status_code != 200:
            raise InvalidRequestError(f"{url} answered HTTP {response.status_code}",
                                      hint="the file the index links cannot be read; check the index")
        for chunk in response.iter_bytes():
            digest.update(chunk)
    return digest.hexdigest()


def _same_version(a: str, b: str) -> bool:
    return Version(a) == Version(b)


def package_files(client: IndexClient, index_url: str, name: str, version: str, platform: str, python: str,
                  config: Any, require_index_hashes: bool) -> LockedPackage:
    """The pin's wheels for the target, with their hashes, and the release's variants JSON."""
    page = client.project_page(index_url, name)
    wheels: list[LockedFile] = []
    unstated: list[str] = []
    variants_json = None
    public = Version(version).public
    for dist in page.packages if page is not None else ():
        if dist.filename in (f"{canonicalize_name(name)}-{version}-variants.json",
                             f"{canonicalize_name(name)}-{public}-variants.json",
                             f"{name}-{version}-variants.json", f"{name}-{public}-variants.json"):
            stated = (dist.digests or {}).get("sha256")
            variants_json = LockedFile(dist.filename, dist.url, stated or _download_sha256(client, dist.url),
                                       HASH_FROM_INDEX if stated else HASH_FROM_DOWNLOAD)
            continue
        if dist.package_type != "wheel" or dist.version is None or not _same_version(dist.version, version):
            continue
        if dist.is_yanked or not _fits(dist.filename, platform, python, config):
            continue
        stated = (dist.digests or {}).get("sha256")
        if stated is None:
            unstated.append(dist.filename)
            if require_index_hashes:
                continue
            sha, source = _download_sha256(client, dist.url), HASH_FROM_DOWNLOAD
        else:
            sha, source = stated, HASH_FROM_INDEX
        wheels.append(LockedFile(dist.filename, dist.url, sha, source, dist.size, dist.upload_time))
    if unstated and require_index_hashes:
        raise InvalidRequestError(
            f"the index states no sha256 for {len(unstated)} file(s) of {name} {version}",
            causes=[Cause(constraint=f, origin=index_url) for f in unstated],
            hint="drop --require-index-hashes to hash them from the downloaded bytes (recorded as such)",
        )
    if not wheels:
        raise InvalidRequestError(
            f"{index_url} has no wheel of {name} {version} for {platform}, Python {python}",
            hint="the oracle pinned it from this index; check that the index serves wheels for the target",
        )
    return LockedPackage(str(canonicalize_name(name)), version, index_url, tuple(wheels), variants_json)


def lock_resolution(resolution: Resolution, inputs: LockInputs, *, host_classes: Sequence[dict[str, Any]] = (),
                    client: IndexClient | None = None) -> dict[str, Any]:
    """The ``pylock.toml`` document (validated with packaging.pylock) for one resolved host."""
    if resolution.platform not in TARGETS:
        raise InvalidRequestError(f"no lock target for {resolution.platform}", hint=f"one of: {', '.join(TARGETS)}")
    python_platform, marker = TARGETS[resolution.platform]
    python_platform = python_platform.format(glibc=inputs.glibc.replace(".", "_"))
    torch_index = resolution.index_url
    if torch_index and inputs.torch_index:
        torch_index = inputs.torch_index.format(label=resolution.backend)
    requirements = [f"{p.name}=={p.version}" for p in resolution.packages]
    requirements += [f"{p.name}=={p.version}" for p in resolution.stack if p.origin == "index"]
    closure = resolve_closure(
        requirements, OracleTarget(python_platform, resolution.python.rstrip("t")),
        index_url=inputs.index_url, extra_index_urls=[torch_index] if torch_index else [],
        constraints=[f"torch=={resolution.torch_version}"],
    )
    if not closure.resolvable:
        raise InvalidRequestError(
            f"the resolver finds no closure for {', '.join(requirements)}: {closure.failing_requirement}",
            causes=closure.causes(),
            hint=f"check that the index serves these releases for the target; a Linux wheel newer than glibc "
            f"{inputs.glibc} needs --glibc (the target's)")
    config = load_config(inputs.matrix_path or _bundled())
    own = client is None
    client = client or IndexClient(user_agent="accelenv-lock")
    try:
        packages = [
            package_files(client, pin.index or (torch_index if torch_index and pin.name in
                          {p.name for p in resolution.packages} else inputs.index_url),
                          pin.name, pin.version, resolution.platform, resolution.python, config,
                          inputs.require_index_hashes)
            for pin in closure.pins.values()
        ]
    finally:
        if own:
            client.close()
    counts = summary(packages)
    document = pylock_document(
        packages, python=resolution.python.rstrip("t"), environment=marker,
        tool={
            "answer": answer_of(resolution),
            **({"glibc": inputs.glibc} if resolution.os == "linux" else {}),
            "index-url": inputs.index_url,
            "torch-index": torch_index or inputs.index_url,
            "files": counts.files,
            "files-with-index-hash": counts.index_hashes,
            "files-hashed-from-download": counts.downloaded_hashes,
            "host-classes": list(host_classes),
            # stack packages that are no index release (a prebuilt wheel by URL, a source build): not in the lock
            "not-locked": [{"name": p.name, "version": p.version, "origin": p.origin}
                           for p in resolution.stack if p.origin != "index"],
        },
    )
    validate(document)
    return document


def _bundled() -> Path:
    from matrix_data import DATA_DIR

    return Path(DATA_DIR)
