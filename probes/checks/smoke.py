"""smoke: a real training step on the device, agreement with CPU, and a device checkpoint read on CPU
(weights, optimizer state and step compared with what was saved).

A 16-32-4 MLP, cross-entropy, AdamW, several steps from the same initial weights and data on the device
and on CPU. float32 throughout (TF32 is turned off by the worker), so the two runs should agree closely.
"""

import copy
import io

from probes.checks import blame, error_texts
from probes.checks import outcome as checks
from probes.checks.context import CPU_SAME_DEVICE

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


def _train(torch, model, x, y, device, steps=STEPS):
    model = copy.deepcopy(model).to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, eps=ADAM_EPS)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().cpu()))
    return model, losses, opt


def _same_device_note(ctx, detail):
    return detail + ("; " + CPU_SAME_DEVICE if ctx.is_cpu else "")


def train_step(ctx):
    torch = ctx.torch
    model, x, y = _model_and_data(torch)
    _, losses, _ = _train(torch, model, x, y, ctx.device)
    if not all(loss == loss and abs(loss) != float("inf") for loss in losses):
        return checks.failed("loss is not finite on %s: %r" % (ctx.device, losses), losses=losses)
    if not losses[-1] < losses[0]:
        return checks.failed("loss did not fall over %d AdamW steps: %r" % (STEPS, losses), losses=losses)
    return checks.passed("loss fell from %.4f to %.4f over %d AdamW steps on %s"
                         % (losses[0], losses[-1], STEPS, ctx.device), losses=losses)


def cpu_agreement(ctx):
    torch = ctx.torch
    model, x, y = _model_and_data(torch)
    dev_model, dev_losses, _ = _train(torch, model, x, y, ctx.device)
    cpu_model, cpu_losses, _ = _train(torch, model, x, y, "cpu")
    loss_err = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(dev_losses, cpu_losses))
    param_err = 0.0
    for (_name, p_dev), (_, p_cpu) in zip(dev_model.named_parameters(), cpu_model.named_parameters()):
        param_err = max(param_err, float((p_dev.detach().cpu() - p_cpu.detach()).abs().max()))
    data = {"max_loss_rel_err": loss_err, "max_param_abs_err": param_err, "steps": STEPS,
            "loss_rtol": LOSS_RTOL, "param_atol": PARAM_ATOL}
    if loss_err > LOSS_RTOL or param_err > PARAM_ATOL:
        outcome = checks.failed("device and CPU training diverge: loss rel err %.3g (max %g), param abs err %.3g "
                                "(max %g)" % (loss_err, LOSS_RTOL, param_err, PARAM_ATOL), **data)
        return blame.blamed(ctx, outcome, lambda: _train(torch, model, x, y, ctx.device, steps=1))
    return checks.passed(_same_device_note(
        ctx, "device and CPU agree after %d steps (param abs err %.3g)" % (STEPS, param_err)), **data)


def state_differences(torch, want, got, path="checkpoint", found=None, limit=6):
    """Where ``got`` (a checkpoint loaded back) differs from ``want`` (what was saved): tensors by dtype, shape
    and exact values, numbers by value, dicts by keys, lists by length; a list of paths with what differs."""
    found = [] if found is None else found
    if len(found) >= limit:
        return found
    if isinstance(want, dict) and isinstance(got, dict):
        _dict_differences(torch, want, got, path, found, limit)
    elif isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        _list_differences(torch, want, got, path, found, limit)
    elif isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        _tensor_difference(torch, want, got, path, found)
    elif type(want) is not type(got) or want != got:
        found.append("%s: %r, saved %r" % (path, got, want))
    return found


def _tensor_difference(torch, want, got, path, found):
    w, g = want.detach().cpu(), got.detach().cpu()
    if w.dtype != g.dtype or w.shape != g.shape or not bool(torch.equal(w, g)):
        found.append("%s: %s, saved %s" % (path, _brief(g), _brief(w)))


def _dict_differences(torch, want, got, path, found, limit):
    if sorted(map(str, want)) != sorted(map(str, got)):
        found.append("%s: keys %s, saved %s" % (path, sorted(map(str, got))[:8], sorted(map(str, want))[:8]))
        return
    for key in want:
        state_differences(torch, want[key], got[key], "%s[%r]" % (path, key), found, limit)


def _list_differences(torch, want, got, path, found, limit):
    if len(want) != len(got):
        found.append("%s: %d items, saved %d" % (path, len(got), len(want)))
        return
    for i, (w, g) in enumerate(zip(want, got)):
        state_differences(torch, w, g, "%s[%d]" % (path, i), found, limit)


def _brief(t):
    values = t.flatten()[:3].tolist() if t.numel() else []
    return "%s%s %s" % (str(t.dtype).replace("torch.", ""), list(t.shape), values)


#: the training step a checkpoint records beside the weights, as training loops do
CHECKPOINT_STEP = 7


def checkpoint(ctx):
    """A checkpoint of the whole training state (weights, AdamW's moments and step counts, the loop's step)
    saved on the device and loaded on CPU holds what was saved, and the weights compute the same."""
    torch = ctx.torch
    model, x, y = _model_and_data(torch)
    dev_model, _, opt = _train(torch, model, x, y, ctx.device)
    saved = {"model": dev_model.state_dict(), "optim": opt.state_dict(), "step": CHECKPOINT_STEP,
             "step_on_device": torch.tensor(CHECKPOINT_STEP, device=ctx.device)}
    buffer = io.BytesIO()
    torch.save(saved, buffer)
    buffer.seek(0)
    try:
        state = torch.load(buffer, map_location="cpu", weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        buffer.seek(0)
        state = torch.load(buffer, map_location="cpu")
    moved = [k for k, t in state["model"].items() if t.device.type != "cpu"]
    if moved:
        return checks.failed("map_location='cpu' left tensors on %s: %s" % (ctx.device, ", ".join(moved[:5])))
    differences = state_differences(torch, saved, state)
    if differences:
        return checks.failed("the checkpoint loaded back differs from what was saved: %s" % "; ".join(differences),
                             differences=differences)
    cpu_model = copy.deepcopy(model)
    cpu_model.load_state_dict(state["model"])
    expected = dev_model(x.to(ctx.device)).detach().cpu()
    got = cpu_model(x).detach()
    err = float((expected - got).abs().max())
    if err > PARAM_ATOL:
        return checks.failed("the checkpoint loaded on CPU computes differently (max abs err %.3g)" % err,
                             max_abs_err=err)
    return checks.passed(_same_device_note(
        ctx, "weights, AdamW state and step %d saved on %s, loaded on CPU unchanged; outputs agree (max abs err %.3g)"
        % (CHECKPOINT_STEP, ctx.device, err)), max_abs_err=err, bytes=len(buffer.getvalue()))


def device_failure(fn):
    """A training step that cannot run on the device: ``unsupported`` naming the aten op when the dispatcher
    says the backend lacks it (as the op checks report it), else ``failed``, naming the first op whose device
    result differs from CPU where one does (``probes.checks.blame``)."""

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
            outcome = checks.failed("%s on %s: %s" % (fn.__name__, ctx.device, data["error"]), **data)
            if data.get("out_of_memory") or isinstance(exc, checks.BlockedOp):
                return outcome
            # a device error is often a wrong kernel earlier on (a promoting add surfacing as "mat1 and mat2
            # must have the same dtype"): the check once more, op by op against CPU, names it
            return blame.blamed(ctx, outcome, lambda: fn(ctx, *args))

    return run


def plan(ctx):
    return [
        checks.Check("smoke.train_step", "smoke", device_failure(train_step)),
        checks.Check("smoke.cpu_agreement", "smoke", device_failure(cpu_agreement)),
        checks.Check("smoke.checkpoint", "smoke", device_failure(checkpoint)),
    ]
