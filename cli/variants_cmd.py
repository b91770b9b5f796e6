"""`accelenv variants explain`: which variant of a PEP 825 variants JSON a PEP 817 installer would install
on a host, which accelenv would, and why they differ (compat_service/domain/variants/selection.py).

The variants JSON is a file (``--variants-json``: an index's ``{name}-{version}-variants.json``) or the
matrix's own export for ``--torch`` (`accelenv matrix show --variants`). The host is described (``--gpu-arch
sm_120,sm_61``, ``--gpu``, ``--driver``, ``--rocm``) or, with none of those, detected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    group = typer.Typer(help="Wheel variants (PEP 825/817): explain which variant an installer and accelenv "
                        "pick.", no_args_is_help=True)
    group.command("explain", help="Which variant a PEP 817 installer and accelenv pick for a host, and why they "
                  "differ.")(explain_command)
    app.add_typer(group, name="variants")


def explain_command(
    variants_json: Path | None = typer.Option(None, "--variants-json", help="a {name}-{version}-variants.json; "
                                              "default: the matrix's export for --torch"),
    torch: str = typer.Option("latest", "--torch", help="the torch release whose variants to export"),
    platform: str = typer.Option("linux-x86_64", "--platform", help="the platform of the export"),
    gpu_arch: str | None = typer.Option(None, "--gpu-arch", help="every GPU, comma-separated: sm_120,sm_61"),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU product names, comma-separated"),
    driver: str | None = typer.Option(None, "--driver", help="the NVIDIA driver version"),
    cuda_driver_version: str | None = typer.Option(None, "--cuda-driver-version",
                                                   help="the CUDA version the driver reports (default: from "
                                                   "--driver)"),
    rocm: str | None = typer.Option(None, "--rocm", help="the host's ROCm version"),
    os_name: str = typer.Option("linux", "--os", help="linux or windows"),
    known_bad: list[str] = typer.Option([], "--known-bad", help="LABEL=REASON: a build not to install "
                                        "(repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    from cli.error_render import dump_json, guarded

    with guarded(as_json=as_json):
        explained = explain(variants_json=variants_json, torch=torch, platform=platform, gpu_arch=gpu_arch, gpu=gpu,
                            driver=driver, cuda_driver_version=cuda_driver_version, rocm=rocm, os_name=os_name,
                            known_bad=known_bad)
        if as_json:
            dump_json(explained.to_json())
        else:
            from compat_service.domain.variants.selection import explanation_lines

            typer.echo("\n".join(explanation_lines(explained)))


def explain(*, variants_json: Path | None, torch: str, platform: str, gpu_arch: str | None, gpu: str | None,
            driver: str | None, cuda_driver_version: str | None, rocm: str | None, os_name: str,
            known_bad: list[str], matrix_path: Path | None = None) -> Any:
    """The explanation for the arguments (shared by `variants explain` and `resolve --explain-variants`)."""
    from compat_service.domain.errors import InvalidRequestError
    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
    from compat_service.domain.variants.export import release_variants
    from compat_service.domain.variants.selection import explain_selection, variant_host

    matrix = load_matrix_cached(matrix_path)
    if variants_json is not None:
        try:
            document = json.loads(Path(variants_json).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidRequestError(f"--variants-json {variants_json}: {exc}",
                                      hint="give a PEP 825 {name}-{version}-variants.json file") from exc
    else:
        document = release_variants(matrix, torch, platform)["document"]
    bad = _known_bad(known_bad)
    if not (gpu_arch or gpu or driver or rocm or cuda_driver_version):
        from probes.host.facts import detect_host

        found = detect_host()
        gpu_arch, driver, rocm = found.get("device_arch"), found.get("driver_version"), found.get("runtime_version")
    host = variant_host(matrix, os=os_name, driver=driver, cuda_driver_version=cuda_driver_version,
                        gpu_archs=gpu_arch, gpu_names=gpu, rocm_version=rocm)
    return explain_selection(matrix, host, document, bad)


def _known_bad(items: list[str]) -> dict[str, str]:
    """``--known-bad LABEL=REASON`` (repeatable) as label -> reason."""
    from compat_service.domain.errors import InvalidRequestError

    bad: dict[str, str] = {}
    for item in items:
        label, sep, reason = item.partition("=")
        if not sep or not label:
            raise InvalidRequestError(f"--known-bad {item!r} is not LABEL=REASON", hint="e.g. cu126='probe: broken'")
        bad[label] = reason
    return bad


def explain_for_resolution(text: str, fmt: str, resolution: Any, request: Any, variants_json: str,
                           matrix_path: str | None) -> str:
    """`resolve --explain-variants`: the explanation for the request's target, after the answer (JSON: under
    ``variants``)."""
    explained = explain(
        variants_json=Path(variants_json) if variants_json else None, torch=resolution.torch_version,
        platform=resolution.platform, gpu_arch=request.gpu_arch, gpu=request.gpu, driver=request.driver,
        cuda_driver_version=None, rocm=request.runtime if resolution.family == "rocm" else None,
        os_name=resolution.os, known_bad=[], matrix_path=Path(matrix_path) if matrix_path else None,
    )
    if fmt == "json":
        body = json.loads(text)
        body["variants"] = explained.to_json()
        return json.dumps(body, indent=2) + "\n"
    from compat_service.domain.variants.selection import explanation_lines

    return text.rstrip("\n") + "\n\nwheel variants:\n" + "\n".join("  " + line for line in explanation_lines(
        explained)) + "\n"
