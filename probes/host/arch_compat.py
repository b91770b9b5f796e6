"""Does this torch build ship kernels for this GPU? The one home of the CUDA cubin/PTX rule.

CUDA rules (NVIDIA's compatibility guide): a cubin built for ``sm_XY`` runs on any device of the same
major ``X`` with minor ``>= Y``; arch-specific cubins (``sm_90a``) run only on exactly that arch; PTX
(``compute_XY``, or ``sm_XY`` where the matrix names the PTX target) is JIT-compiled by the driver for any
device ``>= XY``, arch-specific PTX only on that arch, family-specific (``f``) only within its major.
ROCm code objects are per target: ``gfx90a`` kernels run only on gfx90a (feature suffixes such as
``:xnack-`` do not change the target).

Pure and stdlib-only: the probe judges ``torch.cuda.get_arch_list()`` with it on the target host, and the
resolver and ``accelenv doctor`` (``compat_service.domain.hardware_rules``) judge the matrix's arch lists
with the same functions, so the two can never disagree.
"""

import re

_ARCH = re.compile(r"^(?:sm|compute)_(\d+)(\d)([a-z]?)$")


def _parts(name):
    """'sm_86' -> (8, 6, ''), 'sm_90a' / 'compute_90a' -> (9, 0, 'a'); None for a non-CUDA name."""
    match = _ARCH.match(name or "")
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), match.group(3)


def cubin_runs_on(built, gpu):
    """Does a cubin for ``built`` run on a GPU of arch ``gpu``? Non-CUDA names (gfx targets) match exactly."""
    b, g = _parts(built), _parts(gpu)
    if b is None or g is None:
        return built == gpu
    if b[2] == "a":
        return (b[0], b[1]) == (g[0], g[1])
    return b[0] == g[0] and b[1] <= g[1]


def ptx_runs_on(ptx, gpu):
    """Can the driver JIT PTX built for ``ptx`` on a GPU of arch ``gpu``?"""
    p, g = _parts(ptx), _parts(gpu)
    if p is None or g is None:
        return False
    if p[2] == "a":
        return (p[0], p[1]) == (g[0], g[1])
    if p[2]:  # family-specific PTX ("f"): that major only
        return p[0] == g[0] and p[1] <= g[1]
    return (g[0], g[1]) >= (p[0], p[1])


def cuda_kernels_for(arch_list, capability):
    """Verdict for a CUDA device of ``capability`` (major, minor) against ``torch.cuda.get_arch_list()``.

    Returns ``(verdict, how)``: verdict True/False/None (None = cannot tell), ``how`` in
    ``'sass-exact' | 'sass-compatible' | 'ptx-jit' | 'none' | 'unknown'``.
    """
    if not arch_list or capability is None:
        return None, "unknown"
    how = _cuda_kernel_kind(arch_list, capability)
    return how != "none", how


def _has_exact_sass(cubins, capability):
    return any((_parts(token) or (None, None))[:2] == tuple(capability) for token in cubins)


def _cuda_kernel_kind(arch_list, capability):
    """How the list carries kernels for ``capability``: its own SASS, compatible SASS, PTX to JIT, or none."""
    gpu = cuda_arch_name(capability)
    cubins = [token for token in arch_list if token.startswith("sm_")]
    if _has_exact_sass(cubins, capability):
        return "sass-exact"
    if any(cubin_runs_on(token, gpu) for token in cubins):
        return "sass-compatible"
    if any(ptx_runs_on(token, gpu) for token in arch_list if token.startswith("compute_")):
        return "ptx-jit"
    return "none"


def rocm_kernels_for(arch_list, gcn_arch_name):
    """Verdict for a ROCm device (``gcnArchName`` such as ``gfx90a:sramecc+:xnack-``)."""
    if not arch_list or not gcn_arch_name:
        return None, "unknown"
    target = gcn_arch_name.split(":")[0]
    compiled = set(token.split(":")[0] for token in arch_list)
    if target in compiled:
        return True, "code-object-exact"
    return False, "none"


def cuda_arch_name(capability):
    """(9, 0) -> 'sm_90'."""
    if capability is None:
        return None
    return "sm_%d%d" % (capability[0], capability[1])
