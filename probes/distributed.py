"""distributed: a one-process group with the device's collective backend and an all_reduce.

The group rendezvous is a file store in a fresh temporary directory (no port to race for). When the
device's backend (nccl, hccl, cncl, xccl) is not available in this torch, gloo on CPU tensors is the
fallback and the detail says so.
"""

import datetime
import os
import shutil
import tempfile

from probes import checks

# device type -> collective backend name (NCCL also serves ROCm builds as RCCL).
DEVICE_BACKENDS = {"cuda": "nccl", "npu": "hccl", "mlu": "cncl", "xpu": "xccl", "hpu": "hccl"}
GLOO_DEVICES = ("cpu", "cuda")
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


def all_reduce(ctx):
    torch = ctx.torch
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return checks.skipped("torch.distributed is not available in this torch build")
    wanted = DEVICE_BACKENDS.get(ctx.device_type, "gloo")
    backend, note = wanted, None
    if not _backend_available(dist, wanted):
        backend, note = "gloo", "%s is not available here; fell back to gloo" % wanted
        if not _backend_available(dist, "gloo"):
            return checks.skipped("neither %s nor gloo is available in this torch build" % wanted)
    tensor_device = ctx.device if (backend != "gloo" or ctx.device_type in GLOO_DEVICES) else "cpu"
    if dist.is_initialized():
        return checks.failed("a process group already exists in the probe worker")
    workdir = tempfile.mkdtemp(prefix="accelenv-dist-")
    try:
        dist.init_process_group(backend, init_method="file://" + os.path.join(workdir, "store"), rank=0,
                                world_size=1, timeout=datetime.timedelta(seconds=TIMEOUT_S))
        try:
            t = torch.arange(1, 5, dtype=torch.float32, device=tensor_device) * 3
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            dist.broadcast(t, src=0)
            dist.barrier()
            got = t.cpu().tolist()
        finally:
            dist.destroy_process_group()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    data = {"backend": backend, "wanted_backend": wanted, "tensor_device": str(tensor_device), "result": got}
    if got != [3.0, 6.0, 9.0, 12.0]:
        return checks.failed("all_reduce over one rank changed the tensor: %r" % got, **data)
    detail = "all_reduce, broadcast and barrier on a one-process %s group (%s tensors)" % (backend, tensor_device)
    if note:
        detail += "; " + note
    return checks.passed(detail, **data)


def plan(ctx):
    return [checks.Check("distributed.all_reduce", "distributed", all_reduce)]
