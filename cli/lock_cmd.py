"""`accelenv lock`: the pinned set and its whole dependency closure as a hashed PEP 751 ``pylock.toml``.

One host (resolve's inputs, ``--with`` included; ``--backend auto`` detects this host) writes one lock;
``--for FILE`` (a JSON or YAML list of host descriptions, e.g. the CI matrix's cells) writes one lock per
distinct answer into ``--out DIR`` plus ``locks.json``, the index of which host class takes which lock
(`accelenv install --locks DIR` reads it). The closure comes from the resolution oracle (uv against the
configured index: ``--index-url``, else pip's), with accelenv's torch build and index as constraints;
``--torch-index`` points the torch indexes at a mirror (``{label}`` is the build label). The domain is
compat_service/domain/lock/, the I/O compat_service/index/locking.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("lock", help="Write a hashed pylock.toml (PEP 751) of the answer and its whole closure; --for "
                "FILE: one per host class.")(lock_command)


def lock_command(
    torch: str = typer.Option("latest", "--torch", help="latest, a minor (2.3) or a patch (2.3.1)"),
    python: str | None = typer.Option(None, "--python", help="the target's Python (default: this one)"),
    os_name: str | None = typer.Option(None, "--os", help="linux, windows, macos (default: this host's)"),
    arch: str | None = typer.Option(None, "--arch", help="x86_64, aarch64, arm64 (default: this host's)"),
    backend: str | None = typer.Option(None, "--backend", help="cpu, cuda, cu126, rocm6.2, xpu, ... or auto"),
    driver: str | None = typer.Option(None, "--driver", help="the NVIDIA driver of the target"),
    gpu_arch: str | None = typer.Option(None, "--gpu-arch", help="the target's GPU architecture: sm_90, gfx942"),
    gpu: str | None = typer.Option(None, "--gpu", help="the target's GPU by name"),
    runtime: str | None = typer.Option(None, "--runtime", help="the vendor runtime of the target"),
    with_: list[str] = typer.Option([], "--with", help="companions and ecosystem packages, as resolve takes"),
    for_file: Path | None = typer.Option(None, "--for", help="a JSON or YAML list of host descriptions"),
    out: Path | None = typer.Option(None, "--out", "-o", help="the lock file (default pylock.toml); with --for, "
                                    "the directory (default locks/)"),
    index_url: str | None = typer.Option(None, "--index-url", help="the default index (default: pip's)"),
    torch_index: str | None = typer.Option(None, "--torch-index", help="a mirror of the torch indexes, {label} "
                                           "standing for the build label"),
    require_index_hashes: bool = typer.Option(False, "--require-index-hashes", help="refuse files whose index "
                                              "states no sha256 instead of hashing the download"),
    glibc: str | None = typer.Option(None, "--glibc", help="the Linux target's glibc (default 2.31): which "
                                     "manylinux wheels the closure may take"),
    as_json: bool = typer.Option(False, "--json", help="print what was written as JSON"),
) -> None:
    from cli.error_render import dump_json, guarded

    with guarded(as_json=as_json):
        from compat_service.domain.lock.hosts import INDEX_FILE, group_by_answer, lock_file_name, lock_index
        from compat_service.domain.lock.pylock import dumps
        from compat_service.index.location import resolve_index
        from compat_service.index.locking import DEFAULT_GLIBC, LockInputs, lock_resolution

        inputs = LockInputs(index_url=resolve_index(index_url).url, torch_index=torch_index,
                            require_index_hashes=require_index_hashes, glibc=glibc or DEFAULT_GLIBC)
        if for_file is not None:
            descriptions = _read_hosts(for_file)
        else:
            descriptions = [_this_host({"torch": torch, "python": python, "os": os_name, "arch": arch,
                                        "backend": backend, "driver": driver, "gpu_arch": gpu_arch, "gpu": gpu,
                                        "runtime": runtime, "with": ",".join(with_) if with_ else None})]
        written = []
        entries = []
        directory = (out or Path("locks")) if for_file is not None else None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        for answer, resolution, hosts in group_by_answer(descriptions):
            document = lock_resolution(resolution, inputs, host_classes=hosts)
            name = lock_file_name(answer)
            path = directory / name if directory is not None else (out or Path("pylock.toml"))
            path.write_text(dumps(document), encoding="utf-8")
            tool = document["tool"]["accelenv"]
            written.append({"lock": str(path), "answer": answer, "files": tool["files"],
                            "files_with_index_hash": tool["files-with-index-hash"],
                            "files_hashed_from_download": tool["files-hashed-from-download"],
                            "host_classes": len(hosts), "not_locked": tool["not-locked"]})
            entries.append((answer, name, hosts))
        if directory is not None:
            (directory / INDEX_FILE).write_text(json.dumps(lock_index(entries), indent=2) + "\n", encoding="utf-8")
    if as_json:
        dump_json({"locks": written, "index": str(directory / INDEX_FILE) if directory is not None else None})
        return
    for item in written:
        a = item["answer"]
        typer.echo(f"{item['lock']}: torch {a['torch']} ({a['build']}) {a['platform']} Python {a['python']}, "
                   f"{item['files']} files, {item['files_with_index_hash']} with the index's sha256, "
                   f"{item['files_hashed_from_download']} hashed from the download; {item['host_classes']} host "
                   "class(es)")
        for p in item["not_locked"]:
            typer.echo(f"  ! {p['name']} {p['version']} is not in the lock: it is no index release ({p['origin']}); "
                       "install it as `accelenv resolve` says")
    if directory is not None:
        typer.echo(f"{directory / INDEX_FILE}: which host class takes which lock")


def _this_host(values: dict[str, Any]) -> dict[str, Any]:
    """One host's description: the flags given, this host's Python, OS and arch where none; --backend auto
    detects this host's backend, driver and GPU."""
    from probes.host import facts as host_facts

    if values.get("backend") == "auto":
        found = host_facts.detect_host()
        values["backend"] = found["backend"]
        values["driver"] = values.get("driver") or found.get("driver_version")
        values["gpu_arch"] = values.get("gpu_arch") or found.get("device_arch")
    values["python"] = values.get("python") or host_facts.python_minor()
    values["os"] = values.get("os") or host_facts.os_name()
    values["arch"] = values.get("arch") or host_facts.arch_name()
    return {k: v for k, v in values.items() if v is not None}


def _read_hosts(path: Path) -> list[dict[str, Any]]:
    from compat_service.domain.errors import InvalidRequestError

    try:
        text = path.read_text(encoding="utf-8")
        import yaml

        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError) as exc:
        raise InvalidRequestError(f"--for {path}: {exc}", hint="give a JSON or YAML list of host descriptions") from exc
    if isinstance(data, dict) and isinstance(data.get("include"), list):
        data = data["include"]  # a GET /v1/ci-matrix answer (GitHub Actions' matrix)
    if not isinstance(data, list) or not data or not all(isinstance(d, dict) for d in data):
        raise InvalidRequestError(f"--for {path} is not a list of host descriptions",
                                  hint='e.g. [{"backend": "cu126", "python": "3.11", "os": "linux"}]')
    return data
