"""`accelenv install --locks DIR`: pick this host's lock from a directory `accelenv lock --for` wrote, say why,
and install it with uv (or pip) into the target interpreter. accelenv installs nothing itself.

The host is detected (probes/host/facts.py) or described with resolve's flags; its Python is the target
interpreter's (``--python-exe``, default this one). For each (torch, --with) the directory's host classes
were locked with, accelenv resolves this host and takes the lock whose answer is the same
(compat_service/domain/lock/hosts.py ``pick_lock``); no such lock is ``no-lock-for-host`` (exit 3).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("install", help="Install this host's lock from an `accelenv lock --for` directory with uv or "
                "pip, saying why that lock.")(install_command)


def install_command(
    locks: Path = typer.Option(..., "--locks", help="the directory `accelenv lock --for FILE --out DIR` wrote"),
    python_exe: Path | None = typer.Option(None, "--python-exe", help="the interpreter to install into "
                                           "(default: this one)"),
    backend: str | None = typer.Option(None, "--backend", help="describe the host instead of detecting it"),
    driver: str | None = typer.Option(None, "--driver", help="the host's NVIDIA driver"),
    gpu_arch: str | None = typer.Option(None, "--gpu-arch", help="the host's GPU architecture"),
    gpu: str | None = typer.Option(None, "--gpu", help="the host's GPU by name"),
    runtime: str | None = typer.Option(None, "--runtime", help="the host's vendor runtime"),
    os_name: str | None = typer.Option(None, "--os", help="the host's OS (default: this one)"),
    arch: str | None = typer.Option(None, "--arch", help="the host's machine (default: this one)"),
    installer: str = typer.Option("uv", "--installer", help="uv or pip"),
    dry_run: bool = typer.Option(False, "--dry-run", help="say which lock and why; install nothing"),
    as_json: bool = typer.Option(False, "--json", help="print the choice as JSON"),
) -> None:
    from cli.error_render import dump_json, guarded

    with guarded(as_json=as_json):
        from compat_service.domain.errors import InvalidRequestError
        from compat_service.domain.lock.hosts import INDEX_FILE

        index_path = locks / INDEX_FILE
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidRequestError(f"{index_path}: {exc}",
                                      hint="write the directory with `accelenv lock --for FILE --out DIR`") from exc
        exe = python_exe or Path(sys.executable)
        host = _host(exe, backend=backend, driver=driver, gpu_arch=gpu_arch, gpu=gpu, runtime=runtime,
                     os=os_name, arch=arch)
        entry, why = _pick(index, host)
        lock = locks / entry["lock"]
        command = _command(installer, exe, lock)
        if not dry_run:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise InvalidRequestError(
                    f"{installer} could not install {lock.name} (exit {done.returncode})",
                    hint=(done.stderr or done.stdout).strip().splitlines()[-1] if (done.stderr or done.stdout)
                    else "run the command by hand to see why",
                )
    if as_json:
        dump_json({"lock": str(lock), "why": why, "answer": entry["answer"], "command": command,
                   "installed": not dry_run})
        return
    typer.echo(f"{lock}: {why}")
    typer.echo(("would run: " if dry_run else "ran: ") + " ".join(command))


def _host(exe: Path, **flags: str | None) -> dict[str, Any]:
    """The host's description: the flags given, else detection; the Python of the target interpreter."""
    from probes.host import facts as host_facts

    values: dict[str, Any] = {k: v for k, v in flags.items() if v is not None}
    if "backend" not in values:
        found = host_facts.detect_host()
        values["backend"] = found["backend"]
        for key, fact in (("driver", "driver_version"), ("gpu_arch", "device_arch"), ("runtime", "runtime_version")):
            if key not in values and found.get(fact):
                values[key] = found[fact]
    values["python"] = subprocess.run(
        [str(exe), "-c", "import sys, sysconfig; print('%d.%d%s' % (sys.version_info[:2] + "
         "('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else '',)))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    values.setdefault("os", host_facts.os_name())
    values.setdefault("arch", host_facts.arch_name())
    return values


def _pick(index: dict[str, Any], host: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Resolve the host with each (torch, --with) the directory was locked with; the first lock that matches."""
    from compat_service.domain.errors import NoLockForHostError
    from compat_service.domain.lock.hosts import pick_lock, request_for, resolve_request

    specs = {(h.get("torch"), h.get("with")) for e in index.get("locks", []) for h in e.get("host_classes", [])}
    last: NoLockForHostError | None = None
    for torch, with_ in sorted(specs, key=str) or [(None, None)]:
        description = {**host, **({"torch": torch} if torch else {}), **({"with": with_} if with_ else {})}
        try:
            return pick_lock(index, resolve_request(request_for(description)))
        except NoLockForHostError as exc:
            last = exc
    assert last is not None
    raise last


def _command(installer: str, exe: Path, lock: Path) -> list[str]:
    if installer == "uv":
        from compat_service.index.resolution_oracle import find_uv

        return [find_uv(), "pip", "install", "--python", str(exe), "--preview-features", "pylock", "-r", str(lock)]
    if installer == "pip":
        return [str(exe), "-m", "pip", "install", "-r", str(lock)]
    from compat_service.domain.errors import InvalidRequestError

    raise InvalidRequestError(f"--installer {installer!r} is not uv or pip", hint="use --installer uv or pip")
