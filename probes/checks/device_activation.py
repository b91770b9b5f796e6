"""Make a PrivateUse1 backend exist before any check touches it, then pick the device to probe.

Vendor backends register their device type when their plugin is imported (torch_npu, torch_mlu, ...);
``torch.device("npu")`` fails before that. ``refdev`` is accelenv's pure-Python reference backend,
installed with ``probes.refdev.install(faults)``; faults come from ``ACCELENV_REFDEV_FAULTS`` (the CLI's
``--inject``).
"""

import importlib
import os
import re

# device type -> module whose import registers it (PrivateUse1 plugins and out-of-tree backends).
PLUGIN_MODULES = {
    "npu": "torch_npu",
    "mlu": "torch_mlu",
    "musa": "torch_musa",
    "hpu": "habana_frameworks.torch.core",
}
REFDEV = "refdev"
REFDEV_FAULTS_ENV = "ACCELENV_REFDEV_FAULTS"
REFDEV_CAPACITY_ENV = "ACCELENV_REFDEV_CAPACITY"
_DEVICE = re.compile(r"^(?P<type>[a-z_][a-z0-9_]*)(?::(?P<index>\d+))?$")


class DeviceError(Exception):
    """The requested device cannot be probed; the message says why and what to do."""


class SettingsError(Exception):
    """The settings for the device are invalid (bad ``ACCELENV_REFDEV_FAULTS``): a usage error, not a device
    that is absent, so the probe exits 2 instead of reporting the device skipped."""


def parse_device(text):
    """'cuda:1' -> ('cuda', 1); 'auto' -> ('auto', None). Raises DeviceError on malformed text."""
    match = _DEVICE.match(text or "")
    if not match:
        raise DeviceError(
            "device %r is not a device name: use auto, cpu, cuda[:N], mps, xpu[:N] or a PrivateUse1 "
            "backend name such as npu or refdev" % (text,)
        )
    index = match.group("index")
    return match.group("type"), (int(index) if index is not None else None)


def _installed(module_name):
    import importlib.util

    try:
        return importlib.util.find_spec(module_name.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _version_of(module):
    return str(getattr(module, "__version__", None) or "") or None


def activate(device_type):
    """Import what registers ``device_type``. Returns {'plugin': name, 'version': v} or {}."""
    if device_type == REFDEV:
        try:
            refdev = importlib.import_module("probes.refdev")
        except ImportError as exc:
            raise DeviceError("the refdev reference backend is not available in this probe: %s" % exc) from exc
        install = getattr(refdev, "install", None)
        if install is None:
            raise DeviceError("probes.refdev has no install(); this probe build lacks the reference backend")
        try:
            install(os.environ.get(REFDEV_FAULTS_ENV) or None)
        except ValueError as exc:  # install()'s contract: bad faults or capacity, named in the message
            raise SettingsError("invalid %s or %s: %s" % (REFDEV_FAULTS_ENV, REFDEV_CAPACITY_ENV, exc)) from exc
        except Exception as exc:  # the backend explains itself (e.g. torch too old for Python backends)
            raise DeviceError("refdev could not be installed: %s: %s" % (type(exc).__name__, exc)) from exc
        return {"plugin": "probes.refdev", "version": None}
    module_name = PLUGIN_MODULES.get(device_type)
    if module_name is None:
        return {}
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise DeviceError(
            "device %r needs the %s plugin, which failed to import: %s: %s"
            % (device_type, module_name, type(exc).__name__, exc)
        ) from exc
    return {"plugin": module_name, "version": _version_of(module)}


def activate_installed_plugins():
    """For --device auto: import every installed vendor plugin so its device becomes visible."""
    found = {}
    for device_type, module_name in sorted(PLUGIN_MODULES.items()):
        if _installed(module_name):
            try:
                found[device_type] = activate(device_type)
            except DeviceError:
                continue
    return found


def privateuse1_name(torch):
    getter = getattr(getattr(torch, "_C", None), "_get_privateuse1_backend_name", None)
    try:
        name = getter() if getter else None
    except Exception:
        name = None
    return None if name in (None, "privateuseone") else name


def device_module(torch, device_type):
    getter = getattr(torch, "get_device_module", None)
    if getter is not None:
        try:
            return getter(device_type)
        except Exception:
            pass
    return getattr(torch, device_type, None)


def _available(torch, device_type):
    if device_type == "cpu":
        return True
    if device_type == "mps":
        mps = getattr(getattr(torch, "backends", None), "mps", None)
        return bool(mps is not None and mps.is_available())
    module = device_module(torch, device_type)
    probe = getattr(module, "is_available", None)
    try:
        return bool(probe()) if probe else False
    except Exception:
        return False


def _count(torch, device_type):
    if device_type in ("cpu", "mps"):
        return 1
    module = device_module(torch, device_type)
    try:
        return int(module.device_count())
    except Exception:
        return 1


def pick_auto(torch):
    """First available of cuda, xpu, mps, the PrivateUse1 backend, torch.accelerator; else cpu."""
    candidates = ["cuda", "xpu", "mps"]
    pu1 = privateuse1_name(torch)
    if pu1:
        candidates.append(pu1)
    for device_type in candidates:
        if _available(torch, device_type):
            return device_type
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "current_accelerator"):
        try:
            current = accelerator.current_accelerator()  # raises on 2.6 without an accelerator
        except Exception:
            current = None
        if current is not None:
            return current.type
    return "cpu"


def resolve(torch, device_type, index):
    """The torch.device to probe. Raises DeviceError when it is not usable on this host."""
    try:
        device = torch.device(device_type if index is None else "%s:%d" % (device_type, index))
    except Exception as exc:
        raise DeviceError("torch does not know device type %r: %s" % (device_type, exc)) from exc
    if not _available(torch, device_type):
        raise DeviceError(
            "device %r is not available: this torch (%s) reports it unavailable or has no %s support"
            % (device_type, torch.__version__, device_type)
        )
    if index is not None and index >= _count(torch, device_type):
        raise DeviceError("device %s:%d does not exist: %d %s device(s) visible"
                          % (device_type, index, _count(torch, device_type), device_type))
    return device
