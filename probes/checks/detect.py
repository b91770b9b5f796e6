"""detect: what this torch build is, which accelerators it sees, and whether it ships kernels for them.

``collect(ctx)`` gathers the facts once per worker (the report's ``environment`` and ``devices``); the
detect checks then judge them. Every torch API is feature-detected: this runs on torch 2.0 to today.
"""

import re
from typing import Dict, Optional

from probes.checks import capabilities, device_activation
from probes.checks import outcome as checks
from probes.checks.context import CPU_SAME_DEVICE
from probes.host import arch_compat
from probes.host import facts as host_facts

COMPANIONS = ("torchvision", "torchaudio", "triton", "pytorch-triton-rocm", "pytorch-triton-xpu")
_LOCAL_TAG = re.compile(r"^(cpu|cu\d+|rocm\d+(?:\.\d+)*|xpu)$")


def build_label(torch):
    """'cpu', 'cu121', 'rocm6.0', 'xpu': the local version tag when it is one, else from torch.version."""
    version = str(torch.__version__)
    if "+" in version:
        local = version.split("+", 1)[1]
        if _LOCAL_TAG.match(local):
            return local
    cuda = getattr(torch.version, "cuda", None)
    hip = getattr(torch.version, "hip", None)
    if hip:
        return "rocm" + ".".join(str(hip).split(".")[:2])
    if cuda:
        major, _, minor = str(cuda).partition(".")
        return "cu%s%s" % (major, minor.split(".")[0])
    if getattr(torch.version, "xpu", None):
        return "xpu"
    return "cpu"


def _call(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None


def arch_list(torch):
    """Compiled GPU archs (sm_XY / compute_XY / gfxNNN); [] on CPU builds.

    ``torch.cuda.get_arch_list()`` answers [] without a usable GPU; ``torch._C._cuda_getArchFlags()`` (what it
    reads) answers on any host with the build installed, a CPU-only CI runner included (ROCm builds: gfx names).
    """
    for owner in (getattr(torch, "cuda", None), getattr(torch, "xpu", None)):
        getter = getattr(owner, "get_arch_list", None) if owner is not None else None
        if getter is not None:
            archs = _call(getter)
            if archs:
                return list(archs)
    flags = getattr(getattr(torch, "_C", None), "_cuda_getArchFlags", None)
    text = _call(flags) if flags is not None else None
    return str(text).split() if text else []


def nccl_version(torch):
    """'2.21.5' for the NCCL (RCCL on ROCm) the build carries; None on builds without it."""
    nccl = getattr(getattr(torch, "cuda", None), "nccl", None)
    found = _call(nccl.version) if nccl is not None and hasattr(nccl, "version") else None
    if isinstance(found, tuple):
        return ".".join(str(part) for part in found)
    return str(found) if found else None


def _companions(plugin):
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8 has no importlib.metadata; the probe still runs
        return {}
    found: Dict[str, Optional[str]] = {}
    for name in COMPANIONS:
        try:
            found[name] = metadata.version(name)
        except Exception:
            if name in ("torchvision", "torchaudio", "triton"):
                found[name] = None
    if plugin.get("plugin") and not plugin["plugin"].startswith("probes."):
        found[plugin["plugin"]] = plugin.get("version")
    return found


def _runtime_version(ctx):
    torch = ctx.torch
    if ctx.device_type == "cuda":
        return getattr(torch.version, "hip", None) or getattr(torch.version, "cuda", None)
    if ctx.device_type == "xpu":
        return getattr(torch.version, "xpu", None)
    if ctx.device_type == "npu":
        import sys

        plugin = sys.modules.get("torch_npu")  # imported by device activation; it knows its CANN version
        return str(getattr(getattr(plugin, "version", None), "cann", None) or "") or None
    return None


def _cuda_devices(ctx, archs):
    torch = ctx.torch
    devices = []
    for i in range(_call(torch.cuda.device_count) or 0):
        props = _call(torch.cuda.get_device_properties, i)
        if props is None:
            devices.append({"index": i, "type": "cuda", "extra": {"problem": "get_device_properties failed"}})
            continue
        capability = (int(props.major), int(props.minor))
        gcn = getattr(props, "gcnArchName", None) if ctx.hip_build else None
        if gcn:
            verdict, how = arch_compat.rocm_kernels_for(archs, gcn)
            arch = gcn.split(":")[0]
        else:
            verdict, how = arch_compat.cuda_kernels_for(archs, capability)
            arch = arch_compat.cuda_arch_name(capability)
        devices.append({
            "index": i, "type": "cuda", "name": props.name, "arch": arch,
            "capability": "%d.%d" % capability, "total_memory_bytes": int(props.total_memory),
            "kernels_for_device": verdict,
            "extra": {"kernels_how": how, "multi_processor_count": getattr(props, "multi_processor_count", None)},
        })
    return devices


def _name_and_memory(torch, module, device_type, i):
    """(name, total memory in bytes) of device ``i``, from whichever calls the device module has."""
    name = None
    total = None
    props = _call(module.get_device_properties, i) if hasattr(module, "get_device_properties") else None
    if props is not None:
        name = getattr(props, "name", None)
        total = getattr(props, "total_memory", None)
    if name is None and hasattr(module, "get_device_name"):
        name = _call(module.get_device_name, i)
    if total is None and hasattr(module, "mem_get_info"):
        info = _call(module.mem_get_info, i) or _call(module.mem_get_info)
        total = info[1] if info else None
    if device_type == "mps":
        return _mps_defaults(torch, name, total)
    return name, total


def _mps_defaults(torch, name, total):
    return name or "Apple MPS", total or _call(getattr(torch.mps, "recommended_max_memory", lambda: None))


def _generic_devices(ctx, device_type):
    torch = ctx.torch
    module = device_activation.device_module(torch, device_type)
    count = 1  # MPS before torch 2.5 has no device_count; a backend that answers nothing has one device
    if module is not None and hasattr(module, "device_count"):
        answered = _call(module.device_count)
        count = answered if answered is not None else 1
    devices = []
    for i in range(count or 0):
        name, total = _name_and_memory(torch, module, device_type, i)
        arch = device_type if device_type == ctx.privateuse1 else None
        devices.append({
            "index": i, "type": device_type, "name": str(name) if name else None, "arch": arch,
            "total_memory_bytes": int(total) if total else None, "kernels_for_device": None, "extra": {},
        })
    return devices


def _cpu_device():
    total = None
    try:
        import os

        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {"index": 0, "type": "cpu", "name": host_facts.cpu_model(), "arch": None,
            "total_memory_bytes": total, "kernels_for_device": None, "extra": {}}


MODULE_API = ("is_available", "device_count", "get_device_name", "get_device_properties", "synchronize",
              "memory_allocated", "memory_reserved", "memory_stats", "mem_get_info", "empty_cache",
              "get_amp_supported_dtype", "manual_seed_all")


def _describe_module(module):
    """The device module behind torch.<device> (e.g. torch.refdev) and which of the usual calls it has."""
    if module is None:
        return None
    name = getattr(module, "__name__", None) or type(module).__name__
    return {"module": str(name), "has": [fn for fn in MODULE_API if hasattr(module, fn)]}


def visible_accelerators(ctx):
    """{type: count} for every accelerator this torch can see, and what torch.accelerator says."""
    torch = ctx.torch
    seen = {}
    if _call(torch.cuda.is_available):
        seen["cuda"] = _call(torch.cuda.device_count) or 0
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and _call(xpu.is_available):
        seen["xpu"] = _call(xpu.device_count) or 0
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and _call(mps.is_available):
        seen["mps"] = 1
    if ctx.privateuse1:
        _add_privateuse1(torch, ctx.privateuse1, seen)
    return seen, _accelerator_api(torch)


def _add_privateuse1(torch, backend, seen):
    module = device_activation.device_module(torch, backend)
    if module is not None and _call(getattr(module, "is_available", lambda: False)):
        seen[backend] = _call(getattr(module, "device_count", lambda: 1)) or 1


def _accelerator_api(torch):
    """What torch.accelerator says: the current accelerator and its device count, or that it is absent."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None or not hasattr(accelerator, "current_accelerator"):
        return {"available": False, "note": "torch.accelerator is absent (torch < 2.6)"}
    current = _call(accelerator.current_accelerator)
    return {"available": True, "current": current.type if current is not None else None,
            "device_count": _call(accelerator.device_count)}


def _devices(ctx, archs, seen):
    """Every device this torch sees (the CPU first when it is the one probed)."""
    devices = []
    if ctx.device_type == "cpu" or ctx.device_type is None:
        devices.append(_cpu_device())
    for device_type in seen:
        devices.extend(_cuda_devices(ctx, archs) if device_type == "cuda" else _generic_devices(ctx, device_type))
    return devices


def _build_facts(torch, archs):
    """The facts of torch's own build: its arch list, debug and ABI flags, CUDA/ROCm, cuDNN and NCCL."""
    return {
        "arch_list": archs,
        "debug": bool(getattr(torch.version, "debug", False)),
        "cxx11_abi": _call(lambda: bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
        "cuda_build": getattr(torch.version, "cuda", None),
        "hip_build": getattr(torch.version, "hip", None),
        "cudnn_version": _call(torch.backends.cudnn.version) if _call(torch.backends.cudnn.is_available) else None,
        "nccl_version": nccl_version(torch) if archs else None,
    }


def _driver(ctx, family):
    """(driver version, where it was read) for an accelerator; (None, []) for the CPU."""
    return host_facts.detect_driver(family) if ctx.device_type not in (None, "cpu") else (None, [])


def collect(ctx):
    """Return {'environment': {...}, 'devices': [...], 'facts': {...}} (fingerprint added by the runner)."""
    torch = ctx.torch
    archs = arch_list(torch)
    seen, api = visible_accelerators(ctx)
    devices = _devices(ctx, archs, seen)
    matching = [d for d in devices if d["type"] == ctx.device_type and d["index"] == ctx.index]
    probed = matching[0] if matching else None
    family = host_facts.driver_family(ctx.device_type, ctx.hip_build)
    driver, driver_sources = _driver(ctx, family)
    host = host_facts.host_summary()
    override_arch = host_facts.gpu_arch_override()
    extra = {
        **_build_facts(torch, archs),
        "accelerators": seen,
        "accelerator_api": api,
        "privateuse1_backend": ctx.privateuse1,
        "device_module": _describe_module(ctx.device_module),
        "driver_sources": driver_sources,
        "cpu_model": host["cpu_model"],
        "cpu_count": host["cpu_count"],
        "os_release": host["os_release"],
        "python_implementation": host["python_implementation"],
        "probe_origin": probe_origin(),
    }
    if ctx.device_error:
        extra["device_error"] = ctx.device_error
    environment = {
        "torch_version": str(torch.__version__),
        "torch_build": build_label(torch),
        "python_version": host["python_version"],
        "os": host["os"],
        "arch": host["arch"],
        "backend": ctx.backend,
        "runtime_version": _runtime_version(ctx) if ctx.device is not None else None,
        "driver_version": driver,
        "device_arch": override_arch or (probed or {}).get("arch"),
        "device_name": (probed or {}).get("name"),
        "companions": _companions(ctx.plugin),
        "extra": extra,
    }
    return {"environment": environment, "devices": devices,
            "facts": {"probed": probed, "family": family, "driver_sources": driver_sources}}


def probe_origin():
    """'bundle' when every loaded probe module came from the single-file bundle, else 'package'."""
    import sys

    bundle = getattr(sys.modules.get("probes"), "__bundle_path__", None)
    if not bundle:
        return "package"
    files = [getattr(m, "__file__", "") or "" for n, m in list(sys.modules.items())
             if m is not None and (n == "probes" or n.startswith("probes."))]
    return "bundle" if all(f.startswith(bundle) for f in files) else "mixed"


def plan(ctx, facts):
    """The detect checks, judging the facts ``collect`` gathered."""
    env = facts["environment"]
    probed = facts["facts"]["probed"]

    def torch_build(_ctx):
        return checks.passed(
            "torch %s, build %s" % (env["torch_version"], env["torch_build"]),
            torch_version=env["torch_version"], torch_build=env["torch_build"],
            cuda=env["extra"]["cuda_build"], hip=env["extra"]["hip_build"],
            debug=env["extra"]["debug"], cxx11_abi=env["extra"]["cxx11_abi"],
            arch_list=env["extra"]["arch_list"],
        )

    def accelerators(_ctx):
        seen = env["extra"]["accelerators"]
        text = ", ".join("%s x%d" % (k, v) for k, v in sorted(seen.items())) or "none (CPU only)"
        return checks.passed("accelerators visible to torch: " + text, accelerators=seen,
                             accelerator_api=env["extra"]["accelerator_api"],
                             privateuse1_backend=env["extra"]["privateuse1_backend"],
                             device_module=env["extra"]["device_module"])

    def device(c):
        if c.device is None:
            return checks.failed(c.device_error or "no device to probe")
        x = c.torch.arange(6, device=c.device, dtype=c.torch.float32)
        total = float((x * 2).sum().cpu())
        if total != 30.0:
            return checks.failed("arithmetic on %s gave %r, expected 30.0" % (c.device, total))
        detail = "probing %s (%s)" % (c.device, env["device_name"] or "unnamed")
        if c.is_cpu:
            detail += "; " + CPU_SAME_DEVICE
        return checks.passed(detail, device=str(c.device), device_name=env["device_name"])

    def driver(c):
        if c.is_cpu:
            return checks.skipped("device is CPU: no accelerator driver is involved")
        sources = facts["facts"]["driver_sources"]
        if env["driver_version"]:
            return checks.passed("driver %s" % env["driver_version"], driver_version=env["driver_version"],
                                 sources=sources)
        if not sources:
            return checks.skipped("no driver source is known for backend %r" % c.backend,
                                  family=facts["facts"]["family"])
        return checks.failed("no driver version found; consulted: " + "; ".join(
            "%s (%s)" % (s["source"], s["outcome"]) for s in sources), sources=sources)

    def kernels(c):
        if c.is_cpu:
            return checks.skipped("device is CPU: every torch build ships CPU kernels")
        if probed is None or probed.get("kernels_for_device") is None:
            return checks.skipped("cannot tell for %s: no compiled arch list or no device architecture" % c.backend,
                                  arch_list=env["extra"]["arch_list"], device_arch=env["device_arch"])
        how = probed["extra"].get("kernels_how")
        data = {"device_arch": probed["arch"], "arch_list": env["extra"]["arch_list"], "how": how}
        if probed["kernels_for_device"]:
            return checks.passed("build ships kernels for %s (%s)" % (probed["arch"], how), **data)
        return checks.failed("this build ships no kernels or PTX for %s; compiled: %s"
                             % (probed["arch"], " ".join(env["extra"]["arch_list"])), **data)

    return [
        checks.Check("detect.torch_build", "detect", torch_build),
        checks.Check("detect.accelerators", "detect", accelerators),
        checks.Check("detect.device", "detect", device),
        checks.Check("detect.driver", "detect", driver),
        checks.Check("detect.kernels_for_device", "detect", kernels),
    ] + capabilities.plan(ctx, facts["devices"])
