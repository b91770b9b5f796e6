"""models: two common model shapes trained and run on the device, against the same on CPU.

- ``resnet``: a ResNet-style CNN (conv, batch norm, ReLU, max pooling, a residual block with its add,
  adaptive average pooling to 2x2 so the pooling's own kernel runs, a linear head);
- ``transformer``: one pre-norm transformer block (token embedding, multi-head attention through
  ``scaled_dot_product_attention``, layer norm, a GELU MLP, dropout 0, a linear head).

Per model, three checks: ``train.float32`` (forward, backward and an SGD-with-momentum step from the same
weights and data on the device and on CPU; loss, every gradient and every parameter compared), ``train.
autocast`` (the same step under the device's autocast dtype, compared with CPU float32 within a
mixed-precision tolerance; ``skipped`` pointing at ``amp.autocast_matmul`` where autocast is a no-op on the
device, which the amp group reports as ``unsupported``) and ``inference`` (``eval()`` under
``torch.inference_mode()``). A kernel the device lacks is ``unsupported`` naming the aten op, as in the ops
group; this is a required group: a device that cannot run these models fails the run.

Built from ``torch.nn`` here, no download; each step runs in milliseconds on a CPU.
"""

import copy

from probes.checks import blame, error_texts
from probes.checks import outcome as checks
from probes.checks.context import CPU_SAME_DEVICE
from probes.checks.smoke import device_failure

FLOAT32_TOL = 1e-3  # max abs error relative to the largest magnitude of the tensor compared, float32 both sides
AUTOCAST_TOL = 5e-2  # relative error in norm (|got - want| / |want|), against CPU autocast in the same dtype
AUTOCAST_FLOAT32_TOL = 0.15  # the same, against CPU float32 where CPU has no autocast for the dtype
LR = 0.05
STEPS = 2


def _resnet(torch):
    nn = torch.nn

    class Block(nn.Module):  # type: ignore[name-defined]  # torch is the function's argument
        def __init__(self, channels):
            nn.Module.__init__(self)
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + x)  # the residual add

    class ResNetLike(nn.Module):  # type: ignore[name-defined]
        def __init__(self):
            nn.Module.__init__(self)
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2))
            self.block = Block(8)
            self.pool = nn.AdaptiveAvgPool2d((2, 2))  # 2x2, not 1x1: 1x1 lowers to mean and skips the kernel
            self.head = nn.Linear(8 * 2 * 2, 4)

        def forward(self, x):
            return self.head(torch.flatten(self.pool(self.block(self.stem(x))), 1))

    return ResNetLike()


def _transformer(torch, vocab=32, dim=16, heads=2):
    nn = torch.nn
    functional = torch.nn.functional

    class Block(nn.Module):  # type: ignore[name-defined]  # torch is the function's argument
        def __init__(self):
            nn.Module.__init__(self)
            self.embed = nn.Embedding(vocab, dim)
            self.norm1 = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.drop = nn.Dropout(0.0)
            self.head = nn.Linear(dim, vocab)

        def forward(self, tokens):
            x = self.embed(tokens)
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
            q, k, v = (y.reshape(b, t, heads, dim // heads).transpose(1, 2) for y in (q, k, v))
            attn = functional.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
            x = x + self.drop(self.proj(attn.transpose(1, 2).reshape(b, t, dim)))
            x = x + self.drop(self.mlp(self.norm2(x)))
            return self.head(x)

    return Block()


def _resnet_data(torch):
    gen = torch.Generator().manual_seed(3)
    return torch.randn(4, 3, 16, 16, generator=gen), torch.randint(0, 4, (4,), generator=gen)


def _transformer_data(torch):
    gen = torch.Generator().manual_seed(4)
    tokens = torch.randint(0, 32, (2, 8), generator=gen)
    return tokens, torch.randint(0, 32, (2, 8), generator=gen)


def _loss(torch, name, out, target):
    if name == "transformer":
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), target.reshape(-1))
    return torch.nn.functional.cross_entropy(out.float(), target)


MODELS = {"resnet": (_resnet, _resnet_data), "transformer": (_transformer, _transformer_data)}


def build(torch, name):
    """(model, inputs, targets) on CPU, from fixed seeds: the same every call."""
    make, data = MODELS[name]
    torch.manual_seed(0)
    model = make(torch)
    x, y = data(torch)
    return model, x, y


def train(torch, name, model, x, y, device, autocast_dtype=None, steps=STEPS):
    """``steps`` SGD steps of a copy of ``model`` on ``device``; (model, losses, first-step grads on CPU)."""
    model = copy.deepcopy(model).to(device)
    model.train()
    x, y = x.to(device), y.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    losses, grads = [], None
    for _ in range(steps):
        opt.zero_grad()
        if autocast_dtype is not None:
            with torch.autocast(device_type=torch.device(device).type, dtype=autocast_dtype):
                loss = _loss(torch, name, model(x), y)
        else:
            loss = _loss(torch, name, model(x), y)
        loss.backward()
        if grads is None:
            grads = dict((n, p.grad.detach().float().cpu()) for n, p in model.named_parameters() if p.grad is not None)
        opt.step()
        losses.append(float(loss.detach().float().cpu()))
    return model, losses, grads


def _rel_err(torch, got, want, norm=False):
    if not want.numel():
        return 0.0
    diff = got.float() - want.float()
    if norm:
        return float(diff.norm()) / max(float(want.float().norm()), 1e-6)
    return float(diff.abs().max()) / max(float(want.abs().max()), 1e-6)


def _worst(torch, got, want, norm=False):
    """(name, relative error) of the worst-matching tensor of two {name: tensor} dicts."""
    worst = (None, 0.0)
    for key, ref in want.items():
        if key not in got:
            return key, float("inf")
        err = _rel_err(torch, got[key], ref, norm)
        if err > worst[1] or err != err:
            worst = (key, err)
    return worst


def _compare_training(ctx, name, dev, cpu, tol, label, norm=False):
    torch = ctx.torch
    dev_model, dev_losses, dev_grads = dev
    cpu_model, cpu_losses, cpu_grads = cpu
    if not all(loss == loss and abs(loss) != float("inf") for loss in dev_losses):
        return checks.failed("%s %s: the loss is not finite on %s: %r" % (name, label, ctx.device, dev_losses),
                             losses=dev_losses)
    loss_err = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(dev_losses, cpu_losses))
    grad_at, grad_err = _worst(torch, dev_grads, cpu_grads, norm)
    dev_params = dict((n, p.detach().cpu()) for n, p in dev_model.state_dict().items() if p.is_floating_point())
    cpu_params = dict((n, p.detach()) for n, p in cpu_model.state_dict().items() if p.is_floating_point())
    param_at, param_err = _worst(torch, dev_params, cpu_params, norm)
    data = {"losses": dev_losses, "cpu_losses": cpu_losses, "loss_rel_err": loss_err, "grad_rel_err": grad_err,
            "worst_grad": grad_at, "param_rel_err": param_err, "worst_param": param_at, "tolerance": tol,
            "steps": len(dev_losses)}
    compared = (("loss", loss_err, None), ("gradient", grad_err, grad_at), ("parameter", param_err, param_at))
    for what, err, at in compared:
        if not err <= tol:
            return checks.failed("%s %s on %s differs from CPU: %s%s relative error %.3g (tolerance %g)" % (
                name, label, ctx.device, what, " %s" % at if at else "", err, tol), **data)
    detail = "%s %s: forward, backward and %d SGD steps match CPU (worst relative error %.3g)" % (
        name, label, len(dev_losses), max(loss_err, grad_err, param_err))
    if ctx.is_cpu:
        detail += "; " + CPU_SAME_DEVICE
    return checks.passed(detail, **data)


def _blamed_error(ctx, what, work):
    """``work()``'s result; where it raises an error that is not the backend saying it lacks an op, not an
    out-of-memory and not a blocked op, the op whose device result first differs from CPU is looked for (a
    wrong dtype from one kernel surfaces as a later op's "mat1 and mat2 must have the same dtype"): found,
    the check fails naming it (``BlamedError``); not found, the error goes on as it was."""
    try:
        return work()
    except checks.BlockedOp:
        raise
    except Exception as exc:
        if ctx.is_cpu or error_texts.classify_unsupported(exc) or error_texts.is_oom(exc, ctx.torch):
            raise
        error = error_texts.first_line(exc)
        outcome = blame.blamed(ctx, checks.failed("%s on %s: %s" % (what, ctx.device, error), error=error), work)
        if "blamed_op" not in outcome.data:
            raise
        raise BlamedError(outcome) from exc


class BlamedError(Exception):
    """A device error traced to the first op whose result differs from CPU; ``outcome`` is the check's."""

    def __init__(self, outcome):
        Exception.__init__(self, outcome.detail)
        self.outcome = outcome


def train_float32(ctx, name):
    torch = ctx.torch
    model, x, y = build(torch, name)
    dev = _blamed_error(ctx, "%s float32 training" % name, lambda: train(torch, name, model, x, y, ctx.device))
    cpu = train(torch, name, model, x, y, "cpu")
    outcome = _compare_training(ctx, name, dev, cpu, FLOAT32_TOL, "float32 training")
    if outcome.status == "failed":  # name the kernel: one step again, op by op against CPU
        outcome = blame.blamed(ctx, outcome, lambda: train(torch, name, model, x, y, ctx.device, steps=1))
    return outcome


def train_autocast(ctx, name):
    from probes.checks import amp

    torch = ctx.torch
    if not amp._available(ctx):
        return checks.skipped("autocast is not available for %s in torch %s (amp.autocast_matmul says so)"
                              % (ctx.device_type, torch.__version__))
    dtype = amp.autocast_dtype(ctx)
    label = "%s autocast training" % str(dtype).replace("torch.", "")
    if amp.autocast_is_noop(ctx, dtype):
        return checks.skipped("autocast is a no-op on %s, so a %s step is a float32 step (train.float32 covers it; "
                              "amp.autocast_matmul reports the gap)" % (ctx.device_type, label),
                              autocast_dtype=str(dtype).replace("torch.", ""))
    model, x, y = build(torch, name)
    dev = train(torch, name, model, x, y, ctx.device, autocast_dtype=dtype, steps=1)
    try:  # CPU autocast in the same dtype is the like-for-like reference where CPU has it
        cpu = train(torch, name, model, x, y, "cpu", autocast_dtype=dtype, steps=1)
        reference, tol = "CPU %s autocast" % str(dtype).replace("torch.", ""), AUTOCAST_TOL
    except Exception:
        cpu = train(torch, name, model, x, y, "cpu", steps=1)
        reference, tol = "CPU float32", AUTOCAST_FLOAT32_TOL
    outcome = _compare_training(ctx, name, dev, cpu, tol, label + " (vs %s)" % reference, norm=True)
    outcome.data["autocast_dtype"] = str(dtype).replace("torch.", "")
    return outcome


def inference(ctx, name):
    torch = ctx.torch
    model, x, _ = build(torch, name)
    model.eval()
    with torch.inference_mode():
        want = model(x)
        dev_model = copy.deepcopy(model).to(ctx.device)

    def run():
        with torch.inference_mode():
            return dev_model(x.to(ctx.device)).cpu()

    got = _blamed_error(ctx, "%s inference" % name, run)
    err = _rel_err(torch, got, want)
    data = {"rel_err": err, "tolerance": FLOAT32_TOL, "shape": list(got.shape)}
    if tuple(got.shape) != tuple(want.shape) or not err <= FLOAT32_TOL:
        return blame.blamed(ctx, checks.failed("%s inference on %s differs from CPU: relative error %.3g (tolerance %g)"
                                               % (name, ctx.device, err, FLOAT32_TOL), **data), run)
    detail = "%s eval() under inference_mode matches CPU (relative error %.3g)" % (name, err)
    if ctx.is_cpu:
        detail += "; " + CPU_SAME_DEVICE
    return checks.passed(detail, **data)


def _bound(fn, name):
    def run(ctx):
        try:
            return fn(ctx, name)
        except BlamedError as exc:
            return exc.outcome

    run.__name__ = "%s %s" % (name, fn.__name__)
    return device_failure(run)


def plan(ctx):
    planned = []
    for name in ("resnet", "transformer"):
        planned.append(checks.Check("models.%s.train.float32" % name, "models", _bound(train_float32, name)))
        planned.append(checks.Check("models.%s.train.autocast" % name, "models", _bound(train_autocast, name)))
        planned.append(checks.Check("models.%s.inference" % name, "models", _bound(inference, name)))
    return planned
