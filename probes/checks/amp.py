"""amp: autocast lowers matmul precision on the device, and a mixed-precision training step learns.

The autocast dtype is the device's default (``torch.get_autocast_dtype``, torch 2.4+; before that
float16 for CUDA-like devices and bfloat16 for CPU). CPU bfloat16 autocast is a real check on CPU. A
float16 step uses a GradScaler where torch has one for the device.
"""

from typing import Any, Dict

from probes.checks import outcome as checks
from probes.checks.smoke import device_failure

FALLBACK_AUTOCAST_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "xpu": "bfloat16", "mps": "float16"}
STEPS = 6


def _available(ctx):
    torch = ctx.torch
    amp = getattr(torch, "amp", None)
    probe = getattr(amp, "is_autocast_available", None)
    if probe is not None:
        try:
            return bool(probe(ctx.device_type))
        except Exception:
            return False
    return ctx.device_type in ("cpu", "cuda")  # torch < 2.4: autocast covered these two for sure


def autocast_dtype(ctx):
    torch = ctx.torch
    getter = getattr(torch, "get_autocast_dtype", None)
    if getter is not None:
        try:
            return getter(ctx.device_type)
        except Exception:
            pass
    module = ctx.device_module
    supported = getattr(module, "get_amp_supported_dtype", None) if module is not None else None
    if supported is not None:
        try:
            dtypes = supported()
            if dtypes:
                return dtypes[0]
        except Exception:
            pass
    return getattr(torch, FALLBACK_AUTOCAST_DTYPE.get(ctx.device_type, "float16"))


def _gated(fn):
    def run(ctx):
        if not _available(ctx):
            return checks.unsupported("autocast is not available for device type %s in torch %s"
                                  % (ctx.device_type, ctx.torch.__version__))
        return fn(ctx, autocast_dtype(ctx))

    return run


def autocast_matmul(ctx, dtype):
    torch = ctx.torch
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(32, 64, generator=gen)
    b = torch.randn(64, 16, generator=gen)
    with torch.autocast(device_type=ctx.device_type, dtype=dtype):
        out = torch.mm(a.to(ctx.device), b.to(ctx.device))
    data: Dict[str, Any] = {"autocast_dtype": str(dtype).replace("torch.", ""),
                            "output_dtype": str(out.dtype).replace("torch.", "")}
    if out.dtype == torch.float32:
        # Autocast ran and changed nothing: the backend registers no autocast kernels, a gap.
        return checks.unsupported("autocast is a no-op on %s: matmul under %s autocast stayed float32 (the "
                              "backend registers no autocast kernels)"
                              % (ctx.device_type, data["autocast_dtype"]), **data)
    if out.dtype != dtype:
        return checks.failed("autocast produced %s, expected %s" % (out.dtype, dtype), **data)
    err = float((out.float().cpu() - a @ b).abs().max())
    data["max_abs_err"] = err
    if err > 0.5:  # 64-term dot products of N(0,1) in 8-bit-mantissa precision stay well below this
        return checks.failed("autocast matmul is far from float32 (max abs err %.3g)" % err, **data)
    return checks.passed("matmul under autocast ran in %s (max abs err vs float32 %.3g)" % (data["output_dtype"], err),
                         **data)


def autocast_is_noop(ctx, dtype):
    """True when a matmul under autocast on the device still gives float32 (no autocast kernels)."""
    torch = ctx.torch
    a = torch.ones(4, 4, device=ctx.device)
    with torch.autocast(device_type=ctx.device_type, dtype=dtype):
        return torch.mm(a, a).dtype == torch.float32


def _grad_scaler(ctx, dtype, force=False):
    torch = ctx.torch
    if dtype != torch.float16 and not force:
        return None
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler(ctx.device_type)
        except Exception:
            return None
    if ctx.device_type == "cuda":
        return torch.cuda.amp.GradScaler()
    return None


def train_step(ctx, dtype):
    torch = ctx.torch
    if autocast_is_noop(ctx, dtype):
        return checks.unsupported("autocast is a no-op on %s: a %s training step would run in float32 and prove "
                              "nothing about mixed precision" % (ctx.device_type, str(dtype).replace("torch.", "")),
                              autocast_dtype=str(dtype).replace("torch.", ""))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(ctx.device)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 16, generator=gen).to(ctx.device)
    y = torch.randint(0, 4, (64,), generator=gen).to(ctx.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = _grad_scaler(ctx, dtype)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.autocast(device_type=ctx.device_type, dtype=dtype):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        losses.append(float(loss.detach().float().cpu()))
    data = {"autocast_dtype": str(dtype).replace("torch.", ""), "losses": losses, "grad_scaler": scaler is not None}
    if not all(loss == loss for loss in losses) or not losses[-1] < losses[0]:
        return checks.failed("mixed-precision training did not learn: %r" % losses, **data)
    return checks.passed(
        "loss fell from %.4f to %.4f under %s autocast" % (losses[0], losses[-1], data["autocast_dtype"]), **data)


def grad_scaler_skip(ctx, dtype):
    """A GradScaler step with an inf gradient leaves the weights alone and lowers the scale; a finite one steps."""
    torch = ctx.torch
    scaler = _grad_scaler(ctx, dtype, force=True)
    if scaler is None:
        return checks.skipped("torch %s has no GradScaler for %s" % (torch.__version__, ctx.device_type))
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(ctx.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(2)).to(ctx.device)
    before = [p.detach().clone() for p in model.parameters()]
    scale0 = float(scaler.get_scale())
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    model.weight.grad[0, 0] = float("inf")
    scaler.step(opt)
    scaler.update()
    held = all(bool(torch.equal(b, p.detach())) for b, p in zip(before, model.parameters()))
    scale1 = float(scaler.get_scale())
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    scaler.step(opt)
    scaler.update()
    moved = not all(bool(torch.equal(b, p.detach())) for b, p in zip(before, model.parameters()))
    scale2 = float(scaler.get_scale())
    data = {"scale_before": scale0, "scale_after_inf": scale1, "skipped_inf_step": held, "finite_step_applied": moved,
            "scale_after_finite": scale2}
    if scale2 < scale1:  # torch's GradScaler keeps the scale for growth_interval (2000) finite steps, then grows it
        return checks.failed("GradScaler lowered its scale after a step with finite gradients (%g -> %g): it backs "
                             "off without an overflow" % (scale1, scale2), **data)
    if not held:
        return checks.failed("GradScaler applied a step whose gradients held inf: the weights changed", **data)
    if not scale1 < scale0:
        return checks.failed("GradScaler did not lower its scale after an inf gradient (%g -> %g)" % (scale0, scale1),
                             **data)
    if not moved:
        return checks.failed("GradScaler skipped a step with finite gradients", **data)
    return checks.passed("GradScaler skips the inf step (scale %g -> %g) and applies the finite one on %s"
                         % (scale0, scale1, ctx.device), **data)


#: input magnitude whose scaled gradient overflows the dtype (float16 max 65504, bfloat16 max ~3.4e38)
OVERFLOW_INPUT = {"float16": 1e3, "bfloat16": 1e34}


def _overflow_dtype(ctx, dtype):
    """float16 where the device's autocast takes it (the half dtype with a narrow range), else ``dtype``."""
    torch = ctx.torch
    try:
        a = torch.ones(2, 2, device=ctx.device)
        with torch.autocast(device_type=ctx.device_type, dtype=torch.float16):
            if torch.mm(a, a).dtype == torch.float16:
                return torch.float16
    except Exception:
        pass
    return dtype


def _scaled_grads_finite(torch, model, x, scale, device_type=None, dtype=None):
    model.zero_grad()
    if device_type is None:
        out = model(x)
    else:
        with torch.autocast(device_type=device_type, dtype=dtype):
            out = model(x)
    (out.float().square().mean() * scale).backward()
    return out, all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)


def grad_scaler_overflow(ctx, dtype):
    """A real overflow, not a planted inf: an autocast step whose scaled gradients exceed the half dtype's
    range must be caught by GradScaler (the step skipped, the scale lowered). float16 where the device's
    autocast takes it: bfloat16 has float32's exponent range, so a bfloat16 "overflow" overflows in float32
    too and proves nothing; the same step without autocast, in float32, must stay finite, and the Linear's
    output under autocast must be in the half dtype, or the overflow is not the half dtype's."""
    torch = ctx.torch
    dtype = _overflow_dtype(ctx, dtype)
    name = str(dtype).replace("torch.", "")
    if name not in OVERFLOW_INPUT:
        return checks.skipped("autocast dtype %s is not a half dtype that can overflow" % name)
    if autocast_is_noop(ctx, dtype):
        return checks.unsupported("autocast is a no-op on %s: nothing runs in %s, so nothing can overflow"
                                  % (ctx.device_type, name), autocast_dtype=name)
    scaler = _grad_scaler(ctx, dtype, force=True)
    if scaler is None:
        return checks.unsupported("torch %s has no GradScaler for %s" % (torch.__version__, ctx.device_type))
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to(ctx.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.full((16, 8), OVERFLOW_INPUT[name]).to(ctx.device)
    scale0 = float(scaler.get_scale())
    _, control_finite = _scaled_grads_finite(torch, model, x, scale0)
    data = {"autocast_dtype": name, "input": OVERFLOW_INPUT[name], "float32_grads_finite": control_finite}
    if not control_finite:
        return checks.skipped("the same step in float32, without autocast, overflows too: an overflow under %s "
                              "autocast would not be the half dtype's (bfloat16 has float32's range)" % name, **data)
    model.zero_grad()
    before = [p.detach().clone() for p in model.parameters()]
    with torch.autocast(device_type=ctx.device_type, dtype=dtype):
        out = model(x)
    scaler.scale(out.float().square().mean()).backward()
    grads_finite = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
    scaler.step(opt)
    scaler.update()
    held = all(bool(torch.equal(b, p.detach())) for b, p in zip(before, model.parameters()))
    scale1 = float(scaler.get_scale())
    data.update(output_dtype=str(out.dtype).replace("torch.", ""), scaled_grads_finite=grads_finite,
                scale_before=scale0, scale_after=scale1, step_skipped=held)
    if out.dtype != dtype:
        return checks.failed("under %s autocast the Linear's output is %s: autocast did nothing for it"
                             % (name, data["output_dtype"]), **data)
    if grads_finite and scale0 <= 1.0:
        return checks.failed("the GradScaler's scale is %g: it does not scale the loss, so a %s gradient that "
                             "would underflow is lost and nothing here could overflow" % (scale0, name), **data)
    if grads_finite:
        return checks.failed("the scaled %s gradients of inputs of %g stayed finite: nothing overflowed, so the "
                             "step ran in a wider dtype" % (name, OVERFLOW_INPUT[name]), **data)
    if not held:
        return checks.failed("GradScaler applied a step whose %s gradients overflowed: the weights changed" % name,
                             **data)
    if not scale1 < scale0:
        return checks.failed("GradScaler did not lower its scale after the overflow (%g -> %g)" % (scale0, scale1),
                             **data)
    return checks.passed("a real %s overflow was caught: step skipped, scale %g -> %g (the same step in float32 "
                         "stays finite)" % (name, scale0, scale1), **data)


def plan(ctx):
    return [
        checks.Check("amp.autocast_matmul", "amp", _gated(autocast_matmul)),
        checks.Check("amp.train_step", "amp", _gated(device_failure(train_step))),
        checks.Check("amp.grad_scaler_skip", "amp", _gated(device_failure(grad_scaler_skip))),
        checks.Check("amp.grad_scaler_overflow", "amp", _gated(device_failure(grad_scaler_overflow))),
    ]
