"""distributed: a one-process group with the device's collective backend, on device tensors.

Two checks: ``all_reduce`` (all_reduce, broadcast, barrier) and ``ddp_step`` (one training step of a
one-rank ``DistributedDataParallel`` model, compared with the same step without DDP). The backend is the
one torch.distributed maps the device to (``Backend.default_device_backend_map``: cuda -> nccl, plugins add
theirs), else ``DEVICE_BACKENDS`` (npu -> hccl, mlu -> cncl, ...). The rendezvous is a file store in a fresh
temporary directory (no port to race for).

Honest verdicts: when the device has no collective backend, gloo on CPU tensors still runs (it tells
whether torch.distributed works at all), but the check is ``unsupported``: the CPU, not the device, did
the collective. A backend that is mapped to the device but cannot take its tensors is ``failed``.
"""

import datetime
import os
import shutil
import tempfile

from probes.checks import outcome as checks
from probes.harness import error_texts

# device type -> collective backend name (NCCL also serves ROCm builds as RCCL), where torch has no entry.
DEVICE_BACKENDS = {"cuda": "nccl", "npu": "hccl", "mlu": "cncl", "xpu": "xccl", "hpu": "hccl"}
GLOO_DEVICES = ("cuda",)  # gloo moves CUDA tensors itself: a real device collective where nccl is missing
TIMEOUT_S = 60


def _backend_available(dist, name):
    probe = getattr(dist, "is_backend_available", None)
    if probe is not None:
        try:
            return bool(probe(name))
        except Exception:
            return False
    legacy = getattr(dist, "is_%s_available" % name, None)
    if legacy is not None:
        return bool(legacy())
    return name in getattr(getattr(dist, "Backend", None), "backend_list", ())


def device_backend(ctx, dist):
    """The collective backend torch.distributed uses for the device, or None."""
    mapping = getattr(getattr(dist, "Backend", None), "default_device_backend_map", None) or {}
    if ctx.device_type in mapping:
        return mapping[ctx.device_type]
    return DEVICE_BACKENDS.get(ctx.device_type)


class _Group(object):
    """A one-rank process group for the duration of a ``with`` block."""

    def __init__(self, dist, backend):
        self.dist, self.backend = dist, backend
        self.workdir = None

    def __enter__(self):
        if self.dist.is_initialized():
            raise RuntimeError("a process group already exists in the probe worker")
        self.workdir = tempfile.mkdtemp(prefix="accelenv-dist-")
        self.dist.init_process_group(self.backend, init_method="file://" + os.path.join(self.workdir, "store"),
                                     rank=0, world_size=1, timeout=datetime.timedelta(seconds=TIMEOUT_S))
        return self

    def __exit__(self, *exc):
        try:
            if self.dist.is_initialized():
                self.dist.destroy_process_group()
        finally:
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)


def _collectives(torch, dist, device):
    t = torch.arange(1, 5, dtype=torch.float32, device=device) * 3
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    dist.broadcast(t, src=0)
    dist.barrier()
    return t.cpu().tolist()


def _ddp_step(torch, dist, device):
    """(max abs difference of the parameters after one DDP step vs a plain step, loss)."""
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    plain = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to(device)
    twin = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to(device)
    twin.load_state_dict(plain.state_dict())
    ddp = DistributedDataParallel(twin, device_ids=None)
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(1)).to(device)
    losses = []
    for model in (plain, ddp):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().cpu()))
    worst = max(float((p - q).abs().max().cpu()) for p, q in zip(plain.parameters(), ddp.module.parameters()))
    return worst, losses


def _gated(run):
    def check(ctx):
        torch = ctx.torch
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available():
            return checks.skipped("torch.distributed is not available in this torch build")
        wanted = device_backend(ctx, dist)
        if ctx.is_cpu:
            wanted = "gloo"
        if (wanted is None or not _backend_available(dist, wanted)) and ctx.device_type in GLOO_DEVICES \
                and _backend_available(dist, "gloo"):
            wanted = "gloo"
        if wanted is None or not _backend_available(dist, wanted):
            return _cpu_only(ctx, dist, run, wanted)
        try:
            with _Group(dist, wanted):
                return run(ctx, dist, wanted, ctx.device)
        except Exception as exc:
            data = {"backend": wanted, "tensor_device": str(ctx.device), "error": error_texts.first_line(exc, 500)}
            return checks.failed("the %s backend torch.distributed uses for %s failed on %s tensors: %s"
                                 % (wanted, ctx.device_type, ctx.device, data["error"]), **data)

    return check


def _cpu_only(ctx, dist, run, wanted):
    why = ("torch.distributed has no collective backend for %s" % ctx.device_type if wanted is None
           else "the %s backend for %s is not available in this torch" % (wanted, ctx.device_type))
    data = {"backend": None, "wanted_backend": wanted, "cpu_fallback": True}
    if not _backend_available(dist, "gloo"):
        return checks.unsupported(why + "; gloo is not available either", **data)
    try:
        with _Group(dist, "gloo"):
            cpu = run(ctx, dist, "gloo", "cpu")
        data["gloo_cpu"] = cpu.status
    except Exception as exc:
        data["gloo_cpu"] = "error: %s" % error_texts.first_line(exc, 200)
    return checks.unsupported("%s; only gloo on CPU tensors ran (%s), which says nothing about the device"
                              % (why, data["gloo_cpu"]), **data)


def all_reduce(ctx, dist, backend, device):
    got = _collectives(ctx.torch, dist, device)
    data = {"backend": backend, "tensor_device": str(device), "result": got}
    if got != [3.0, 6.0, 9.0, 12.0]:
        return checks.failed("all_reduce over one rank changed the tensor: %r" % got, **data)
    return checks.passed("all_reduce, broadcast and barrier on a one-process %s group (%s tensors)"
                         % (backend, device), **data)


def ddp_step(ctx, dist, backend, device):
    worst, losses = _ddp_step(ctx.torch, dist, device)
    data = {"backend": backend, "tensor_device": str(device), "max_abs_err": worst, "losses": losses}
    if worst > 1e-6:
        return checks.failed("a one-rank DDP step differs from the plain step by %.3g" % worst, **data)
    return checks.passed("a one-rank DistributedDataParallel step on %s (%s) equals the plain step"
                         % (device, backend), **data)


def plan(ctx):
    return [checks.Check("distributed.all_reduce", "distributed", _gated(all_reduce)),
            checks.Check("distributed.ddp_step", "distributed", _gated(ddp_step))]
