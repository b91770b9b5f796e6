"""Does this torch build ship kernels for this GPU? A pure verdict from the compiled arch list.

CUDA rules (NVIDIA's compatibility guide): a cubin built for ``sm_XY`` runs on any device of the same
major ``X`` with minor ``>= Y``; arch-specific cubins (``sm_90a``) run only on exactly that arch; PTX
(``compute_XY``) is JIT-compiled by the driver for any device ``>= XY``. ROCm code objects are per
target: ``gfx90a`` kernels run only on gfx90a (feature suffixes such as ``:xnack-`` do not change the
target).
"""

import re


def _cuda_pair(token, prefix):
    match = re.match(r"^" + prefix + r"_(\d+)(\d)([a-z]?)$", token)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), match.group(3)


def cuda_kernels_for(arch_list, capability):
    """Verdict for a CUDA device of ``capability`` (major, minor) against ``torch.cuda.get_arch_list()``.

    Returns ``(verdict, how)``: verdict True/False/None (None = cannot tell), ``how`` in
    ``'sass-exact' | 'sass-compatible' | 'ptx-jit' | 'none' | 'unknown'``.
    """
    if not arch_list or capability is None:
        return None, "unknown"
    major, minor = capability
    best = None
    for token in arch_list:
        sass = _cuda_pair(token, "sm")
        if sass is not None:
            s_major, s_minor, suffix = sass
            if (s_major, s_minor) == (major, minor):
                return True, "sass-exact"
            if not suffix and s_major == major and s_minor < minor:
                best = best or "sass-compatible"
    if best:
        return True, best
    for token in arch_list:
        ptx = _cuda_pair(token, "compute")
        if ptx is not None and not ptx[2] and (ptx[0], ptx[1]) <= (major, minor):
            return True, "ptx-jit"
    return False, "none"


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
