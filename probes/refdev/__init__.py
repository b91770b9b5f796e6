"""refdev: a CPU-backed PrivateUse1 device for probing without hardware, with fault injection.

Opt-in and once per process: ``install()`` renames PrivateUse1 to ``refdev`` (irreversible), registers
``torch.refdev`` and about 1,070 Python kernels that run each aten op on CPU views of the device data.
Afterwards ``torch.accelerator`` reports refdev for the rest of the process and ``pin_memory()`` stops
working, so run refdev code in its own process.

Importing this package needs only the standard library; torch is imported by ``availability()`` and
``install()``. Needs the Python PrivateUse1 hooks (``torch._C._acc``, torch 2.10 and later).

Environment: ``ACCELENV_REFDEV_FAULTS`` (see ``probes.refdev.faults``), ``ACCELENV_REFDEV_CAPACITY``
(device memory in bytes, default 1 GiB).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional, Tuple

from probes.refdev.allocator import DEFAULT_CAPACITY
from probes.refdev.faults import ENV_VAR as FAULTS_ENV
from probes.refdev.faults import FaultPlan, parse_faults

DEVICE = "refdev"
CAPACITY_ENV = "ACCELENV_REFDEV_CAPACITY"
#: the torch._C._acc functions a pure-Python PrivateUse1 backend needs
REQUIRED_HOOKS = ("create_empty_tensor", "register_python_privateuseone_hook",
                  "register_python_privateuseone_device_guard")

__all__ = ["DEVICE", "CAPACITY_ENV", "FAULTS_ENV", "availability", "install", "installed_faults",
           "parse_faults", "capacity_from_env"]

LOAD_PRIORITY = 15
_lock = threading.Lock()
_installed: Optional[FaultPlan] = None
_keep_alive: list = []  # Library objects: a dropped Library unregisters its kernels


def availability() -> Tuple[bool, str]:
    """(True, why) when refdev is installed or can be; (False, the reason) otherwise. Never raises."""
    if _installed is not None:
        return True, "refdev is installed in this process"
    try:
        import torch
    except Exception as exc:  # a broken install can raise OSError and friends, not only ImportError
        return False, "torch is not importable: %s" % exc
    acc = getattr(torch._C, "_acc", None)
    missing = [name for name in REQUIRED_HOOKS if not hasattr(acc, name)]
    if missing:
        return False, (
            "torch %s lacks the Python PrivateUse1 hooks (torch._C._acc.%s); they arrived in torch 2.10"
            % (torch.__version__, ", ".join(missing))
        )
    if not hasattr(torch._C, "_construct_storage_from_data_pointer"):
        return False, "torch %s lacks torch._C._construct_storage_from_data_pointer" % torch.__version__
    owner = torch._C._get_privateuse1_backend_name()
    if owner not in ("privateuseone", DEVICE):
        return False, "PrivateUse1 already belongs to the %r backend in this process" % owner
    return True, "torch %s has the Python PrivateUse1 hooks" % torch.__version__


def capacity_from_env(environ: Any = None) -> int:
    raw = (os.environ if environ is None else environ).get(CAPACITY_ENV, "").strip()
    if not raw:
        return DEFAULT_CAPACITY
    if not raw.isdigit() or int(raw) <= 0:
        raise ValueError("%s must be a positive whole number of bytes; got %r" % (CAPACITY_ENV, raw))
    return int(raw)


def installed_faults() -> Optional[FaultPlan]:
    """The faults this process was installed with, or None when refdev is not installed."""
    return _installed


def install(faults: Optional[str] = None) -> Any:
    """Install refdev in this process and return ``torch.refdev``.

    ``faults`` is the comma-separated fault list; None reads ``ACCELENV_REFDEV_FAULTS``. Bad faults or a
    bad capacity raise ValueError before anything changes. A second call with the same faults returns
    the installed module; different faults raise RuntimeError (the install cannot be undone).
    """
    global _installed
    plan = parse_faults(os.environ.get(FAULTS_ENV) if faults is None else faults)
    capacity = plan.oom_capacity or capacity_from_env()
    with _lock:
        if _installed is not None:
            if _installed.entries != plan.entries:
                raise RuntimeError(
                    "refdev is already installed in this process with faults %r; it cannot be reinstalled "
                    "with %r. Start a new process." % (",".join(_installed.entries), ",".join(plan.entries))
                )
            import torch

            return torch.refdev  # type: ignore[attr-defined]
        ok, reason = availability()
        if not ok:
            raise RuntimeError("refdev cannot be installed: %s" % reason)
        module = _install(plan, capacity)
        _installed = plan
        return module


def _install(plan: FaultPlan, capacity: int) -> Any:
    import torch

    from probes.refdev import device_module
    from probes.refdev.allocator import CachingAllocator
    from probes.refdev.kernels import KernelSet
    from probes.refdev.storage import StorageModel

    allocator = CachingAllocator(capacity, torch.OutOfMemoryError, DEVICE)
    allocator.leak = plan.leak
    model = StorageModel(allocator, DEVICE)
    kernels = KernelSet(model, plan)  # validates fault targets: may raise
    # Order matters (torch.utils.backend_registration._setup_privateuseone_for_python_backend).
    torch.utils.rename_privateuse1_backend(DEVICE)
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._register_device_module(DEVICE, device_module)
    torch._C._acc.register_python_privateuseone_hook(device_module.Hooks())
    torch._C._acc.register_python_privateuseone_device_guard(device_module.Guard())
    device_module.attach(allocator, rng_fault=plan.rng)
    # Ahead of torch's PrivateUse1 entry (priority 23), which would crash loading onto refdev.
    torch.serialization.register_package(LOAD_PRIORITY, lambda obj: None, model.restore_location)
    kernels.register_all()
    _keep_alive.append(kernels)
    if plan.collective:
        _claim_gloo()
    try:
        # Autocast on refdev is a no-op; without this fallthrough it fails on aten::copy_.
        autocast = torch.library.Library("_", "IMPL")
        autocast.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
        _keep_alive.append(autocast)
    except RuntimeError:
        pass  # a later torch registers its own
    return device_module


def _claim_gloo() -> None:
    """The ``collective`` fault: torch.distributed maps refdev to gloo, which cannot move refdev tensors."""
    import torch.distributed as dist

    if dist.is_available():
        dist.Backend.default_device_backend_map[DEVICE] = "gloo"
