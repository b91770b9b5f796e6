"""Breadcrumbs: the last aten op a worker entered, readable after the worker hangs or dies.

The worker runs each check under a ``TorchDispatchMode`` that writes ``E <op>`` into a small file mapped
in memory when an op is entered and ``R <op>`` when it returns; the runner reads the file after a timeout
or a crash, so the entry names the op, not only the check. The mode sees the ops that reach the backend
(``aten::mm.default`` for ``a @ b``, backward ops included), not composite ones.

The same mode refuses ops the runner reports as blocked (an op that hung or crashed earlier): a later
check that reaches the op raises ``BlockedOp`` instead of calling it, and is marked with the first
failure's status, so a hang in ``aten::mm`` costs the suite one timeout.

Format of the file (``SIZE`` bytes, NUL padded): ``E aten::mm`` or ``R aten::mm.out``.

Blocked ops are also refused at the device's own kernel (``probes.harness.kernel_block``), which catches what
the mode cannot see: ops called inside another op's kernel, and the groups that run untraced.

Limit: on torch 2.13 a Python exception raised under a Python dispatch mode while the autograd engine runs a
device's backward pass ends the process ("terminate called without an active exception"), whether the mode
raised it or an op's kernel did (a missing backward kernel would look like a crash). So inside a device's
backward pass (``device_backward``) the mode never lets an exception through: it keeps the first one, hands
the engine meta tensors instead of the op's outputs (the engine then stops with a C++ error of its own, which
is safe), and the kept exception is raised again on the calling thread. The pass is traced op by op like the
forward one: a crash or hang in the backward of ``addmm`` names ``aten::mm``.
"""

import contextlib
import mmap
import os
import time

from probes.checks import outcome

SIZE = 512
ENTERED = "E"
RETURNED = "R"


BlockedOp = outcome.BlockedOp  # checks catch it, so it lives below them

BACKWARD_NODE = "backward "


def base_name(op):
    """'aten::mm.default' -> 'aten::mm': the family a block applies to; 'backward AddmmBackward0' ->
    'backward AddmmBackward' (a backward node type: a crash or hang in a node outside any of its aten ops)."""
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


class FirstCalls(object):
    """The first call of each op family on the device, held by one worker at a time across the workers running
    at once (a directory beside the blocklist): a worker about to call a family no worker has seen return yet
    takes the family's claim (``<family>``, holding its pid); one that finds the claim taken waits until the
    holder's call returns (``<family>.ok``) or the runner blocks the family (the holder hung or crashed in
    it), and is then refused without calling it. So a kernel that hangs costs one timeout even while
    several workers reach it at the same moment.

    ``blocked_why(family)`` says why a family is blocked (re-reading the blocklist), or None; ``on_wait(True)``
    and ``on_wait(False)`` bracket a wait (the worker stops its check's clock meanwhile)."""

    POLL_S = 0.005
    GRACE_S = 60.0  # after the holder died, how long the runner has to block the family before this one calls it

    def __init__(self, directory, blocked_why, on_wait=None):
        self.directory = directory
        self.blocked_why = blocked_why
        self.on_wait = on_wait
        self.known = set()  # type: set  # families seen to return, here or in another worker

    def _path(self, family):
        return os.path.join(self.directory, family.replace(":", "_"))

    def enter(self, family):
        """True when this worker makes the family's first call (then ``returned`` after it); False when the
        family is known to return. Raises ``BlockedOp`` when the family was blocked while this one waited."""
        if family in self.known:
            return False
        path = self._path(family)
        if os.path.exists(path + ".ok"):
            self.known.add(family)
            return False
        try:
            handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            self._wait(family, path)
            return False
        except OSError:  # no directory: no coordination
            self.known.add(family)
            return False
        os.write(handle, str(os.getpid()).encode("ascii"))
        os.close(handle)
        return True

    def returned(self, family):
        self.known.add(family)
        try:
            with open(self._path(family) + ".ok", "w"):
                pass
        except OSError:
            pass

    @staticmethod
    def _alive(path):
        try:
            with open(path) as handle:
                pid = int(handle.read() or "0")
        except (OSError, ValueError):
            return True  # being written
        if pid <= 0:
            return True
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True

    def _wait(self, family, path):
        if self.on_wait is not None:
            self.on_wait(True, family)
        dead_since = None
        try:
            while True:
                why = self.blocked_why(family)
                if why is not None:
                    raise BlockedOp(family, why)
                if os.path.exists(path + ".ok"):
                    self.known.add(family)
                    return
                if dead_since is None and not self._alive(path):
                    dead_since = time.monotonic()
                if dead_since is not None and time.monotonic() - dead_since > self.GRACE_S:
                    self.known.add(family)  # the holder died elsewhere and nothing blamed the op: call it
                    return
                time.sleep(self.POLL_S)
        finally:
            if self.on_wait is not None:
                self.on_wait(False, family)


def make_mode(torch, trail, blocked, device_type=None, seen=None, learned=None, first_calls=None):
    """A dispatch mode writing to ``trail`` and refusing the op families in ``blocked`` ({base: why}).

    With ``device_type``, only calls on that device are refused: the op crashed or hung on the device under
    test, and the harness's own CPU calls of the same op (a CPU reference, a sort of the results) still run.
    ``seen`` (a set) collects the names of the ops called with a tensor on the device (coverage). ``learned``
    (a ``NodeOps``) hears which aten ops each backward node called while a CPU backward ran under the mode.
    ``first_calls`` (a ``FirstCalls``) holds each family's first call on the device to one worker at a time."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _BreadcrumbMode(TorchDispatchMode):
        def __init__(self):
            TorchDispatchMode.__init__(self)
            self.hit_blocked = None
            self._names = {}
            self.node = None  # the backward node a traced (CPU) backward pass is in, set by its pre-hooks
            self.deferring = 0  # > 0 while a device's backward pass runs under the mode (``device_backward``)
            self.deferred = None  # the first exception an op raised there, raised again on the calling thread

        def _defer(self, exc, func, args, kwargs):
            """Keep ``exc`` for the calling thread and return a stand-in (see the module's Limit)."""
            if self.deferred is None:
                self.deferred = exc
            return _stand_in(torch, func, args, kwargs)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = self._names.get(func)
            if name is None:
                schema = func._schema
                name = schema.name + ("." + schema.overload_name if schema.overload_name else "")
                self._names[func] = name
            if self.node is not None and learned is not None:
                learned.add(self.node, base_name(name))
            if seen is not None and name not in seen and (
                    device_type in (None, "cpu") or _touches(args, device_type) or _touches(kwargs, device_type)):
                seen.add(name)
            if blocked:
                why = blocked.get(base_name(name))
                if why is not None and device_type is not None and device_type != "cpu" and not (
                        _touches(args, device_type) or _touches(kwargs, device_type)):
                    why = None  # the same op on CPU: not the device's op
                if why is not None:
                    self.hit_blocked = (name, why)
                    if self.deferring:
                        return self._defer(BlockedOp(name, why), func, args, kwargs)
                    raise BlockedOp(name, why)
            family = base_name(name)
            first = False
            if first_calls is not None and family not in first_calls.known and (
                    device_type in (None, "cpu") or _touches(args, device_type) or _touches(kwargs, device_type)):
                try:
                    first = first_calls.enter(family)
                except BlockedOp as exc:
                    self.hit_blocked = (name, blocked.get(family) if blocked else str(exc))
                    if self.deferring:
                        return self._defer(exc, func, args, kwargs)
                    raise
            if trail is not None:
                trail.write(ENTERED, name)
            try:
                if self.deferring:
                    try:
                        out = func(*args, **kwargs)
                    except Exception as exc:
                        return self._defer(exc, func, args, kwargs)
                else:
                    out = func(*args, **kwargs)
            finally:
                if first:
                    first_calls.returned(family)
            if trail is not None:
                trail.write(RETURNED, name)
            return out

    return _BreadcrumbMode()


def _stand_in(torch, func, args, kwargs):
    """What an op that raised returns inside a device's backward pass: its outputs as meta tensors (the engine
    then stops with an error of its own, "expected device ... but got meta", raised in C++), or None where
    the op has no meta kernel. Nothing is allocated on the device (the op may have run out of its memory)."""
    try:
        from torch.utils._pytree import tree_map

        def meta(value):
            if isinstance(value, torch.Tensor):
                return torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype,
                                           device="meta")
            return value

        return func(*tree_map(meta, list(args)), **tree_map(meta, dict(kwargs)))
    except Exception:
        return None


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


class NodeOps(object):
    """Which aten op families each backward node type calls, learned from the backward passes the checks run
    under the mode (CPU references and the device's own) and kept in a file beside the blocklist, so a fresh
    worker knows what the one before it learned. A graph about to run on the device is so known to reach an op
    that crashed or hung before the engine starts: ``aten::mm`` crashed, and a later ``MmBackward0`` or
    ``AddmmBackward0`` on the device is refused naming the node (the mode and the device's kernel refuse the op
    too, where nothing was learned).

    File format: one ``<node type>\t<aten family>`` per line, appended."""

    def __init__(self, path=None):
        self.path = path
        self.ops = {}  # type: dict  # 'backward MmBackward' -> {'aten::mm', ...}
        if path and os.path.exists(path):
            try:
                with open(path) as handle:
                    for line in handle:
                        node, _, op = line.rstrip("\n").partition("\t")
                        if node and op:
                            self.ops.setdefault(node, set()).add(op)
            except OSError:
                pass

    def add(self, node, op):
        known = self.ops.setdefault(node, set())
        if op in known:
            return
        known.add(op)
        if self.path:
            try:
                with open(self.path, "a") as handle:
                    handle.write("%s\t%s\n" % (node, op))
            except OSError:
                pass

    def blocked_in(self, node, blocked):
        """The first aten family ``node`` (a base name) is known to call that ``blocked`` holds, or None."""
        for op in sorted(self.ops.get(node, ())):
            if op in blocked:
                return op
        return None


_NODE_MARK = "; the backward node that calls it: "


def node_of(why):
    """The backward node named in a refusal's ``why`` (``device_backward``), or None."""
    return why.split(_NODE_MARK, 1)[1] if why and _NODE_MARK in why else None


def _on_device(roots, nodes):
    """True unless the roots and every node's inputs are known to live on the CPU (a graph the CPU runs on this
    thread)."""
    for root in roots if isinstance(roots, (list, tuple)) else (roots,):
        if getattr(getattr(root, "device", None), "type", "cpu") != "cpu":
            return True
    for node in nodes:
        try:
            metadata = node._input_metadata
        except Exception:
            return True
        for item in metadata:
            device = getattr(item, "device", None)
            if getattr(device, "type", None) != "cpu":
                return True
    return False


@contextlib.contextmanager
def device_backward(torch, trail, blocked=None, on_blocked=None, mode=None, learned=None):
    """While active: a backward pass is followed op by op, and a device's cannot end the process (see the
    module's Limit).

    A pre-hook on each node writes ``E backward <NodeName>`` to the trail, and ``mode`` (the breadcrumb mode)
    then writes each aten op the node calls: a crash or hang in the backward of ``addmm`` names ``aten::mm``
    (and ``AddmmBackward0`` where it is outside any op). A graph holding a node type in ``blocked``
    ({'backward AddmmBackward': why}), or a node type ``learned`` (a ``NodeOps``) knows to call a blocked aten
    family, is refused before the engine starts, with ``BlockedOp`` raised on the calling thread;
    ``on_blocked(name, why)`` hears of it first.

    A device's graph runs with the mode deferring: an op that raises (a missing kernel, a blocked op, an
    out-of-memory) hands the engine a stand-in, and its exception is raised again on the calling thread once
    the engine has stopped. Without ``mode`` the device's pass runs with the dispatch modes switched off.
    A graph wholly on the CPU keeps ``mode`` as it is. Each node's ops are recorded in ``learned``
    (``mode.node`` names the node the engine is in)."""
    autograd = torch.autograd
    original = getattr(autograd, "_engine_run_backward", None)
    try:
        from torch.utils._python_dispatch import _disable_current_modes
    except ImportError:
        original = None
    if original is None:
        yield
        return

    def hook_for(label, base):
        def pre_hook(grad_outputs):
            if trail is not None:
                trail.write(ENTERED, label)
            if mode is not None:
                mode.node = base
            return None

        return pre_hook

    def refuse(handles, name, why):
        for handle in handles:
            handle.remove()
        if on_blocked is not None:
            on_blocked(name, why)
        raise BlockedOp(name, why)

    def hooked(roots, nodes, on_cpu):
        handles = []  # type: list
        for node in nodes:
            label = BACKWARD_NODE + node.name()
            base = base_name(label)
            if not on_cpu:
                why = (blocked or {}).get(base)
                if why is not None:
                    refuse(handles, label, why)
                op = learned.blocked_in(base, blocked) if learned is not None and blocked else None
                if op is not None:
                    refuse(handles, op, "%s%s%s" % (blocked[op], _NODE_MARK, node.name()))
            try:
                handles.append(node.register_prehook(hook_for(label, base)))
            except Exception:
                continue  # a node type without hooks (an AccumulateGrad of an old torch)
        return handles

    def deferring(args, kwargs):
        """The engine under the mode, its first op's exception raised here rather than on its thread."""
        previous, mode.deferred = mode.deferred, None
        mode.deferring += 1
        failure = None
        try:
            out = original(*args, **kwargs)
        except Exception as exc:  # the engine's own complaint about a stand-in, or a node's C++ error
            failure = exc
        finally:
            mode.deferring -= 1
            deferred, mode.deferred = mode.deferred, previous
        if deferred is not None:
            if isinstance(deferred, BlockedOp) and on_blocked is not None and mode.hit_blocked:
                on_blocked(*mode.hit_blocked)
            raise deferred
        if failure is not None:
            raise failure
        return out

    def run(*args, **kwargs):
        roots = args[0] if args else ()
        nodes = _graph_nodes(roots)
        on_cpu = not _on_device(roots, nodes)
        handles = hooked(roots, nodes, on_cpu) if trail is not None or blocked or mode is not None else []
        if trail is not None:
            trail.write(ENTERED, BACKWARD)
        try:
            if mode is not None and on_cpu:
                out = original(*args, **kwargs)
            elif mode is not None:
                out = deferring(args, kwargs)
            else:
                with _disable_current_modes():
                    out = original(*args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
            if mode is not None:
                mode.node = None
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
