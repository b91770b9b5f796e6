"""compile: ``torch.compile`` stage by stage on the device, each stage compared with eager.

Stages, each its own check with its own timeout (``STAGE_TIMEOUT_S``; a cold inductor compile on a slow
CPU host takes a minute or more): dynamo with the ``eager`` backend (graph capture only), ``aot_eager``
(plus AOTAutograd, forward and backward), ``inductor`` (generated kernels). ``eager`` and ``aot_eager``
compile a small MLP (forward and backward) and two functions (an elementwise chain and a reduction with a
matmul); ``inductor`` compiles the two functions as one graph (each graph is a C++ or Triton compile),
and under ``--deep`` all three. Outputs and gradients are compared with eager on the same device. The failing
stage names itself and keeps the first line of its error; a backend inductor has no code generator for is
``unsupported``. The group runs in a worker of its own, without the breadcrumb dispatch mode (dynamo does not
compile under one); its eager references run first, inside ``ctx.traced()``, so a kernel that crashed or hung
elsewhere is refused (or named) there rather than inside a compiled graph.
"""

import re

from probes.checks import error_texts
from probes.checks import outcome as checks

STAGES = ("eager", "aot_eager", "inductor")
STAGE_TIMEOUT_S = {"eager": 120.0, "aot_eager": 180.0, "inductor": 420.0}
ATOL, RTOL = 1e-4, 1e-4
_NO_CODEGEN = re.compile(r"(?i)(?:no (?:device|scheduling|wrapper codegen)[^\n]*for|"
                         r"(?:device|backend) [^\n]*is not supported|get_scheduling_for_device|"
                         r"Unsupported device type|does not support device)")


def _pointwise(torch, x, y):
    return torch.sigmoid(x) * torch.tanh(y) + (x - y).abs().sqrt()


def _reduction(torch, a, b):
    return torch.softmax(a @ b, dim=-1).sum(dim=0) + a.mean()


def _combined(torch, x, y, a, b):
    return _pointwise(torch, x, y).sum() + _reduction(torch, a, b).sum()


def _inputs(ctx):
    torch = ctx.torch
    gen = torch.Generator().manual_seed(7)
    return [torch.randn(8, 16, generator=gen).to(ctx.device) for _ in range(2)], \
        [torch.randn(12, 16, generator=gen).to(ctx.device), torch.randn(16, 6, generator=gen).to(ctx.device)]


def _model(ctx):
    torch = ctx.torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to(ctx.device)


def _train_grads(torch, model, x):
    for p in model.parameters():
        p.grad = None
    out = model(x)
    out.square().mean().backward()
    return out.detach(), [p.grad.detach().clone() for p in model.parameters()]


def _close(torch, got, want):
    try:
        torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL, check_device=False)
    except AssertionError as exc:
        return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "differs"
    return None


def inductor_backend(ctx):
    """(True, None) when inductor has a code generator for the device, (False, why) when it has none,
    (None, None) when this torch cannot tell (then the compile itself answers)."""
    if ctx.is_cpu:
        return True, None
    try:
        from torch._inductor.codegen import common

        init = getattr(common, "init_backend_registration", None)
        if init is not None:
            init()
        scheduling = common.get_scheduling_for_device(ctx.device_type)
    except Exception:
        return None, None
    if scheduling is None:
        return False, ("inductor has no code generator registered for %s (a backend adds one with "
                       "torch._inductor.codegen.common.register_backend_for_device)" % ctx.device_type)
    return True, None


def _model_phase(ctx, compile_fn, stage, model):
    torch = ctx.torch
    with ctx.traced():  # eager first, under the harness's mode: a kernel that crashed or hung is refused here
        x = torch.randn(10, 16, generator=torch.Generator().manual_seed(3)).to(ctx.device)
        want_out, want_grads = _train_grads(torch, model, x)
    compiled = compile_fn(model, backend=stage)
    got_out, got_grads = _train_grads(torch, compiled, x)
    return _close(torch, [got_out.cpu()] + [g.cpu() for g in got_grads],
                  [want_out.cpu()] + [g.cpu() for g in want_grads])


def _phases(ctx, compile_fn, stage, light):
    """[(phase, compare)] in order: each compare compiles one thing and returns what differs from eager."""
    torch = ctx.torch
    with ctx.traced():
        pw_in, red_in = _inputs(ctx)
        model = _model(ctx)

    def against_eager(traced, fn, inputs):
        def compare():
            with ctx.traced():  # eager first, under the harness's mode: a kernel that crashed or hung is refused
                want = fn(torch, *inputs).cpu()
            return _close(torch, compile_fn(traced, backend=stage)(*inputs).cpu(), want)

        return compare

    if light:
        # One graph, one generated kernel file: each graph costs inductor a C++ (or Triton) compile of
        # several seconds on a loaded host; --deep adds the model forward and backward.
        return [("pointwise and reduction in one graph",
                 against_eager(lambda x, y, a, b: _combined(torch, x, y, a, b), _combined, pw_in + red_in))]
    return [("pointwise", against_eager(lambda x, y: _pointwise(torch, x, y), _pointwise, pw_in)),
            ("reduction", against_eager(lambda a, b: _reduction(torch, a, b), _reduction, red_in)),
            ("model forward and backward", lambda: _model_phase(ctx, compile_fn, stage, model))]


def _compile_error(ctx, stage, phase, exc, data):
    """The entry for a compile (or compiled run) that raised in ``phase``."""
    data.update(phase=phase, error=error_texts.first_line(exc, 500), exception=type(exc).__name__)
    info = error_texts.classify_unsupported(exc)
    text = str(exc)[:4000]
    if info is not None and info.get("aten_op"):
        data.update(aten_op=info["aten_op"], backend_reported=info.get("backend"))
        return checks.unsupported("torch.compile(backend=%r) on %s: %s is not implemented (%s)"
                                  % (stage, ctx.device, info["aten_op"], phase), **data)
    if stage == "inductor" and not ctx.is_cpu and _NO_CODEGEN.search(text):
        return checks.unsupported("inductor has no code generator for %s: %s" % (ctx.device_type, data["error"]),
                                  **data)
    return checks.failed("torch.compile(backend=%r) failed on %s (%s): %s"
                         % (stage, ctx.device, phase, data["error"]), **data)


def _unavailable(ctx, stage):
    """The skip or unsupported entry when this torch cannot compile for ``stage`` at all, else None."""
    torch = ctx.torch
    if getattr(torch, "compile", None) is None:
        return checks.skipped("torch %s has no torch.compile (it arrived in 2.0)" % torch.__version__)
    try:
        import torch._dynamo as dynamo
        dynamo.reset()
    except Exception as exc:
        return checks.skipped("torch._dynamo cannot be imported: %s" % error_texts.first_line(exc))
    if stage == "inductor":
        has, why = inductor_backend(ctx)
        if has is False:
            return checks.unsupported(why, stage=stage, backend=stage)
    return None


def run_stage(ctx, stage):
    refused = _unavailable(ctx, stage)
    if refused is not None:
        return refused
    compile_fn = ctx.torch.compile
    data = {"stage": stage, "backend": stage}
    light = stage == "inductor" and not ctx.options.get("deep")
    phases = _phases(ctx, compile_fn, stage, light)
    phase, problem = "compile", None
    try:
        for name, compare in phases:
            phase = name  # the phase an exception names
            problem = compare()
            if problem is not None:
                break
    except Exception as exc:
        return _compile_error(ctx, stage, phase, exc, data)
    if problem is not None:
        data["phase"] = phase
        return checks.failed("torch.compile(backend=%r) differs from eager on %s (%s): %s"
                             % (stage, ctx.device, phase, problem), **data)
    detail = "torch.compile(backend=%r) matches eager on %s (%s)" % (
        stage, ctx.device, "one fused function; --deep adds an MLP forward and backward" if light
        else "two functions, an MLP forward and backward")
    return checks.passed(detail, **data)


def plan(ctx):
    return [checks.Check("compile.%s" % stage, "compile", lambda c, s=stage: run_stage(c, s),
                         timeout=STAGE_TIMEOUT_S[stage]) for stage in STAGES]
