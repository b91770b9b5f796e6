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

BACKWARD_NODE = "backward "


def base_name(op):
    """'aten::mm.default' -> 'aten::mm': the family a block applies to; 'backward AddmmBackward0' ->
    'backward AddmmBackward' (a backward node type, where the backward pass runs untraced)."""
    if op.startswith(BACKWARD_NODE):
        return op.rstrip("0123456789")
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


def make_mode(torch, trail, blocked, device_type=None, seen=None):
    """A dispatch mode writing to ``trail`` and refusing the op families in ``blocked`` ({base: why}).

    With ``device_type``, only calls on that device are refused: the op crashed or hung on the device under
    test, and the harness's own CPU calls of the same op (a CPU reference, a sort of the results) still run.
    ``seen`` (a set) collects the names of the ops called with a tensor on the device (coverage)."""
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
            if seen is not None and name not in seen and (
                    device_type in (None, "cpu") or _touches(args, device_type) or _touches(kwargs or {}, device_type)):
                seen.add(name)
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


def _graph_nodes(roots, limit=20000):
    """The autograd graph's nodes reachable from the ``roots`` tensors' grad_fn (each once)."""
    stack = [getattr(t, "grad_fn", None) for t in (roots if isinstance(roots, (list, tuple)) else (roots,))]
    seen = set()  # type: set
    nodes = []  # type: list
    while stack and len(nodes) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(fn for fn, _ in getattr(node, "next_functions", ()) or ())
    return nodes


@contextlib.contextmanager
def untraced_backward(torch, trail, blocked=None, on_blocked=None):
    """While active: the autograd engine runs with the dispatch modes switched off (see the module's Limit).

    What it runs is still followed at the level of autograd nodes: a pre-hook on each node writes
    ``E backward <NodeName>`` to the trail (a crash or hang in the backward of ``addmm`` names
    ``AddmmBackward0``). A graph holding a node type in ``blocked`` ({'backward AddmmBackward': why}) is refused
    before the engine starts, with ``BlockedOp`` raised on the calling thread (on torch 2.13 a Python exception
    raised on a device's autograd thread, in a hook as under a mode, ends the process); ``on_blocked(name, why)``
    hears of it first."""
    autograd = torch.autograd
    original = getattr(autograd, "_engine_run_backward", None)
    try:
        from torch.utils._python_dispatch import _disable_current_modes
    except ImportError:
        original = None
    if original is None:
        yield
        return

    def hook_for(label):
        def pre_hook(grad_outputs):
            trail.write(ENTERED, label)
            return None

        return pre_hook

    def run(*args, **kwargs):
        handles = []  # type: list
        if trail is not None or blocked:
            for node in _graph_nodes(args[0] if args else ()):
                label = BACKWARD_NODE + node.name()
                why = (blocked or {}).get(base_name(label))
                if why is not None:
                    for handle in handles:
                        handle.remove()
                    if on_blocked is not None:
                        on_blocked(label, why)
                    raise BlockedOp(label, why)
                if trail is not None:
                    try:
                        handles.append(node.register_prehook(hook_for(label)))
                    except Exception:
                        continue  # a node type without hooks (an AccumulateGrad of an old torch)
        if trail is not None:
            trail.write(ENTERED, BACKWARD)
        try:
            with _disable_current_modes():
                out = original(*args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
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
