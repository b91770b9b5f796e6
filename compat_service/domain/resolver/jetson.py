"""Jetson targets: NVIDIA's JetPack wheels, never PyTorch's aarch64 CUDA (SBSA) wheels.

A Jetson module's GPU (Nano sm_53, TX2 sm_62, Xavier sm_72, Orin sm_87) runs on L4T, whose CUDA comes with
JetPack; PyTorch's own linux-aarch64 CUDA wheels are SBSA builds for Grace/GH200-class servers and do not
drive it. A request whose GPU architecture is one of ``jetson.yaml``'s releases' on Linux is answered here,
from NVIDIA's wheel table only: `jetson_answer` is called once, by `stages.resolve`, before the stages.

The JetPack release comes from ``--runtime`` (the host's JetPack, ``6.2`` or ``jetpack 6.2``), else from
``--driver`` (the version nvidia-smi prints there, 540.4.0 on JetPack 6.2.1), else any release that runs the
GPU. ``--runtime`` with any other CUDA target is refused here too (the CUDA runtime comes in the wheel).

Jetson modules listed in ``jetson.yaml``'s ``sbsa_modules`` (Thor, JetPack 7) run PyTorch's SBSA builds: the
stages answer them, on linux-aarch64 (`on_sbsa_jetson` sets an --arch left at its default, refuses x86_64).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compat_service.domain.matrix.memo import MatrixMemo
from compat_service.domain.resolver.request import invalid_request
from compat_service.domain.resolver.resolution import HostRequirement, Pin, Reason, Resolution
from compat_service.domain.versions import cached_version

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compat_service.domain.errors import Alternative
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import JetpackRelease, JetsonWheel, SbsaJetson
    from compat_service.domain.resolver.request import ResolveRequest

#: the answer's build label: NVIDIA's JetPack wheel (not one of PyTorch's indexes)
LABEL = "jetpack"
#: why PyTorch's aarch64 CUDA wheels are not the answer, with what shows it
_SBSA = (
    "PyTorch's linux-aarch64 CUDA wheels are SBSA builds for Grace/GH200-class servers and do not drive a "
    "Jetson GPU on L4T; NVIDIA's JetPack wheels do"
)
_SBSA_SOURCES = ("nv_forum_pytorch_for_jetson", "jetson_containers_391")


#: () -> every GPU architecture a JetPack release of the matrix runs on (`jetson_archs`)
_JETSON_ARCHS: MatrixMemo[tuple[()], frozenset[str]] = MatrixMemo("jetson_archs")


def jetson_archs(matrix: Matrix) -> frozenset[str]:
    """Every GPU architecture a JetPack release of the matrix runs on (kept per matrix: every CUDA request with a
    --gpu-arch asks, the alternatives search once per request it tries)."""
    memo = _JETSON_ARCHS.table(matrix)
    found = memo.get(())
    if found is None:
        found = memo[()] = frozenset(arch for row in matrix.jetpack_releases() for arch in row.archs)
    return found


def is_jetson_target(request: ResolveRequest, matrix: Matrix) -> bool:
    return (
        request.os == "linux"
        and request.gpu_arch is not None
        and request.backend.family == "cuda"
        and request.gpu_arch in jetson_archs(matrix)
    )


def _sbsa_jetson(request: ResolveRequest, matrix: Matrix) -> SbsaJetson | None:
    if request.os != "linux" or request.gpu_arch is None or request.backend.family != "cuda":
        return None
    return next((m for m in matrix.sbsa_jetsons() if m.arch == request.gpu_arch), None)


def on_sbsa_jetson(request: ResolveRequest, matrix: Matrix) -> tuple[ResolveRequest, Reason | None]:
    """A Jetson module that runs the SBSA builds (Thor): the request on linux-aarch64 (an --arch left at its
    default becomes aarch64, x86_64 is refused) and the reason the answer gives; else the request as it is."""
    module = _sbsa_jetson(request, matrix)
    if module is None:
        return request, None
    if request.arch != "aarch64":
        if not request.arch_defaulted:
            raise invalid_request(
                f"{request.gpu_arch} is a {module.module} GPU, which sits on an aarch64 module, "
                f"but --arch says {request.arch}",
                "give --arch aarch64 (a Jetson), or the GPU of this host",
                "--arch",
                request.arch,
            )
        request = request.changed(arch="aarch64")
    reason = Reason(
        "jetson",
        f"{request.gpu_arch} on linux-aarch64 is a {module.module} module: its JetPack runs PyTorch's SBSA "
        "linux-aarch64 CUDA builds (a build that ships its kernels), not a JetPack wheel",
        tuple(module.source),
    )
    return request, reason


def jetson_answer(request: ResolveRequest, matrix: Matrix) -> Resolution | None:
    """The answer for a Jetson target (None: the request is no Jetson target, the stages answer it). Raises
    InvalidRequestError or an UnsatisfiableError with alternatives that resolve."""
    if not is_jetson_target(request, matrix):
        if request.runtime is not None and request.backend.family == "cuda":
            raise invalid_request(
                f"--runtime {request.runtime} names a JetPack release, and the target is no Jetson GPU "
                f"({request.gpu_arch or 'no --gpu-arch'} on {request.platform}); elsewhere the CUDA runtime "
                "comes inside the wheel and the host's part is the NVIDIA driver (--driver)",
                "drop --runtime, or give a Jetson GPU (--gpu 'Jetson AGX Orin', --gpu-arch sm_87) on --arch aarch64",
                "--runtime",
                request.runtime,
            )
        return None
    return _answer(_on_aarch64(request), matrix)


def _on_aarch64(request: ResolveRequest) -> ResolveRequest:
    if request.arch == "aarch64":
        return request
    if request.arch_defaulted:
        return request.changed(arch="aarch64")
    raise invalid_request(
        f"{request.gpu_arch} is a Jetson GPU, which sits on an aarch64 (L4T) module, but --arch says {request.arch}",
        "give --arch aarch64 (a Jetson), or the GPU of this host",
        "--arch",
        request.arch,
    )


def _answer(r: ResolveRequest, matrix: Matrix) -> Resolution:
    if r.backend.kind == "label":
        from compat_service.domain.errors import Alternative, BackendUnavailableError, Cause  # off the fast path

        raise BackendUnavailableError(
            f"--backend {r.backend.text} on a Jetson ({r.gpu_arch}): {_SBSA}",
            hint="ask for --backend cuda: the answer is NVIDIA's wheel for the host's JetPack",
            causes=[Cause(constraint=f"gpu_arch {r.gpu_arch} on linux-aarch64", origin="matrix: jetson.yaml")],
            alternatives=[Alternative(description="NVIDIA's JetPack wheel", request={"backend": "cuda"})],
        )
    if r.stack:
        raise invalid_request(
            f"--with {r.stack[0].text} on a Jetson: the matrix has no JetPack builds of ecosystem packages",
            "resolve torch alone for a Jetson (drop --with)",
            "--with",
            r.stack[0].text,
        )
    releases = [row for row in matrix.jetpack_releases() if r.gpu_arch in row.archs]
    chosen, why, unknowns = _jetpack(r, releases)
    versions = {row.jetpack for row in chosen}
    pool = [w for w in matrix.jetson_wheels() if versions.intersection(w.jetpack)]
    wheel, python = _pick(r, pool, chosen, releases, matrix)
    return _resolution(r, wheel, python, chosen, why, unknowns, matrix)


def _jetpack(r: ResolveRequest, releases: Sequence[JetpackRelease]) -> tuple[list[JetpackRelease], str, list[str]]:
    """The JetPack releases the host may run, why, and what that rests on that the matrix does not know."""
    names = ", ".join(row.jetpack for row in releases)
    if r.runtime is not None:
        from compat_service.domain.errors import Cause, RuntimeMismatchError

        asked = cached_version(r.runtime)
        exact = [row for row in releases if cached_version(row.jetpack) == asked]
        same_line = [
            row for row in releases if cached_version(row.jetpack).release[: len(asked.release)] == asked.release
        ]
        chosen = exact or same_line
        if not chosen:
            raise RuntimeMismatchError(
                f"JetPack {r.runtime} does not run {r.gpu_arch} in the matrix: the JetPack releases for "
                f"{r.gpu_arch} are {names}",
                hint="give the JetPack release the module runs (cat /etc/nv_tegra_release shows its L4T)",
                causes=[
                    Cause(constraint=f"JetPack {r.runtime}", origin="request: --runtime"),
                    Cause(constraint=f"{r.gpu_arch}: JetPack {names}", origin="matrix: jetson.yaml releases"),
                ],
                alternatives=_jetpack_alternatives(r, releases),
            )
        return chosen, f"JetPack {', '.join(row.jetpack for row in chosen)} (--runtime {r.runtime})", []
    if r.driver is not None:
        exact = [row for row in releases if row.driver == r.driver]
        if exact:
            return exact, f"JetPack {exact[0].jetpack} (nvidia-smi prints driver {r.driver} there)", []
        major = r.driver.split(".")[0]
        lines = {cached_version(row.jetpack).major for row in releases if (row.driver or "").split(".")[0] == major}
        same = [row for row in releases if cached_version(row.jetpack).major in lines]
        if same:
            picked = ", ".join(row.jetpack for row in same)
            return (
                same,
                f"JetPack {picked} (driver {major}.x is JetPack {'/'.join(map(str, sorted(lines)))}'s)",
                [f"which JetPack {'/'.join(map(str, sorted(lines)))} release prints driver {r.driver}"],
            )
        return (
            list(releases),
            f"any JetPack that runs {r.gpu_arch} ({names})",
            [f"the JetPack release of driver {r.driver} (give it with --runtime)"],
        )
    return list(releases), f"any JetPack that runs {r.gpu_arch} ({names}; give the host's with --runtime)", []


def _alternative(r: ResolveRequest, description: str, change: dict[str, str]) -> Alternative:
    """A nearby request; with the family named when --gpu gave it (the request as given says cpu then)."""
    from compat_service.domain.errors import Alternative

    if r.backend_defaulted:
        change = {**change, "backend": "cuda"}
    return Alternative(description=description, request=change)


def _jetpack_alternatives(r: ResolveRequest, releases: Sequence[JetpackRelease]) -> list[Alternative]:
    return [_alternative(r, f"JetPack {row.jetpack}", {"runtime": row.jetpack}) for row in reversed(releases)][:3]


def _fits_torch(r: ResolveRequest, w: JetsonWheel) -> bool:
    return r.torch.matches(w.torch, ".".join(w.torch.split(".")[:2]))


def _pick(
    r: ResolveRequest,
    pool: Sequence[JetsonWheel],
    chosen: Sequence[JetpackRelease],
    releases: Sequence[JetpackRelease],
    matrix: Matrix,
) -> tuple[JetsonWheel, str]:
    """The newest installable wheel of the pool for the request's torch and Python; else the precise error."""
    where = f"JetPack {', '.join(row.jetpack for row in chosen)} ({r.gpu_arch})"
    installable = [w for w in pool if w.url is not None]
    torch_fit = [w for w in pool if _fits_torch(r, w)]
    for w in torch_fit:
        if w.url is not None and (r.python is None or r.python in w.python):
            return w, r.python or w.python[-1]
    from compat_service.domain.errors import Cause, PythonUnsupportedError, RuntimeMismatchError, TorchNotFoundError

    offered = ", ".join(f"{w.torch} (Python {'/'.join(w.python)})" for w in installable) or "none with a known URL"
    if not installable:
        raise RuntimeMismatchError(
            f"the matrix has no installable NVIDIA wheel for {where}",
            hint="NVIDIA's wheels are listed per JetPack release; give another JetPack with --runtime",
            causes=[Cause(constraint=where, origin="matrix: jetson.yaml wheels")],
            alternatives=[a for a in _jetpack_alternatives(r, releases) if _has_wheel(matrix, a.request["runtime"])],
        )
    alternatives = [_wheel_alternative(r, w) for w in installable[:3]]
    if not torch_fit:
        raise TorchNotFoundError(
            f"NVIDIA publishes no JetPack wheel of torch {r.torch.text} for {where}: its wheels there are {offered}",
            hint=f"ask for one of those releases (--torch {installable[0].torch}); {_SBSA}",
            causes=[
                Cause(constraint=f"torch {r.torch.text}", origin="request: --torch"),
                Cause(constraint=f"{where}: torch {offered}", origin="matrix: jetson.yaml wheels"),
            ],
            alternatives=alternatives,
        )
    with_url = [w for w in torch_fit if w.url is not None]
    if not with_url:
        known = torch_fit[0]
        raise TorchNotFoundError(
            f"NVIDIA lists torch {known.torch} for JetPack {', '.join(known.jetpack)}, but no source gives its wheel's "
            f"URL (unknown); the installable ones for {where} are {offered}",
            hint="pick an installable release, or download the wheel NVIDIA's forum thread links",
            causes=[Cause(constraint=f"torch {known.torch}: wheel URL unknown", origin="matrix: jetson.yaml wheels")],
            alternatives=alternatives,
        )
    pythons = sorted({p for w in with_url for p in w.python})
    raise PythonUnsupportedError(
        f"NVIDIA's JetPack wheels of torch {r.torch.text} for {where} are for Python {', '.join(pythons)}; "
        f"you asked for {r.python}",
        hint=f"use the JetPack's Python (--python {pythons[-1]})",
        causes=[
            Cause(constraint=f"python {r.python}", origin="request: --python"),
            Cause(constraint=f"Python {', '.join(pythons)}", origin="matrix: jetson.yaml wheels"),
        ],
        alternatives=[_alternative(r, f"Python {pythons[-1]}", {"python": pythons[-1]})],
    )


def _has_wheel(matrix: Matrix, jetpack: str | None) -> bool:
    return any(jetpack in w.jetpack and w.url is not None for w in matrix.jetson_wheels())


def _wheel_alternative(r: ResolveRequest, w: JetsonWheel) -> Alternative:
    change: dict[str, str] = {"torch": w.torch}
    if r.python is not None and r.python not in w.python:
        change["python"] = w.python[-1]
    return _alternative(r, f"torch {w.torch}, NVIDIA's wheel for JetPack {', '.join(w.jetpack)}", change)


def _resolution(
    r: ResolveRequest,
    w: JetsonWheel,
    python: str,
    chosen: Sequence[JetpackRelease],
    why: str,
    unknowns: list[str],
    matrix: Matrix,
) -> Resolution:
    on = [row for row in chosen if row.jetpack in w.jetpack]
    l4t = ", ".join(f"JetPack {row.jetpack} = L4T {row.l4t or '(unknown)'}" for row in on)
    cuda = sorted({row.cuda for row in on if row.cuda})
    reasons = [
        Reason(
            "jetson",
            f"{r.gpu_arch} on linux-aarch64 is a Jetson module: {_SBSA}",
            (*_SBSA_SOURCES, *(s for row in on for s in row.source)),
        ),
        Reason("jetpack", why, tuple(s for row in chosen for s in row.source)),
        Reason(
            "torch",
            f"torch {w.torch}: the newest of NVIDIA's JetPack wheels there for Python {python}, "
            f"{w.wheel_version or w.torch} for JetPack {', '.join(w.jetpack)}",
            tuple(w.source),
        ),
    ]
    warnings = []
    companions = [name for name in r.with_ if name != "torch"]
    if companions:
        warnings.append(
            f"{', '.join(companions)}: NVIDIA's JetPack table lists torch only and the matrix has no JetPack "
            "wheel for them; build them from source against this torch (a default-index wheel would replace it)"
        )
    detail = f"NVIDIA's wheel is built for JetPack {', '.join(w.jetpack)}; {l4t}" + (
        f", CUDA {', '.join(cuda)} from JetPack" if cuda else ""
    )
    requirements = (HostRequirement(f"JetPack {' or '.join(row.jetpack for row in on)}", None, detail),)
    return Resolution(
        torch_version=w.torch,
        backend=LABEL,
        family="cuda",
        python=python,
        os="linux",
        arch="aarch64",
        packages=(Pin("torch", w.wheel_version or w.torch, None, w.url),),
        index_url=None,
        index_option="--index-url",
        default_index_has_variant=False,
        requirements=requirements,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
        unknowns=tuple(unknowns),
    )


__all__ = ["LABEL", "is_jetson_target", "jetson_answer", "jetson_archs", "on_sbsa_jetson"]
