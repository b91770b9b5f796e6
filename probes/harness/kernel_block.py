"""Refusing a blocked op at the device's own kernel, in every group, traced or not.

The breadcrumb mode (``probes.harness.breadcrumbs``) refuses a blocked op where it sees it: the ops a traced
check calls on the main thread. It does not see the ops a backend kernel calls inside itself (a composite
``linalg_pinv`` calling ``mm``), a device's backward pass (run without modes, see breadcrumbs' Limit), or the
groups that run untraced (compile, perf). So a worker also registers, for each overload of a blocked family
that has a kernel for the device's dispatch key (``PrivateUse1``, ``CUDA``, ...), a Python kernel of its own
that raises ``BlockedOp`` instead of calling the device's: whatever path reaches the op on the device, the
dispatcher hands it to the refusal. Ops that never reached the device's key (a composite op decomposed
above it) and the CPU's own kernels are left alone: the harness's CPU references still run.

The registration lasts for the worker's life; a blocklist only grows.
"""

from probes.checks import outcome

BlockedOp = outcome.BlockedOp


def dispatch_key(torch, device_type):
    """The dispatch key name of ``device_type``'s kernels ('PrivateUse1' for a plugin), or None."""
    finder = getattr(torch._C, "_dispatch_key_for_device", None)
    if finder is None:
        return None
    try:
        return str(finder(device_type))
    except Exception:
        return None


def overloads(torch, family):
    """The registered overloads of ``family`` ('aten::mm' -> ['aten::mm', 'aten::mm.out', ...])."""
    try:
        names = torch._C._dispatch_get_all_op_names()
    except Exception:
        return []
    return sorted(n for n in names if n == family or n.startswith(family + "."))


class KernelBlock(object):
    """The refusing kernels registered in this worker. ``hit`` is the (op, why) of the last refusal."""

    def __init__(self, torch, device_type):
        self.torch = torch
        self.key = dispatch_key(torch, device_type) if device_type not in (None, "cpu") else None
        self.library = None
        self.families = {}  # family -> the overloads refused
        self.hit = None

    def _refusal(self, name, why):
        def refuse(*args, **kwargs):
            self.hit = (name, why)
            raise BlockedOp(name, why)

        return refuse

    def block(self, family, why):
        """Refuse every overload of ``family`` (an 'aten::' family) that has a kernel for the device's key."""
        if self.key is None or family in self.families or not family.startswith("aten::"):
            return
        torch = self.torch
        refused = []
        for name in overloads(torch, family):
            try:
                if not torch._C._dispatch_has_kernel_for_dispatch_key(name, self.key):
                    continue
                if self.library is None:
                    self.library = torch.library.Library("aten", "IMPL")
                self.library.impl(name.split("::", 1)[1], self._refusal(name, why), self.key)
            except Exception:
                continue  # a torch without Python kernels: the breadcrumb mode still refuses what it sees
            refused.append(name)
        self.families[family] = refused

    def block_all(self, why_by_family):
        import warnings

        with warnings.catch_warnings():  # "overriding a previously registered kernel": that is the point
            warnings.simplefilter("ignore")
            for family in sorted(why_by_family):
                self.block(family, why_by_family[family])
