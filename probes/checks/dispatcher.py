"""Coverage counted against the dispatcher: which of torch's backend-relevant aten overloads a run reached.

Backend-relevant: an aten overload with a kernel registered for the ``CPU`` dispatch key. Those are the ops a
backend must implement itself (a composite op runs others, so a backend gets it for free); the refdev
reference backend registers exactly these (``probes.refdev.kernels``). Exercised: the overloads the probe's
traced checks called with a tensor on the device (the worker's dispatch mode records them; the untraced
groups, compile and perf, and the backward pass on a device other than CPU are not counted, so the figure is
a lower bound). Missing and fell back: the aten ops the checks reported unsupported for the backend, and the
ops a CPU fallback warning named.

On a PrivateUse1 backend the dispatcher also says, without running anything, which backend-relevant overloads
have no kernel of the backend's own (``own_kernels``) and whether the backend registered a boxed fallback for
its key (``backend_fallback_registered``: the CPU fallback of the PrivateUse1 guide is one). An overload with no
kernel of its own goes to that fallback when there is one, and is missing when there is none; the ones the run
exercised on the device while a fallback is registered are listed under ``via_backend_fallback`` and counted as
fallen back, whether or not the fallback warned.
"""

from typing import Set

#: what the report's ``coverage.definition`` says
DEFINITION = ("aten overloads with a CPU kernel (the ops a backend implements itself; composite ops excluded); "
              "exercised = called with a device tensor by a traced check")
MAX_LISTED = 200


def backend_relevant(torch):
    """The qualified names ('aten::add.Tensor', 'aten::mm') of every backend-relevant overload, sorted."""
    names = []
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"):
            names.append(name)
    return sorted(names)


def own_kernels(torch, relevant, key="PrivateUse1"):
    """(names in ``relevant`` with no kernel registered for ``key``, whether ``key`` has a backend fallback)."""
    lacking = [name for name in relevant if not torch._C._dispatch_has_kernel_for_dispatch_key(name, key)]
    dispatch_key = getattr(torch._C.DispatchKey, key, None)
    fallback = bool(dispatch_key is not None and torch._C._dispatch_has_backend_fallback(dispatch_key))
    return lacking, fallback


def qualified(name):
    """'aten::mm.default' (as a dispatch mode names it) -> 'aten::mm' (as the dispatcher lists it)."""
    return name[:-len(".default")] if name.endswith(".default") else name


def _missing_and_fell_back(entries):
    """(aten ops the checks found missing on the device, aten ops they saw fall back to the CPU)."""
    missing: Set[str] = set()
    fell_back: Set[str] = set()
    for entry in entries:
        data = entry.get("data") or {}
        if entry.get("status") == "unsupported" and data.get("aten_op") and data.get("kind") != "dtype":
            missing.add(qualified(str(data["aten_op"])))
        missing.update(qualified(str(op)) for op in data.get("missing_aten_ops") or ())
        fell_back.update(qualified(str(op)) for op in _fallback_ops(data))
    return missing, fell_back


def _fallback_ops(data):
    return data.get("cpu_fallback_ops") or ([data["fallback_op"]] if data.get("fallback_op") else [])


def summarise(relevant, exercised, entries, lacking=None, fallback=None):
    """The report's ``coverage`` block from the relevant names, the exercised names and the checks' entries;
    ``lacking`` and ``fallback`` (``own_kernels``) where the device is a PrivateUse1 backend."""
    relevant_set = set(relevant)
    reached = sorted(set(qualified(n) for n in exercised) & relevant_set)
    missing, fell_back = _missing_and_fell_back(entries)
    total = len(relevant_set)
    block = {}
    if lacking is not None:
        via = sorted(set(reached) & set(lacking)) if fallback else []
        fell_back.update(via)
        block = {"own_kernels": total - len(relevant_set & set(lacking)), "backend_fallback_registered": bool(fallback),
                 "via_backend_fallback": via[:MAX_LISTED]}
    return dict(block, **{
        "definition": DEFINITION,
        "backend_relevant": total,
        "exercised": len(reached),
        "fraction": round(len(reached) / total, 4) if total else None,
        "missing": sorted(missing)[:MAX_LISTED],
        "fell_back": sorted(fell_back)[:MAX_LISTED],
    })
