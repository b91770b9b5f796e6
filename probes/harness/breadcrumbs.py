"""Breadcrumbs: the last aten op a worker entered, readable after the worker hangs or dies.

The worker runs each check under a ``TorchDispatchMode`` that writes ``E <op>`` into a small file mapped
in memory when an op is entered and ``R <op>`` when it returns; the runner reads the file after a timeout
or a crash, so the entry names the op, not only the check. The mode sees the ops that reach the backend
(``aten::mm.default`` for ``a @ b``, backward ops included), not composite ones.

The same mode refuses ops the runner reports as blocked (an op that hung or crashed earlier): a later
check that reaches the op raises ``BlockedOp`` instead of calling it, and is marked with the first
failure's status, so a hang in ``aten::mm`` costs the suite one timeout.

Format of the file (``SIZE`` bytes, NUL padded): ``E aten::mm`` or ``R aten::mm.out``.

Limit: the autograd engine runs a device's backward pass on a thread of its own and carries the mode there;
on torch 2.13 an exception raised under a Python dispatch mode on that thread ends the process
("terminate called without an active exception"), so a missing backward kernel would look like a crash.
For devices other than CPU the backward pass therefore runs without the mode (``untraced_backward``):
its breadcrumb is ``E autograd backward`` (a hang there names the backward pass, not the op) and blocked
ops are not refused inside it.
"""

import contextlib
import mmap
import os

from probes.checks import outcome

SIZE = 512
ENTERED = "E"
RETURNED = "R"


BlockedOp = outcome.BlockedOp  # checks catch it, so it lives below them

def base_name(op):
    """'aten::mm.default' -> 'aten::mm': the family a block applies to."""
    return op.split(".", 1)[0]


def create(path):
    with open(path, "wb") as handle:
        handle.write(b"\0" * SIZE)


def read(path):
    """(state, op) from a breadcrumb file: state 'entered' or 'returned'; (None, None) when empty."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(SIZE)
    except OSError:
        return None, None
    text = raw.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    if len(text) < 3 or text[1] != " ":
        return None, None
    return ("entered" if text[0] == ENTERED else "returned"), text[2:]


class Trail(object):
    """The worker's end: a mapped file and the op names already encoded."""

    def __init__(self, path):
        self._handle = open(path, "r+b")
        self._map = mmap.mmap(self._handle.fileno(), SIZE)
        self._names = {}

    def write(self, state, op):
        data = self._names.get((state, op))
        if data is None:
            data = ("%s %s" % (state, op)).encode("utf-8")[:SIZE - 1]
            data = data + b"\0" * (SIZE - len(data))
            self._names[(state, op)] = data
        self._map[0:SIZE] = data

    def clear(self):
        self._map[0:SIZE] = b"\0" * SIZE


def _touches(value, device_type, depth=0):
    """True when ``value`` (an argument, a list of them) holds a tensor on ``device_type``."""
    if depth > 3:
        return False
    device = getattr(value, "device", None)
    if device is not None and getattr(device, "type", None) == device_type:
        return True
    if isinstance(value, (list, tuple)):
        return any(_touches(item, device_type, depth + 1) for item in value)
    if isinstance(value, dict):
        return any(_touches(item, device_type, depth + 1) for item in value.values())
    return False


def make_mode(torch, trail, blocked, device_type=None):
    """A dispatch mode writing to ``trail`` and refusing the op families in ``blocked`` ({base: why}).

    With ``device_type``, only calls on that device are refused: the op crashed or hung on the device under
    test, and the harness's own CPU calls of the same op (a CPU reference, a sort of the results) still run."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _BreadcrumbMode(TorchDispatchMode):
        def __init__(self):
            TorchDispatchMode.__init__(self)
            self.hit_blocked = None
            self._names = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = self._names.get(func)
            if name is None:
                schema = func._schema
                name = schema.name + ("." + schema.overload_name if schema.overload_name else "")
                self._names[func] = name
            if blocked:
                why = blocked.get(base_name(name))
                if why is not None and device_type is not None and device_type != "cpu" and not (
                        _touches(args, device_type) or _touches(kwargs or {}, device_type)):
                    why = None  # the same op on CPU: not the device's op
                if why is not None:
                    self.hit_blocked = (name, why)
                    raise BlockedOp(name, why)
            if trail is not None:
                trail.write(ENTERED, name)
            out = func(*args, **(kwargs or {}))
            if trail is not None:
                trail.write(RETURNED, name)
            return out

    return _BreadcrumbMode()


BACKWARD = "autograd backward"


@contextlib.contextmanager
def untraced_backward(torch, trail):
    """While active: the autograd engine runs with the dispatch modes switched off (see the module's Limit)."""
    autograd = torch.autograd
    original = getattr(autograd, "_engine_run_backward", None)
    try:
        from torch.utils._python_dispatch import _disable_current_modes
    except ImportError:
        original = None
    if original is None:
        yield
        return

    def run(*args, **kwargs):
        if trail is not None:
            trail.write(ENTERED, BACKWARD)
        with _disable_current_modes():
            out = original(*args, **kwargs)
        if trail is not None:
            trail.write(RETURNED, BACKWARD)
        return out

    autograd._engine_run_backward = run
    try:
        yield
    finally:
        autograd._engine_run_backward = original


def open_trail(path):
    if not path or not os.path.exists(path):
        return None
    try:
        return Trail(path)
    except (OSError, ValueError):
        return None
