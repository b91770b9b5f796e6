"""One view over the device memory statistics torch exposes, whichever torch version and backend.

Order: the device module (torch.cuda, torch.xpu, the PrivateUse1 module such as torch.npu or
torch.refdev), then ``torch.accelerator.memory`` (torch 2.9+; it raises "not a DeviceAllocator" for
Python backends, so it is only a fallback). MPS has its own names and no peak or reserved figures.
Every getter returns None when the backend does not provide the figure.
"""


def _call(fn, device):
    try:
        return fn(device)
    except TypeError:
        return fn()


class MemoryApi(object):
    def __init__(self, ctx):
        self.torch = ctx.torch
        self.device = ctx.device
        self.source = None
        self._fns = {}
        module = ctx.device_module
        if ctx.device_type == "mps":
            mps = getattr(self.torch, "mps", None)
            self._bind(mps, {"allocated": "current_allocated_memory", "reserved": "driver_allocated_memory",
                             "empty_cache": "empty_cache"}, "torch.mps")
        elif module is not None and hasattr(module, "memory_allocated") and self._works(module):
            self._bind(module, {
                "allocated": "memory_allocated", "reserved": "memory_reserved", "peak": "max_memory_allocated",
                "reset_peak": "reset_peak_memory_stats", "empty_cache": "empty_cache", "stats": "memory_stats",
                "mem_get_info": "mem_get_info",
            }, "torch.%s" % ctx.device_type)
        else:
            generic = getattr(getattr(self.torch, "accelerator", None), "memory", None)
            if generic is not None and hasattr(generic, "memory_allocated") and self._works(generic):
                self._bind(generic, {
                    "allocated": "memory_allocated", "reserved": "memory_reserved", "peak": "max_memory_allocated",
                    "reset_peak": "reset_peak_memory_stats", "empty_cache": "empty_cache", "stats": "memory_stats",
                    "mem_get_info": "get_memory_info",
                }, "torch.accelerator.memory")

    def _works(self, owner):
        try:
            _call(owner.memory_allocated, self.device)
            return True
        except Exception:
            return False

    def _bind(self, owner, names, label):
        if owner is None:
            return
        for key, name in names.items():
            fn = getattr(owner, name, None)
            if fn is not None:
                self._fns[key] = fn
        if "allocated" in self._fns:
            self.source = label

    @property
    def available(self):
        return self.source is not None

    def has(self, key):
        return key in self._fns

    def get(self, key):
        fn = self._fns.get(key)
        return None if fn is None else _call(fn, self.device)

    def allocated(self):
        return self.get("allocated")

    def reserved(self):
        return self.get("reserved")

    def peak(self):
        return self.get("peak")

    def reset_peak(self):
        return self.get("reset_peak")

    def empty_cache(self):
        fn = self._fns.get("empty_cache")
        if fn is not None:
            fn()

    def stats(self):
        return self.get("stats") or {}

    def total(self):
        """Total device memory in bytes, or None."""
        info = None
        if "mem_get_info" in self._fns:
            try:
                info = self.get("mem_get_info")
            except Exception:
                info = None
        if info:
            return int(info[1])
        props = getattr(getattr(self.torch, self.device.type, None), "get_device_properties", None)
        if props is not None:
            try:
                return int(props(self.device).total_memory)
            except Exception:
                return None
        return None
