"""smoke: a real training step on the device, agreement with CPU, and a device checkpoint read on CPU.

A 16-32-4 MLP, cross-entropy, AdamW, several steps from the same initial weights and data on the device
and on CPU. float32 throughout (TF32 is turned off by the worker), so the two runs should agree closely.
"""

import copy
import io

from probes.checks import outcome as checks
from probes.checks.context import CPU_SAME_DEVICE
from probes.harness import error_texts

STEPS = 6
LR = 1e-2
# Adam's first step is lr * g / (|g| + eps): with a tiny eps a gradient at rounding level (sign differs
# between device and CPU) would move a weight by a whole lr. This eps keeps such weights still.
ADAM_EPS = 1e-3
LOSS_RTOL = 1e-3
PARAM_ATOL = 1e-3


def _model_and_data(torch):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 16, generator=gen)
    y = torch.randint(0, 4, (64,), generator=gen)
    return model, x, y


def _train(torch, model, x, y, device):
    model = copy.deepcopy(model).to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, eps=ADAM_EPS)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().cpu()))
    return model, losses


def _same_device_note(ctx, detail):
    return detail + ("; " + CPU_SAME_DEVICE if ctx.is_cpu else "")


def train_step(ctx):
    torch = ctx.torch
    model, x, y = _model_and_data(torch)
    _, losses = _train(torch, model, x, y, ctx.device)
    if not all(loss == loss and abs(loss) != float("inf") for loss in losses):
        return checks.failed("loss is not finite on %s: %r" % (ctx.device, losses), losses=losses)
    if not losses[-1] < losses[0]:
        return checks.failed("loss did not fall over %d AdamW steps: %r" % (STEPS, losses), losses=losses)
    return checks.passed("loss fell from %.4f to %.4f over %d AdamW steps on %s"
                         % (losses[0], losses[-1], STEPS, ctx.device), losses=losses)


def cpu_agreement(ctx):
    torch = ctx.torch
    model, x, y = _model_and_data(torch)
    dev_model, dev_losses = _train(torch, model, x, y, ctx.device)
    cpu_model, cpu_losses = _train(torch, model, x, y, "cpu")
    loss_err = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(dev_losses, cpu_losses))
    param_err = 0.0
    for (_name, p_dev), (_, p_cpu) in zip(dev_model.named_parameters(), cpu_model.named_parameters()):
        param_err = max(param_err, float((p_dev.detach().cpu() - p_cpu.detach()).abs().max()))
    data = {"max_loss_rel_err": loss_err, "max_param_abs_err": param_err, "steps": STEPS,
            "loss_rtol": LOSS_RTOL, "param_atol": PARAM_ATOL}
    if loss_err > LOSS_RTOL or param_err > PARAM_ATOL:
        return checks.failed("device and CPU training diverge: loss rel err %.3g (max %g), param abs err %.3g "
                             "(max %g)" % (loss_err, LOSS_RTOL, param_err, PARAM_ATOL), **data)
    return checks.passed(_same_device_note(
        ctx, "device and CPU agree after %d steps (param abs err %.3g)" % (STEPS, param_err)), **data)


def checkpoint(ctx):
    torch = ctx.torch
    model, x, y = _model_and_data(torch)
    dev_model, _ = _train(torch, model, x, y, ctx.device)
    buffer = io.BytesIO()
    torch.save(dev_model.state_dict(), buffer)
    buffer.seek(0)
    try:
        state = torch.load(buffer, map_location="cpu", weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        buffer.seek(0)
        state = torch.load(buffer, map_location="cpu")
    cpu_model = copy.deepcopy(model)
    cpu_model.load_state_dict(state)
    if any(t.device.type != "cpu" for t in state.values()):
        return checks.failed("map_location='cpu' left tensors on %s" % ctx.device)
    expected = dev_model(x.to(ctx.device)).detach().cpu()
    got = cpu_model(x).detach()
    err = float((expected - got).abs().max())
    if err > PARAM_ATOL:
        return checks.failed("the checkpoint loaded on CPU computes differently (max abs err %.3g)" % err,
                             max_abs_err=err)
    return checks.passed(_same_device_note(
        ctx, "state_dict saved on %s, loaded on CPU: outputs agree (max abs err %.3g)" % (ctx.device, err)),
        max_abs_err=err, bytes=len(buffer.getvalue()))


def device_failure(fn):
    """A training step that cannot run on the device: ``unsupported`` naming the aten op when the dispatcher
    says the backend lacks it (as the op checks report it), else ``failed``."""

    def run(ctx, *args):
        try:
            return fn(ctx, *args)
        except Exception as exc:
            info = error_texts.classify_unsupported(exc) or {}
            data = dict((k, v) for k, v in info.items() if v is not None)
            data["error"] = error_texts.first_line(exc)
            if info.get("aten_op"):
                data.setdefault("backend", ctx.backend)
                detail = "%s on %s needs %s, which is not implemented for backend %s" % (
                    fn.__name__, ctx.device, info["aten_op"], data["backend"])
                return checks.unsupported(detail, **data)
            if error_texts.is_oom(exc, ctx.torch):
                data["out_of_memory"] = True
            return checks.failed("%s on %s: %s" % (fn.__name__, ctx.device, data["error"]), **data)

    return run


def plan(ctx):
    return [
        checks.Check("smoke.train_step", "smoke", device_failure(train_step)),
        checks.Check("smoke.cpu_agreement", "smoke", device_failure(cpu_agreement)),
        checks.Check("smoke.checkpoint", "smoke", device_failure(checkpoint)),
    ]
