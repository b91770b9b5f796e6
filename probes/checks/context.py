"""What every check receives: torch, the device under test, and facts decided once per worker."""

import contextlib
import os

from probes.checks import device_activation


@contextlib.contextmanager
def _untraced():
    yield

# The dtypes the ops group tries, by name; a device claims a dtype when it can hold a tensor of it.
DTYPE_NAMES = ("float32", "float16", "bfloat16", "int64", "bool")
CPU_SAME_DEVICE = (
    "device is CPU: the device result and the CPU reference ran on the same device, so this proves the "
    "probe harness, not an accelerator"
)


class ProbeContext(object):
    def __init__(self, torch, device, device_error=None, plugin=None, requested_type=None):
        self.torch = torch
        self.requested_type = requested_type
        self.device = device  # torch.device, or None when device_error says why not
        self.device_error = device_error
        self.device_type = device.type if device is not None else None
        self.index = (device.index or 0) if device is not None else 0
        self.plugin = plugin or {}
        self.hip_build = bool(getattr(torch.version, "hip", None))
        self.privateuse1 = device_activation.privateuse1_name(torch)
        self._dtypes = None
        self._held = {}
        self.launch = None  # how to start this probe again (a WorkerLaunch); set by the worker
        self.options = {}  # suite options the worker was started with: {"deep": bool, "opinfo_ops": [...]}
        # ``with ctx.traced():`` runs a part of a check in a group that runs untraced (compile) under the harness's
        # breadcrumb mode: its eager references, so an op that crashed or hung is named or refused there
        self.traced = _untraced

    @property
    def is_cpu(self):
        return self.device_type == "cpu"

    @property
    def backend(self):
        """The report's ``environment.backend``: the device type probed."""
        return self.device_type or self.requested_type or "cpu"

    @property
    def device_module(self):
        if self.device_type in (None, "cpu"):
            return None
        return device_activation.device_module(self.torch, self.device_type)

    def dtype(self, name):
        return getattr(self.torch, name)

    def claimed_dtypes(self):
        """{name: None if the device holds it, else the reason it does not}."""
        if self._dtypes is None:
            self._dtypes = {}
            for name in DTYPE_NAMES:
                self._dtypes[name] = self._dtype_problem(name)
        return self._dtypes

    def dtype_problem(self, name):
        """None if the device holds a tensor of dtype ``name``, else the reason it does not (cached)."""
        if name not in self._held:
            self._held[name] = self._dtype_problem(name)
        return self._held[name]

    def _dtype_problem(self, name):
        torch = self.torch
        if name == "bfloat16" and self.device_type == "cuda" and not self.hip_build:
            check = getattr(torch.cuda, "is_bf16_supported", None)
            try:
                if check is not None and not check():
                    return "torch.cuda.is_bf16_supported() is False for this GPU"
            except Exception:
                pass
        try:
            torch.ones(2, dtype=self.dtype(name), device=self.device)
        except Exception as exc:
            return "cannot create a %s tensor on %s: %s" % (name, self.device, str(exc).splitlines()[0][:200])
        return None

    def synchronize(self):
        """The device module's ``synchronize()``; a device without one has nothing to wait for. A failure
        propagates: a check that waited on a failed synchronize would judge unfinished work."""
        module = self.device_module
        sync = getattr(module, "synchronize", None) if module is not None else None
        if sync is not None:
            sync()


def build_context(torch, requested):
    device_type, index = device_activation.parse_device(requested)
    faults_set = (os.environ.get(device_activation.REFDEV_FAULTS_ENV) or "").strip()
    if faults_set and device_type != device_activation.REFDEV:
        raise device_activation.SettingsError(
            "%s=%s asks for injected faults, which only the refdev reference device has; the probed device is "
            "%s: unset it, or probe --device refdev" % (device_activation.REFDEV_FAULTS_ENV, faults_set, requested))
    plugin = {}
    try:
        if device_type == "auto":
            device_activation.activate_installed_plugins()
            device_type = device_activation.pick_auto(torch)
            if device_type == device_activation.REFDEV:
                plugin = {"plugin": "probes.refdev", "version": None}
        else:
            plugin = device_activation.activate(device_type)
        device = device_activation.resolve(torch, device_type, index)
    except device_activation.DeviceError as exc:
        return ProbeContext(torch, None, device_error=str(exc), plugin=plugin, requested_type=device_type)
    return ProbeContext(torch, device, plugin=plugin)
