"""distributed: a two-process group with the device's collective backend, on device tensors.

Two checks, each run by two rank processes (the probe relaunched with a hidden ``--dist-rank``; the
rendezvous is a file store in a fresh temporary directory, no port to race for):

- ``all_reduce``: rank r contributes ``(r + 1) * [1, 2, 3, 4]``; ``all_reduce(SUM)`` must give
  ``3 * [1, 2, 3, 4]`` on both ranks, ``broadcast`` from rank 0 must copy rank 0's tensor to rank 1, and a
  barrier must return. An ``all_reduce`` that does nothing cannot pass.
- ``ddp_step``: one ``DistributedDataParallel`` step, each rank on its own half of a batch; the parameters
  after the step must be equal across the ranks and equal to one plain step on the whole batch (DDP averages
  the gradients).

The backend is the one torch.distributed maps the device to (``Backend.default_device_backend_map``: cuda ->
nccl, plugins add theirs), else ``DEVICE_BACKENDS`` (npu -> hccl, mlu -> cncl, ...); with one CUDA device
(NCCL refuses two ranks on one GPU) gloo, which moves CUDA tensors itself. Rank r runs on device r when the
host has ``WORLD`` devices (``--dist-tensor-device cuda:*``); with one device both ranks share it, and a pass
there is ``skipped`` with the reason (a collective across devices needs two); a pass on gloo with device
tensors is ``unsupported`` (gloo copies them through the host: not a device collective). ``data`` says
``distinct_devices``, ``device_collective`` and the backend.

Honest verdicts: when the device has no collective backend, gloo on CPU tensors still runs (it tells
whether torch.distributed works at all), but the check is ``unsupported``: the CPU, not the device, did
the collective. A backend that is mapped to the device but cannot take its tensors is ``failed``.
"""

import datetime
import os
import shutil
import tempfile

from probes.checks import error_texts
from probes.checks import outcome as checks

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


WORLD = 2
DDP_BATCH = 8


def _collectives(torch, dist, device, rank):
    base = torch.arange(1, 5, dtype=torch.float32)
    t = (base * (rank + 1)).to(device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    b = (base * (10 if rank == 0 else -1)).to(device)
    dist.broadcast(b, src=0)
    dist.barrier()
    return {"all_reduce": t.cpu().tolist(), "broadcast": b.cpu().tolist()}


def _ddp_model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _ddp_data(torch):
    return torch.randn(DDP_BATCH, 8, generator=torch.Generator().manual_seed(1))


def _ddp_step(torch, dist, device, rank):
    from torch.nn.parallel import DistributedDataParallel

    model = _ddp_model(torch).to(device)
    ddp = DistributedDataParallel(model, device_ids=None)
    half = DDP_BATCH // WORLD
    x = _ddp_data(torch)[rank * half:(rank + 1) * half].to(device)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss = ddp(x).square().mean()
    loss.backward()
    opt.step()
    return {"params": [p.detach().cpu().reshape(-1).tolist() for p in model.parameters()],
            "loss": float(loss.detach().cpu())}


def _plain_step(torch):
    model = _ddp_model(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(_ddp_data(torch)).square().mean().backward()
    opt.step()
    return [p.detach().reshape(-1).tolist() for p in model.parameters()]


def _both(torch, dist, device, rank):
    result = {}
    try:
        result.update(_collectives(torch, dist, device, rank))
    except Exception as exc:
        result["all_reduce_error"] = "%s: %s" % (type(exc).__name__, error_texts.first_line(exc, 500))
    try:
        result.update(_ddp_step(torch, dist, device, rank))
    except Exception as exc:
        result["ddp_step_error"] = "%s: %s" % (type(exc).__name__, error_texts.first_line(exc, 500))
    return result


RANK_WORK = {"both": _both}


def rank_main(requested, work, backend, tensor_device, store, rank, out):
    """One rank (``python -m probes --dist-rank R ...``): join the group, do ``work``, write JSON to ``out``."""
    import json

    result = {"rank": rank}
    try:
        import torch

        from probes.checks import context

        context.build_context(torch, requested)  # activates the device (refdev, a plugin) as the worker does
        device = torch.device(tensor_device)
        module = getattr(torch, device.type, None) if device.type != "cpu" else None
        set_device = getattr(module, "set_device", None)
        if device.index is not None and set_device is not None:
            set_device(device.index)  # NCCL and its kind bind a rank to its current device
        dist = torch.distributed
        dist.init_process_group(backend, init_method="file://" + store, rank=rank, world_size=WORLD,
                                timeout=datetime.timedelta(seconds=TIMEOUT_S))
        try:
            result.update(RANK_WORK[work](torch, dist, device, rank))
        finally:
            dist.destroy_process_group()
    except Exception as exc:
        result["error"] = "%s: %s" % (type(exc).__name__, error_texts.first_line(exc, 500))
    with open(out, "w") as handle:
        json.dump(result, handle)
    return 0


def _run_ranks(ctx, work, backend, tensor_device):
    """The ranks' results for ``work`` (all_reduce, ddp_step): both are done by one launch of ``WORLD`` rank
    processes, kept for the worker's later check. Raises RuntimeError naming what failed."""
    cache = ctx.__dict__.setdefault("_distributed_runs", {})
    key = (backend, str(tensor_device))
    if key not in cache:
        try:
            cache[key] = (_launch_ranks(ctx, "both", backend, tensor_device), None)
        except RuntimeError as exc:
            cache[key] = (None, str(exc))
    results, problem = cache[key]
    if problem is not None:
        raise RuntimeError(problem)
    errors = ["rank %d: %s" % (r["rank"], r[work + "_error"]) for r in results if r.get(work + "_error")]
    if errors:
        raise RuntimeError("; ".join(errors))
    return results


def rank_device(tensor_device, rank):
    """Rank r's device: ``cuda:*`` (distinct devices) becomes ``cuda:r``; any other device is shared as given."""
    text = str(tensor_device)
    return text[:-1] + str(rank) if text.endswith(":*") else text


def _launch_ranks(ctx, work, backend, tensor_device):
    """Start ``WORLD`` rank processes; their results, rank order. Raises RuntimeError naming what failed."""
    import json
    import subprocess

    launch = ctx.launch
    workdir = tempfile.mkdtemp(prefix="accelenv-dist-")
    try:
        store = os.path.join(workdir, "store")
        outs = [os.path.join(workdir, "rank%d.json" % r) for r in range(WORLD)]
        procs = [subprocess.Popen(launch.argv + ["--device", str(ctx.device), "--dist-rank", str(r), "--dist-work",
                                                 work, "--dist-backend", backend, "--dist-tensor-device",
                                                 rank_device(tensor_device, r), "--dist-store", store,
                                                 "--dist-out", outs[r]],
                                  env=launch.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, universal_newlines=True)
                 for r in range(WORLD)]
        tails = []
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=TIMEOUT_S + 30)
            except subprocess.TimeoutExpired:
                for other in procs:
                    other.kill()
                raise RuntimeError("the %d-rank %s group did not finish in %d s"
                                   % (WORLD, backend, TIMEOUT_S + 30)) from None
            tails.append((err or "").strip()[-300:])
        results = []
        for r, out in enumerate(outs):
            if not os.path.exists(out):
                raise RuntimeError("rank %d died (exit %s): %s" % (r, procs[r].returncode, tails[r]))
            with open(out) as handle:
                results.append(json.load(handle))
        errors = ["rank %d: %s" % (r["rank"], r["error"]) for r in results if r.get("error")]
        if errors:
            raise RuntimeError("; ".join(errors))
        return results
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _gated(run):
    def check(ctx):
        torch = ctx.torch
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available():
            return checks.unsupported("torch.distributed is not available in this torch build")
        wanted = device_backend(ctx, dist)
        count = 1 if ctx.is_cpu else _device_count(ctx)
        distinct = not ctx.is_cpu and count >= WORLD
        if ctx.is_cpu:
            wanted = "gloo"
        elif ctx.device_type in GLOO_DEVICES and _backend_available(dist, "gloo") and (
                wanted is None or not _backend_available(dist, wanted)):
            wanted = "gloo"  # gloo moves CUDA tensors itself, through host memory: not a device collective
        if wanted is None or not _backend_available(dist, wanted):
            return _cpu_only(ctx, dist, run, wanted)
        tensor_device = "%s:*" % ctx.device_type if distinct else ctx.device
        try:
            outcome = run(ctx, wanted, tensor_device)
        except Exception as exc:
            data = {"backend": wanted, "tensor_device": str(tensor_device), "error": error_texts.first_line(exc, 500)}
            return checks.failed("the %s backend torch.distributed uses for %s failed on %s tensors: %s"
                                 % (wanted, ctx.device_type, tensor_device, data["error"]), **data)
        outcome.data.update(device_count=count, distinct_devices=distinct,
                            device_collective=not ctx.is_cpu and wanted != "gloo")
        if outcome.status != "passed" or ctx.is_cpu:
            return outcome
        if not distinct:
            return checks.skipped("%s; but both ranks ran on the one %s device there is (device_count() = %d): a "
                                  "collective across devices needs %d of them" % (outcome.detail, ctx.device_type,
                                                                                 count, WORLD), **outcome.data)
        if wanted == "gloo":
            return checks.unsupported("%s; but on gloo, which copies %s tensors through host memory: not a device "
                                      "collective (no %s backend)" % (outcome.detail, ctx.device_type,
                                                                      DEVICE_BACKENDS.get(ctx.device_type)),
                                      **outcome.data)
        return outcome

    return check


def _device_count(ctx):
    module = ctx.device_module
    try:
        return int(module.device_count()) if module is not None else 1
    except Exception:
        return 1


def _cpu_only(ctx, dist, run, wanted):
    why = ("torch.distributed has no collective backend for %s" % ctx.device_type if wanted is None
           else "the %s backend for %s is not available in this torch" % (wanted, ctx.device_type))
    data = {"backend": None, "wanted_backend": wanted, "cpu_fallback": True}
    if not _backend_available(dist, "gloo"):
        return checks.unsupported(why + "; gloo is not available either", **data)
    try:
        cpu = run(ctx, "gloo", "cpu")
        data["gloo_cpu"] = cpu.status
    except Exception as exc:
        data["gloo_cpu"] = "error: %s" % error_texts.first_line(exc, 200)
    return checks.unsupported("%s; only gloo on CPU tensors ran (%s), which says nothing about the device"
                              % (why, data["gloo_cpu"]), **data)


def all_reduce(ctx, backend, device):
    results = _run_ranks(ctx, "all_reduce", backend, device)
    want_sum = [3.0, 6.0, 9.0, 12.0]
    want_copy = [10.0, 20.0, 30.0, 40.0]
    data = {"backend": backend, "tensor_device": str(device), "ranks": WORLD,
            "all_reduce": [r["all_reduce"] for r in results], "broadcast": [r["broadcast"] for r in results]}
    wrong = []
    if any(r["all_reduce"] != want_sum for r in results):
        wrong.append("all_reduce(SUM) gave %s, expected %s on every rank" % (data["all_reduce"], want_sum))
    if any(r["broadcast"] != want_copy for r in results):
        wrong.append("broadcast from rank 0 gave %s, expected %s on every rank" % (data["broadcast"], want_copy))
    if wrong:
        return checks.failed("; ".join(wrong), **data)
    return checks.passed("all_reduce sums, broadcast copies and barrier returns across %d %s ranks (%s tensors)"
                         % (WORLD, backend, device), **data)


def ddp_step(ctx, backend, device):
    results = _run_ranks(ctx, "ddp_step", backend, device)
    plain = _plain_step(ctx.torch)

    def worst(a, b):
        return max(abs(x - y) for pa, pb in zip(a, b) for x, y in zip(pa, pb))

    across = worst(results[0]["params"], results[1]["params"])
    versus_plain = max(worst(r["params"], plain) for r in results)
    data = {"backend": backend, "tensor_device": str(device), "ranks": WORLD, "max_diff_across_ranks": across,
            "max_diff_vs_full_batch": versus_plain, "losses": [r["loss"] for r in results]}
    if across > 1e-6:
        return checks.failed("after one DDP step the ranks' parameters differ by %.3g: gradients were not "
                             "all-reduced" % across, **data)
    if versus_plain > 1e-5:
        return checks.failed("a %d-rank DDP step differs from one step on the whole batch by %.3g: the gradients "
                             "were not averaged" % (WORLD, versus_plain), **data)
    return checks.passed("a %d-rank DistributedDataParallel step on %s (%s) equals one step on the whole batch"
                         % (WORLD, device, backend), **data)


#: the rank processes start torch (seconds each on a small host) and bound themselves (TIMEOUT_S + 30):
#: the check's own limit, whatever the suite's --timeout
CHECK_TIMEOUT_S = TIMEOUT_S + 60


def plan(ctx):
    return [checks.Check("distributed.all_reduce", "distributed", _gated(all_reduce), timeout=CHECK_TIMEOUT_S),
            checks.Check("distributed.ddp_step", "distributed", _gated(ddp_step), timeout=CHECK_TIMEOUT_S)]
