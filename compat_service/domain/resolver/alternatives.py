"""The nearest requests that would work, offered with an unsatisfiable one.

Each alternative is the failed request with one or two flags changed, resolved for real (never guessed):
the newest torch for that Python, the Python the asked torch supports, the CPU build, the driver to
install, a build label the release publishes, the request without companions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from compat_service.domain.resolver.stages import try_resolve
from compat_service.domain.resolver.request import BackendSpec, TorchSpec

if TYPE_CHECKING:
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.resolver.conflict import Conflict
    from compat_service.domain.resolver.request import ResolveRequest

_LATEST = TorchSpec("latest", "latest")
_CPU = BackendSpec("cpu", "label", "cpu")


def nearby_requests(
    conflict: Conflict, request: ResolveRequest, matrix: Matrix
) -> list[tuple[str, dict[str, Any]]]:
    tries: list[tuple[str, ResolveRequest, dict[str, Any]]] = []
    code = conflict.code
    latest = replace(request, torch=_LATEST)
    if request.torch.kind != "latest":
        tries.append(("newest torch that fits the rest of the request", latest, {}))
    if code == "python-unsupported":
        tries.append(("a Python the asked torch supports", replace(request, python=None), {}))
    if code == "driver-too-old":
        needed = conflict.facts["driver_needed"]
        tries.append(
            (f"install NVIDIA driver >= {needed}", replace(request, driver=needed), {"driver": needed})
        )
    if (
        code == "variant-not-published"
        and request.backend.kind == "label"
        and request.backend.family not in (None, "cpu")
    ):
        family = BackendSpec(request.backend.family or "", "family", request.backend.family)
        tries.append(
            (
                f"the best {request.backend.family} build of the asked torch",
                replace(request, backend=family),
                {},
            )
        )
    if code == "gpu-arch-unsupported" and request.torch.kind == "latest":
        # Older releases may still ship an architecture newer ones dropped (sm_50, sm_61, sm_70).
        for minor in matrix.torch_minors():
            older = replace(request, torch=TorchSpec(minor.minor, "minor"))
            if try_resolve(older, matrix) is not None:
                tries.append(("the newest torch whose builds still ship this GPU architecture", older, {}))
                break
    if code == "companion-unknown":
        known = tuple(n for n in request.with_ if n not in conflict.facts.get("missing", ()))
        tries.append(
            (
                "without the companions the matrix cannot pin",
                replace(request, with_=known),
                {"with": ",".join(known) or "none"},
            )
        )
    if request.backend.family != "cpu":
        tries.append(
            ("the CPU build", replace(request, backend=_CPU, driver=None, gpu_arch=None), {"backend": "cpu"})
        )

    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for description, candidate, fixed in tries:
        res = try_resolve(candidate, matrix)
        if res is None:
            continue
        flags = {"torch": res.torch_version, "python": res.python, **fixed}
        if candidate.backend != request.backend:
            flags.setdefault("backend", res.backend)
        elif request.backend.kind == "family":
            flags["backend"] = res.backend
        key = tuple(sorted((k, str(v)) for k, v in flags.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(
            (f"{description}: torch {res.torch_version} ({res.backend}) on Python {res.python}", flags)
        )
    return out
