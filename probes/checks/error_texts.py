"""Classify the exceptions a device raises: unsupported op, missing dtype kernel, CPU fallback, OOM.

The texts are torch's own (dispatcher, overrideable default kernels, MPS), stable in substance from 1.x
to 2.13; see the PrivateUse1 notes, section 6. Matching text is the only way: torch raises plain
NotImplementedError / RuntimeError for all of these.
"""

import re
from typing import Dict

_DISPATCH = re.compile(r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<backend>\w+)' backend")
_OVERRIDEABLE = re.compile(
    r"(?P<op>\w+) not implemented\. You are likely triggering this with tensor backend other than"
)
_MPS = re.compile(r"The operator '(?P<op>[\w:.]+)' is not current(?:ly)? implemented for the MPS device")
_DTYPE = re.compile(r"\"(?P<kernel>\w+)\" not implemented for '(?P<dtype>\w+)'")
_FALLBACK = re.compile(r"(?i)(?:fall(?:s|ing)? ?back|fallback) to (?:run on )?(?:the )?CPU")
_FALLBACK_OP = re.compile(r"'(?P<op>aten::[\w.]+)'")
_OOM = re.compile(r"(?i)out of memory")
_BACKENDS = re.compile(r"is only available for these backends: \[(?P<list>[^\]]*)\]")
_FAULT_HEADER = re.compile(r"^Fatal Python error: .*$", re.M)
_FAULT_FRAME = re.compile(r'^\s+File "[^"]*", line \d+ in .*$')
FAULT_FRAMES_KEPT = 12

# How a backend says "I do not implement this device-generic API" (streams, events, torch.accelerator):
# c10's DeviceGuardImplInterface defaults ("Backend doesn't support synchronizing events.", "... events.",
# "... getting device capabilities.", ...) and torch.accelerator's allocator lookup on a backend whose
# allocator is not a c10 DeviceAllocator. Anything else from a device that has the API is a real failure.
BACKEND_DECLINES = (
    re.compile(r"(?im)\bbackend doesn't support [^\n]*?(?:\.|$)"),
    re.compile(r"Allocator for \w+ is not a DeviceAllocator"),
)


def base_op_name(op):
    """'aten::mm.out' -> 'aten::mm' (the overload dropped), 'convolution_overrideable' -> same."""
    if op.startswith("aten::"):
        return op.split(".")[0]
    return op


def _missing_op(kind, match, text):
    """The ``classify_unsupported`` answer for a message naming the op (``match``) that has no kernel."""
    op = match.group("op")
    if kind == "overrideable":
        op = "aten::" + op
    info = {
        "aten_op": op,
        "base_op": base_op_name(op),
        "backend": match.groupdict().get("backend") or ("mps" if kind == "mps" else None),
        "kind": kind,
    }
    backends = _BACKENDS.search(text)
    if backends:  # the dispatcher's own list: where this op does have kernels
        info["available_backends"] = [b.strip() for b in backends.group("list").split(",") if b.strip()]
        info["dispatcher_message"] = text[:backends.end()][-MAX_MESSAGE:]
    return info


def classify_unsupported(exc):
    """Return ``{'aten_op', 'base_op', 'backend', 'kind'}`` when ``exc`` says an op or dtype is missing.

    ``None`` means the exception is something else (a real failure). An unparsed NotImplementedError is
    still "unsupported", with ``aten_op`` None.
    """
    text = str(exc)
    first = text.splitlines()[0] if text else ""
    for kind, pattern in (("dispatcher", _DISPATCH), ("overrideable", _OVERRIDEABLE), ("mps", _MPS)):
        match = pattern.search(first) or pattern.search(text[:4000])
        if match:
            return _missing_op(kind, match, text)
    match = _DTYPE.search(first)
    if match:
        return {
            "aten_op": None,
            "base_op": None,
            "backend": None,
            "kind": "dtype",
            "kernel": match.group("kernel"),
            "dtype": match.group("dtype"),
        }
    if isinstance(exc, NotImplementedError):
        return {"aten_op": None, "base_op": None, "backend": None, "kind": "unparsed"}
    return None


MAX_MESSAGE = 2000


def faulthandler_frames(text, keep=FAULT_FRAMES_KEPT):
    """The last faulthandler dump in ``text``: its header line, then the innermost ``keep`` frames.

    faulthandler prints the most recent call first, so the frames that matter (where the process died) are
    at the top of the dump and a plain tail of stderr loses them behind the outer frames.
    """
    headers = list(_FAULT_HEADER.finditer(text or ""))
    if not headers:
        return []
    start = headers[-1]
    frames = []
    for line in text[start.end():].splitlines():
        if _FAULT_FRAME.match(line):
            frames.append(line.strip())
            if len(frames) >= keep:
                break
        elif frames and not line.strip():
            break  # the end of the current thread's stack
    return [start.group(0)] + frames


def without_faulthandler(text):
    """``text`` up to its last faulthandler dump (that part is reported as frames)."""
    headers = list(_FAULT_HEADER.finditer(text or ""))
    return text[:headers[-1].start()] if headers else text


# base op name -> the op as a fallback warning named it, for this process: backends warn once per process
# (TORCH_WARN_ONCE), so a later check reaching the same op sees no warning and must still be told
_FALLBACK_SEEN: Dict[str, str] = {}


def _base(op):
    return op.split("::", 1)[-1].split(".", 1)[0]


def cpu_fallback_op(messages, expected_ops=()):
    """The op a backend said it ran on CPU instead (MPS fallback, vendor plugins), from warning texts; or,
    when no warning came now, one of ``expected_ops`` (the ops the caller ran) that warned earlier in this
    process."""
    found = cpu_fallback_ops(messages)
    if found:
        return found[0]
    for op in expected_ops:
        if op and _base(op) in _FALLBACK_SEEN:
            return _FALLBACK_SEEN[_base(op)]
    return None


def cpu_fallback_ops(messages):
    """Every op the warning texts say ran on the CPU instead of the device, in order, each once."""
    ops = []
    for message in messages:
        if _FALLBACK.search(message):
            match = _FALLBACK_OP.search(message)
            op = match.group("op") if match else "unknown"
            if match:
                _FALLBACK_SEEN.setdefault(_base(op), op)
            if op not in ops:
                ops.append(op)
    return ops


def oom_error_types(torch):
    """The exception classes this torch raises for device OOM (feature-detected; RuntimeError last)."""
    types = []
    for owner, name in ((torch, "OutOfMemoryError"), (getattr(torch, "cuda", None), "OutOfMemoryError")):
        cls = getattr(owner, name, None) if owner is not None else None
        if isinstance(cls, type) and cls not in types:
            types.append(cls)
    return tuple(types)


def is_oom(exc, torch):
    """True for torch's OOM classes, and for the RuntimeError MPS and older backends raise."""
    if isinstance(exc, oom_error_types(torch)):
        return True
    return isinstance(exc, RuntimeError) and bool(_OOM.search(str(exc)[:2000]))


def first_line(exc, limit=300):
    text = "%s: %s" % (type(exc).__name__, exc)
    line = text.splitlines()[0] if text else type(exc).__name__
    return line[:limit]


def backend_declines(exc):
    """The phrase by which ``exc`` says the backend does not implement the called API, or None."""
    text = str(exc)[:4000]
    for pattern in BACKEND_DECLINES:
        match = pattern.search(text)
        if match:
            return match.group(0).strip()
    return None
