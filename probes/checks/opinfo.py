"""opinfo: PyTorch's own OpInfo samples (``op_db``) run on the device and compared with CPU.

Where this torch ships ``torch.testing._internal.common_methods_invocations`` and its imports (numpy,
expecttest) are present, each OpInfo is one check: for every dtype it declares (of ``TARGET_DTYPES``, and
that the device holds), its sample inputs are made on CPU, copied to the device, run on both, and compared
with ``torch.testing.assert_close``; where the op supports autograd in that dtype, the gradients too (one
fixed cotangent per output); on the first sample, the ``out=`` and in-place variants OpInfo lists.
Default: the first of OpInfo's ``sample_inputs`` per op x dtype, with backward and the variants in the first
dtype that has them; ``--deep``: every one of its ``reference_inputs`` (what ``test_compare_cpu`` runs: the
sample inputs plus, for about a third of the ops, extremal values, non-contiguous and zero-element inputs),
backward and variants in every dtype; ``data.inputs`` says which. An op the device says it ran on the CPU
fallback (a warning, as MPS and vendor plugins give) fails. This is PyTorch's ``test_compare_cpu``
(test/test_ops.py) run the other way round: its tolerance, atol = rtol = 1e-3, widened where the OpInfo
declares a ``toleranceOverride`` / ``precisionOverride`` that applies to that test.

Not counted as failures (skipped with the reason): what OpInfo itself skips or expects to fail in
``test_compare_cpu``, ops returning uninitialised memory (``empty*``), ops with no CPU dtypes, samples whose
CPU run raises, and results that differ between two CPU runs (randomness). The group runs in a worker of
its own (importing OpInfo calls ``disable_global_flags()`` and sets test-suite state); an op that kills
the worker is one ``crashed`` entry and a fresh worker goes on. ``group_summary`` gives the report's
``summary.groups.opinfo``: the counts, the ops x dtypes checked and the deduplicated missing aten ops (part of
the report, not a check). In the default mode backward runs in the first dtype that has it; the other
dtypes are listed in ``data.forward_only`` and the detail says so. torch refusing the device type itself
("mode only supports CPU, CUDA and XPU device type") is ``unsupported``, not a numeric failure.

A failed OpInfo names the kernel to blame (``probes.checks.blame``): its failing sample runs again on the
device, in the failing phase, op by op against CPU, and the first aten op that differs is ``data.blamed_op``
(a wrong ``mm`` fails ``cholesky``'s backward and ``cov``; each names ``aten::mm``). The summary counts the
failed OpInfos per blamed op.
"""

import fnmatch
import importlib.util
import re
import sys
import warnings
from types import FrameType
from typing import Any, Dict, Optional

from probes.checks import blame, error_texts
from probes.checks import outcome as checks

TARGET_DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "int64", "int32", "uint8", "bool")
REQUIRED_MODULES = ("numpy", "expecttest")
COMPARE_TEST = ("TestCommon", "test_compare_cpu")
DEFAULT_TOLERANCE = (1e-3, 1e-3)  # (atol, rtol): test_compare_cpu's
UNINITIALISED = re.compile(r"^(?:new_)?empty(?:_|$)")
FIRST_SAMPLE_TRIES = 3  # default mode: samples tried until one runs on CPU
MAX_TEXT = 400
_ID_CHARS = re.compile(r"[^A-Za-z0-9_.:\-\[\]]")
# torch's own Python-side device-type gate (torch.mode, ...): the backend is refused before any kernel runs
_TORCH_REFUSES = re.compile(r"only supports? [\w ,]+ device types?", re.IGNORECASE)
_WANTS_CPU = re.compile(r"(?i)expected \w+ to be on cpu|(?:must|should) be on cpu|to be a CPU tensor")


def _absent(name):
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def missing_requirements():
    """The modules OpInfo imports that this interpreter lacks (names)."""
    return [name for name in REQUIRED_MODULES if _absent(name)]


def load_op_db():
    """(op_db, None) or (None, the reason it cannot be used here)."""
    missing = missing_requirements()
    if missing:
        return None, ("OpInfo needs %s, which this interpreter lacks (pip install %s); the curated ops group "
                      "still ran" % (" and ".join(missing), " ".join(missing)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal.common_methods_invocations import op_db
    except Exception as exc:
        return None, "this torch's OpInfo database cannot be imported: %s" % error_texts.first_line(exc)
    _cheap_test_lookup()
    return op_db, None


def _running_test_fn():
    """What ``common_utils.extract_test_fn`` answers (the test method of the ``unittest.TestCase`` on the
    stack, else None), found by walking the frames instead of ``inspect.stack()``."""
    import unittest

    frame: Optional[FrameType] = sys._getframe(1)
    try:
        while frame is not None:
            self_val = frame.f_locals.get("self")
            if isinstance(self_val, unittest.TestCase):
                cls_name, test_name = self_val.id().rsplit(".", 2)[-2:]
                if cls_name == type(self_val).__name__ and test_name.startswith("test"):
                    return getattr(self_val, test_name).__func__
            frame = frame.f_back
    except Exception:
        pass
    return None


def _cheap_test_lookup():
    """Every ``op.sample_inputs`` call looks for the running test twice with ``inspect.stack()``, which reads
    the source of every frame; for a frame whose file is no module's (the bundle's ``<accelenv-bundle>/...``
    code, ``<frozen runpy>``) ``inspect.getmodule`` scans all of ``sys.modules`` each time. In the worker that
    was 0.1-0.4 s per OpInfo, most of the group's time. The same search without reading source replaces it
    (the worker that runs this group is its own process; there is never a TestCase on its stack)."""
    for name in ("torch.testing._internal.common_utils", "torch.testing._internal.opinfo.core"):
        module = sys.modules.get(name)
        if module is not None and callable(getattr(module, "extract_test_fn", None)):
            module.extract_test_fn = _running_test_fn  # type: ignore[attr-defined]  # torch's private hook, replaced


def full_name(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def check_id(op):
    return "opinfo." + _ID_CHARS.sub("_", full_name(op))


# -- what OpInfo says about test_compare_cpu ----------------------------------------------------------
def _infos(op, device_type, dtype):
    for info in getattr(op, "decorators", ()) or ():
        is_active = getattr(info, "is_active", None)
        if is_active is None:
            continue
        try:
            active = any(is_active(COMPARE_TEST[0], COMPARE_TEST[1], dt, dtype, {}) for dt in (device_type, "cuda"))
        except Exception:
            continue
        if active:
            yield info


def _skip_reason(op, device_type, dtype):
    """Why OpInfo skips test_compare_cpu for (op, dtype), or None."""
    for info in _infos(op, device_type, dtype):
        if info.device_type not in (None, device_type):
            continue  # skips for another device stay theirs
        for dec in info.decorators:
            name = getattr(dec, "__name__", "") or getattr(dec, "__qualname__", "")
            if name == "expectedFailure":
                return "OpInfo expects test_compare_cpu to fail for this op"
            if "skip" in (getattr(dec, "__qualname__", "") or ""):
                texts = [c.cell_contents for c in (getattr(dec, "__closure__", None) or ())
                         if isinstance(getattr(c, "cell_contents", None), str)]
                return "OpInfo skips test_compare_cpu for this op" + (": " + texts[0] if texts else "")
    return None


def tolerance(op, device_type, dtype):
    """(atol, rtol): test_compare_cpu's, widened by the op's overrides for that test."""
    atol, rtol = DEFAULT_TOLERANCE
    for info in _infos(op, device_type, dtype):
        for dec in info.decorators:
            table = getattr(dec, "d", None)
            if not isinstance(table, dict) or dtype not in table:
                continue
            value = table[dtype]
            if hasattr(value, "atol"):
                atol, rtol = max(atol, value.atol), max(rtol, value.rtol)
            elif isinstance(value, (int, float)):
                atol = max(atol, float(value))
    return atol, rtol


# -- running one sample ------------------------------------------------------------------------------
class _CpuRaised(Exception):
    pass


def _tensors_in(torch, value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors_in(torch, item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors_in(torch, item)]
    return []


def _to_cpu(torch, value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return [_to_cpu(torch, v) for v in value]
    return value


def _describe(torch, sample):
    """'input float32[2, 3]; args (int64[4], 2); kwargs {alpha: 0.5}': what a sample is, without its data."""
    def layout(value):
        try:
            return "" if value.is_contiguous() or value.numel() < 2 else " non-contiguous"
        except Exception:  # sparse layouts have no strides
            return " " + str(value.layout).replace("torch.", "")

    def one(value):
        if isinstance(value, torch.Tensor):
            return "%s%s%s" % (str(value.dtype).replace("torch.", ""), list(value.shape), layout(value))
        if isinstance(value, (list, tuple)):
            return "(" + ", ".join(one(v) for v in value) + ")"
        return repr(value)[:40]

    text = "input %s" % one(sample.input)
    if sample.args:
        text += "; args %s" % one(tuple(sample.args))
    if sample.kwargs:
        text += "; kwargs {%s}" % ", ".join("%s: %s" % (k, one(v)) for k, v in sample.kwargs.items())
    return text[:MAX_TEXT]


def _moved(torch, sample, device, copy=True):
    """``sample`` on ``device``: each tensor a copy (``copy=False``: an alias where it already lies there),
    and each one that requires grad a leaf of its own.

    Both runs take their inputs from here, so both differentiate with respect to the same leaves: a sample
    tensor OpInfo made under ``no_grad`` as a view of another (istft's ``window[:8]``) inherits
    ``requires_grad`` from its base but has no grad accumulator, so a gradient asked of the sample as
    made is None where the copy's is a tensor."""
    def move(t):
        if not isinstance(t, torch.Tensor):
            return t
        out = t.detach().to(device, copy=copy)
        differentiable = out.is_floating_point() or out.is_complex()
        return out.requires_grad_(t.requires_grad) if (t.requires_grad and differentiable) else out

    moved = sample.transform(move)
    if isinstance(moved.kwargs.get("device"), (str, torch.device)):  # factory samples name their device
        moved.kwargs["device"] = device
    return moved


def _detached(torch, sample):
    return sample.transform(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t)


def _call(op, sample, fn=None):
    return (fn or op)(sample.input, *sample.args, **sample.kwargs)


def _grad_inputs(torch, sample):
    return [t for t in _tensors_in(torch, [sample.input, list(sample.args), sample.kwargs]) if t.requires_grad]


def _cotangent(torch, like):
    base = torch.linspace(-1.0, 1.0, max(like.numel(), 1), dtype=torch.float64)[:like.numel()]
    return base.reshape(like.shape).to(like.dtype)


def _grads(torch, sample, out):
    outs = [t for t in _tensors_in(torch, out) if t.requires_grad and (t.is_floating_point() or t.is_complex())]
    inputs = _grad_inputs(torch, sample)
    if not outs or not inputs:
        return None
    cotangents = [_cotangent(torch, t).to(t.device) for t in outs]
    return list(torch.autograd.grad(outs, inputs, cotangents, allow_unused=True))


def _untraced(torch):
    """A context outside the breadcrumb mode: comparing is the harness's work, not the device's."""
    try:
        from torch.utils._python_dispatch import _disable_current_modes
        return _disable_current_modes()
    except ImportError:
        import contextlib
        return contextlib.nullcontext()


def _materialised(torch, value):
    """Autograd's efficient zero tensors (no storage; ``sgn``'s real gradient) as plain zeros."""
    if isinstance(value, torch.Tensor):
        is_zero = getattr(value, "_is_zerotensor", None)
        if is_zero is not None and is_zero():
            return torch.zeros(value.shape, dtype=value.dtype)
        return value
    if isinstance(value, (list, tuple)):
        return [_materialised(torch, v) for v in value]
    return value


def _compare(torch, got, want, atol, rtol):
    """None when ``got`` (device) matches ``want`` (CPU), else a short description of the difference."""
    with _untraced(torch):
        got, want = _materialised(torch, got), _materialised(torch, want)
        return _compare_plain(torch, got, want, atol, rtol)


def _compare_plain(torch, got, want, atol, rtol):
    try:
        torch.testing.assert_close(_to_cpu(torch, got), _to_cpu(torch, want), atol=atol, rtol=rtol, equal_nan=True,
                                   check_device=False, check_stride=False, check_layout=False)
    except AssertionError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return "; ".join(lines[:4])[:MAX_TEXT]
    except Exception as exc:  # incomparable structures (a harness limit on exotic outputs)
        return "outputs cannot be compared: %s" % error_texts.first_line(exc, MAX_TEXT)
    return None


class _Verdict(object):
    """What one sample (or variant) did: status passed/failed/unsupported/skipped and why."""

    __slots__ = ("status", "phase", "why", "missing")

    def __init__(self, status, phase=None, why=None, missing=None):
        self.status, self.phase, self.why, self.missing = status, phase, why, missing


def _device_error(exc, phase):
    if isinstance(exc, checks.BlockedOp):
        raise exc
    if _WANTS_CPU.search(str(exc)[:500]):  # e.g. tensor_split's index tensor: every device wants it on CPU
        return _Verdict("skipped", phase, "the op wants an argument on CPU and the harness moved every tensor: %s"
                        % error_texts.first_line(exc, 200))
    info = error_texts.classify_unsupported(exc)
    if info is not None:
        return _Verdict("unsupported", phase, error_texts.first_line(exc, MAX_TEXT), info.get("aten_op"))
    if _TORCH_REFUSES.search(str(exc)[:500]):
        return _Verdict("unsupported", phase, "torch refuses the device type: %s" % error_texts.first_line(exc, 300))
    return _Verdict("failed", phase, error_texts.first_line(exc, MAX_TEXT))


def _cpu(fn):
    try:
        return fn()
    except Exception as exc:
        raise _CpuRaised(error_texts.first_line(exc, MAX_TEXT)) from exc


def run_sample(torch, op, sample, device, tol, want_grad):
    """Forward (and backward) of one sample on ``device`` against CPU.

    The device's inputs are copied before the CPU run (on CPU ``.to`` would alias them, and an op that
    writes an input would hand the device what CPU left there); the CPU run gets fresh leaves over the
    sample's own storage, as ``_moved`` says why."""
    dev = _moved(torch, sample, device)
    ref = _moved(torch, sample, "cpu", copy=False)
    cpu_raw = _cpu(lambda: _call(op, ref))
    cpu_out = sample.output_process_fn_grad(cpu_raw)
    try:
        dev_out = sample.output_process_fn_grad(_call(op, dev))
    except Exception as exc:
        return _device_error(exc, "forward")
    diff = _compare(torch, dev_out, cpu_out, tol[0], tol[1])
    if diff is not None:
        with torch.no_grad():
            again = _cpu(lambda: sample.output_process_fn_grad(_call(op, _detached(torch, sample))))
        if _compare(torch, again, cpu_out, tol[0], tol[1]) is not None:
            return _Verdict("skipped", "forward", "two CPU runs differ (random or uninitialised output)")
        return _Verdict("failed", "forward", diff)
    if want_grad:
        try:
            cpu_grads = _grads(torch, ref, cpu_out)
        except Exception:
            cpu_grads = None  # no usable CPU gradient: nothing to compare with
        if cpu_grads is not None:
            try:
                dev_grads = _grads(torch, dev, dev_out)
            except Exception as exc:
                return _device_error(exc, "backward")
            diff = _compare(torch, dev_grads, cpu_grads, tol[0], tol[1])
            if diff is not None:
                return _Verdict("failed", "backward", diff)
    return _Verdict("passed")


def _empty_outs(torch, like, device):
    if isinstance(like, torch.Tensor):
        return torch.empty(0, dtype=like.dtype, device=device)
    return tuple(torch.empty(0, dtype=t.dtype, device=device) for t in like)


def _plain_outs(value):
    return list(value) if isinstance(value, tuple) else value


def run_variants(torch, op, sample, device, tol):
    """{variant: verdict} for ``out=`` and in-place, on detached copies of ``sample``.

    Each variant runs on CPU first; where CPU refuses it or gives something other than the plain call
    (an OpInfo whose out= wrapper drops the tensor, a dtype in-place cannot keep), the variant is not
    the device's to answer for and is left out.
    """
    verdicts: Dict[str, Any] = {}
    with torch.no_grad():
        plain = _detached(torch, sample)
        try:
            cpu_raw = _call(op, plain)
        except Exception:
            return verdicts
        tensors_only = isinstance(cpu_raw, torch.Tensor) or (
            isinstance(cpu_raw, (tuple, list)) and cpu_raw and all(isinstance(t, torch.Tensor) for t in cpu_raw))
        if getattr(op, "supports_out", False) and tensors_only:
            cpu_out = _empty_outs(torch, cpu_raw, "cpu")
            try:
                _call(op, _detached(torch, plain), lambda x, *a, **k: op(x, *a, out=cpu_out, **k))
                usable = _compare(torch, _plain_outs(cpu_out), _plain_outs(cpu_raw), tol[0], tol[1]) is None
            except Exception:
                usable = False
            if usable:
                dev = _moved(torch, _detached(torch, plain), device)
                try:
                    out = _empty_outs(torch, cpu_raw, device)
                    _call(op, dev, lambda x, *a, **k: op(x, *a, out=out, **k))
                    diff = _compare(torch, _plain_outs(out), _plain_outs(cpu_raw), tol[0], tol[1])
                    verdicts["out"] = _Verdict("passed") if diff is None else _Verdict("failed", "out=", diff)
                except Exception as exc:
                    verdicts["out"] = _device_error(exc, "out=")
        inplace = getattr(op, "inplace_variant", None)
        if inplace is not None and isinstance(plain.input, torch.Tensor):
            cpu_target = _detached(torch, plain)
            try:
                _call(op, cpu_target, inplace)
            except Exception:
                return verdicts  # CPU refuses too (dtype promotion, aliasing): not the device's fault
            dev = _moved(torch, _detached(torch, plain), device)
            try:
                _call(op, dev, inplace)
            except Exception as exc:
                verdicts["inplace"] = _device_error(exc, "inplace")
                return verdicts
            diff = _compare(torch, dev.input, cpu_target.input, tol[0], tol[1])
            verdicts["inplace"] = _Verdict("passed") if diff is None else _Verdict("failed", "inplace", diff)
    return verdicts


def _failing_work(torch, op, sample, device, phase, want_grad):
    """The device side of the sample that failed, in the phase it failed in, for the blame re-run."""
    def work():
        plain = _detached(torch, sample)
        if phase == "out=":
            with torch.no_grad():
                cpu_raw = _call(op, plain)
                out = _empty_outs(torch, cpu_raw, device)
                _call(op, _moved(torch, plain, device), lambda x, *a, **k: op(x, *a, out=out, **k))
        elif phase == "inplace":
            with torch.no_grad():
                _call(op, _moved(torch, plain, device), op.inplace_variant)
        else:
            dev = _moved(torch, sample, device)
            dev_out = sample.output_process_fn_grad(_call(op, dev))
            if phase == "backward" and want_grad:
                _grads(torch, dev, dev_out)
    return work


# -- one OpInfo: every dtype -----------------------------------------------------------------------
ORDER = {"failed": 0, "unsupported": 1, "passed": 2, "skipped": 3}


def _declared(ctx, op):
    torch = ctx.torch
    try:
        declared = set(op.supported_dtypes(ctx.device_type))
    except Exception:
        declared = set(op.supported_dtypes("cpu"))
    return [name for name in TARGET_DTYPES if getattr(torch, name) in declared]


def run_op(ctx, op):
    torch = ctx.torch
    name = full_name(op)
    if UNINITIALISED.match(op.name):
        return checks.skipped("%s returns uninitialised memory: there is nothing to compare (harness artefact)"
                              % name, opinfo=name)
    try:
        cpu_dtypes = op.supported_dtypes("cpu")
    except Exception:
        cpu_dtypes = ()
    if not cpu_dtypes:
        return checks.skipped("%s has no CPU kernel to compare with (a device-only op)" % name, opinfo=name)
    deep = bool(ctx.options.get("deep"))
    grad_done = variants_done = False
    results, skipped, missing, forward_only = {}, {}, [], []
    first_failure, samples_run, failing = None, 0, None
    variants: Dict[str, Any] = {}
    for dtype_name in _declared(ctx, op):
        dtype = getattr(torch, dtype_name)
        reason = _skip_reason(op, ctx.device_type, dtype) or ctx.dtype_problem(dtype_name)
        if reason:
            skipped[dtype_name] = reason[:MAX_TEXT]
            continue
        tol = tolerance(op, ctx.device_type, dtype)
        want_grad = bool(op.supports_autograd) and (dtype.is_floating_point or dtype.is_complex) and \
            dtype in set(op.supported_backward_dtypes("cpu")) and (deep or not grad_done)
        if not want_grad and grad_done and bool(op.supports_autograd) and \
                (dtype.is_floating_point or dtype.is_complex):
            forward_only.append(dtype_name)  # backward ran in an earlier dtype only (default mode)
        grad_done = grad_done or want_grad
        verdict, tried, first = None, 0, deep or not variants_done
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                make = op.reference_inputs if deep else op.sample_inputs
                samples = make("cpu", dtype, requires_grad=want_grad)
                for sample in samples:
                    tried += 1
                    try:
                        one = run_sample(torch, op, sample, ctx.device, tol, want_grad)
                    except _CpuRaised as exc:
                        one = _Verdict("skipped", "forward", "CPU raises too: %s" % exc)
                    if one.status != "skipped":
                        samples_run += 1
                        if first:
                            variants_done = True
                            for kind, v in run_variants(torch, op, sample, ctx.device, tol).items():
                                variants.setdefault(kind, {})[dtype_name] = v.status
                                if v.missing and v.missing not in missing:
                                    missing.append(v.missing)
                                worse = verdict is None or ORDER[v.status] < ORDER[verdict[0].status]
                                if v.status != "passed" and worse:
                                    verdict = (v, sample)
                            first = False
                    if verdict is None or ORDER[one.status] < ORDER[verdict[0].status]:
                        verdict = (one, sample)
                    if one.missing and one.missing not in missing:
                        missing.append(one.missing)
                    if not deep and (one.status != "skipped" or tried >= FIRST_SAMPLE_TRIES):
                        break
                    if deep and one.status == "failed":
                        break  # the first failing sample is what the report keeps
            except checks.BlockedOp:
                raise
            except Exception as exc:
                skipped[dtype_name] = "OpInfo could not make its samples: %s" % error_texts.first_line(exc, 200)
                continue
        if verdict is None:
            skipped[dtype_name] = "OpInfo has no sample input for this dtype"
            continue
        fallback = error_texts.cpu_fallback_op([str(w.message) for w in caught], ("aten::" + op.name,))
        if fallback and verdict[0].status == "passed":  # right numbers, from the CPU: the device lacks the op
            verdict = (_Verdict("failed", "forward", "%s ran on the CPU fallback, not the device" % fallback,
                                fallback), verdict[1])
            if fallback not in missing:
                missing.append(fallback)
        results[dtype_name] = verdict[0].status
        if verdict[0].status == "skipped":
            skipped[dtype_name] = verdict[0].why
        elif verdict[0].status in ("failed", "unsupported") and first_failure is None:
            first_failure = {"dtype": dtype_name, "phase": verdict[0].phase, "sample": _describe(torch, verdict[1]),
                             "error": verdict[0].why}
            if verdict[0].status == "failed":
                failing = _failing_work(torch, op, verdict[1], ctx.device, verdict[0].phase, want_grad)
    forward_only = [d for d in forward_only if results.get(d) not in (None, "skipped")]
    outcome = _outcome(ctx, name, results, skipped, missing, first_failure, variants, samples_run, forward_only)
    outcome.data["inputs"] = "reference_inputs" if deep else "sample_inputs (first)"
    if outcome.status == "failed" and failing is not None:
        outcome = blame.blamed(ctx, outcome, failing)
    return outcome


def _outcome_data(name, results, skipped, missing, first_failure, variants, samples_run, forward_only):
    data = {"opinfo": name, "dtypes": results, "samples_run": samples_run, "missing_aten_ops": missing}
    if forward_only:
        data["forward_only"] = list(forward_only)
    if skipped:
        data["skipped_dtypes"] = skipped
    if variants:
        data["variants"] = variants
    if first_failure:
        data["first_failure"] = first_failure
    return data


def _passed_detail(ctx, name, results, forward_only):
    checked = sorted(d for d, s in results.items() if s != "skipped")
    detail = "%s matches CPU in %s" % (name, ", ".join(
        d + (" (forward only)" if d in forward_only else "") for d in checked))
    if ctx.is_cpu:
        detail += " (device is CPU: proves the harness, not an accelerator)"
    return detail


def _outcome(ctx, name, results, skipped, missing, first_failure, variants, samples_run, forward_only=()):
    statuses = set(results.values())
    data = _outcome_data(name, results, skipped, missing, first_failure, variants, samples_run, forward_only)
    if "failed" in statuses:
        return checks.failed("%s differs from CPU in %s (%s): %s" % (
            name, first_failure["dtype"], first_failure["phase"], first_failure["error"]), **data)
    if "unsupported" in statuses:
        error = first_failure["error"] if first_failure else ""
        return checks.unsupported("%s: %s not implemented on %s (%s)" % (
            name, ", ".join(missing) or "an op is", ctx.backend, error), **data)
    if "passed" in statuses:
        return checks.passed(_passed_detail(ctx, name, results, forward_only), **data)
    why = "; ".join("%s: %s" % (d, r) for d, r in sorted(skipped.items()))[:MAX_TEXT]
    why = why or "no declared dtype in %s" % ",".join(TARGET_DTYPES)
    return checks.skipped("%s: nothing to compare (%s)" % (name, why), **data)


def _selected(op, patterns):
    if not patterns:
        return True
    name = full_name(op)
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(op.name, p) for p in patterns)


def plan(ctx):
    op_db, reason = load_op_db()
    if op_db is None:
        return [checks.Check("opinfo.unavailable", "opinfo", lambda _ctx: checks.skipped(reason))]
    patterns = ctx.options.get("opinfo_ops")
    planned, seen = [], set()
    for op in op_db:
        if not _selected(op, patterns):
            continue
        cid = check_id(op)
        if cid in seen:
            continue
        seen.add(cid)
        planned.append(checks.Check(cid, "opinfo", lambda c, op=op: run_op(c, op)))
    if not planned:
        planned.append(checks.Check("opinfo.unavailable", "opinfo", lambda _ctx: checks.skipped(
            "no OpInfo matches --opinfo-ops %s" % ",".join(patterns or ()))))
    return planned


# -- the summary entry (runs in the parent: no torch) -------------------------------------------------
def _add_missing(missing, entry, data):
    for op in data.get("missing_aten_ops") or []:
        missing.setdefault(op, []).append(data.get("opinfo") or entry["id"][len("opinfo."):])


def _tally(ops):
    """(counts by status, op x dtype pairs compared, forward-only dtypes, {missing aten op: [opinfo]})."""
    counts = dict((s, 0) for s in checks.STATUSES)
    missing: Dict[str, Any] = {}
    op_dtypes = forward_only = 0
    for entry in ops:
        counts[entry["status"]] += 1
        data = entry.get("data") or {}
        op_dtypes += sum(1 for s in (data.get("dtypes") or {}).values() if s != "skipped")
        forward_only += len(data.get("forward_only") or ())
        _add_missing(missing, entry, data)
    return counts, op_dtypes, forward_only, missing


def _blamed_ops(ops):
    """{aten op: [OpInfo names it failed]}, the op blamed most first: the kernels the failures trace back to."""
    blamed: Dict[str, Any] = {}
    for entry in ops:
        data = entry.get("data") or {}
        if entry["status"] == "failed" and data.get("blamed_op"):
            blamed.setdefault(data["blamed_op"], []).append(data.get("opinfo") or entry["id"][len("opinfo."):])
    return dict(sorted(blamed.items(), key=lambda item: (-len(item[1]), item[0])))


def _group_status(counts, op_dtypes):
    if any(counts[s] for s in checks.BAD_STATUSES):
        return "failed"
    if not op_dtypes:
        return "not_run"
    return "unsupported" if counts["unsupported"] else "passed"


def _group_detail(entries, ops, counts, op_dtypes, forward_only):
    if op_dtypes:
        return "%d OpInfos, %d op x dtype pairs compared with CPU (%d forward only): %s" % (
            len(ops), op_dtypes, forward_only, ", ".join("%d %s" % (n, s) for s, n in counts.items() if n))
    why = [e.get("detail") for e in entries if e["id"].endswith("unavailable") and e.get("detail")]
    return "nothing was compared with CPU" + (": %s" % why[0][:300] if why else "")


def group_summary(entries):
    """The report's ``summary.groups.opinfo``: what the group's entries add up to. ``passed`` only when some
    op x dtype was compared and nothing failed; ``not_run`` when nothing was compared (no device, no OpInfo)."""
    unavailable = (".unavailable", ".device_unavailable")
    ops = [e for e in entries if e["group"] == "opinfo" and not e["id"].endswith(unavailable)]
    counts, op_dtypes, forward_only, missing = _tally(ops)
    status = _group_status(counts, op_dtypes)
    detail = _group_detail(entries, ops, counts, op_dtypes, forward_only)
    if missing:
        detail += "; missing aten ops: %s" % ", ".join(sorted(missing))
    blamed = _blamed_ops(ops)
    if blamed:
        detail += "; first differing kernel: %s" % ", ".join(
            "%s (%d OpInfo%s)" % (op, len(names), "" if len(names) == 1 else "s") for op, names in blamed.items())
    return {"status": status, "detail": detail, "ops": len(ops), "op_dtypes_checked": op_dtypes,
            "forward_only": forward_only, "counts": counts, "missing_aten_ops": sorted(missing),
            "missing_by_op": dict((k, v[:20]) for k, v in sorted(missing.items())),
            "blamed_ops": dict((k, v[:50]) for k, v in blamed.items()),
            "not_ok": [e["id"] for e in ops if e["status"] in checks.BAD_STATUSES][:200]}
