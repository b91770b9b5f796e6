"""The refdev kernels: every aten overload with a CPU kernel runs on CPU views of the device data.

Registered for PrivateUse1 only where torch has a direct ``CPU`` kernel (about 1,070 overloads on 2.13).
Composite ops are left alone on purpose: a backend kernel on a CompositeImplicitAutograd op switches off its
decomposition, and Python kernels for CompositeExplicitAutograd ops such as ``detach`` break
``nn.Parameter``. Four ops without a CPU kernel get hand-written ones: ``_copy_from`` and
``_copy_from_and_resize`` (what ``copy_`` calls across devices) and the ``convolution_*_overrideable`` pair.
Exceptions, found by the opinfo sweep: ``copy_`` and ``conj_physical_`` get the generic kernel (the composite
``copy_`` of a conjugate view recursed until the stack overflowed; ``conj_physical_``'s composite needs a
DispatchStub a Python backend cannot fill), and ``_efficientzerotensor`` makes plain zeros (a CPU
ZeroTensor has no storage to put on the device: ``sgn``'s gradient). CPU views carry the conjugate and
negative bits of the device tensor, and a Python number where the schema wants a Tensor (a wrapped
scalar, ``copysign.Scalar`` calling ``copysign.Tensor``) becomes a 0-dim CPU tensor of the dtype a
wrapped number would promote to.

Each overload gets its own ``torch.library.Library`` (1,000 cost about 7 ms), so a ``missing:`` fault simply
leaves that overload unregistered and the dispatcher raises its own "Could not run" error.

Imported only by ``probes.refdev.install`` after the availability check.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Dict, List, Set, Tuple

import torch

from probes.refdev.faults import USAGE, WRONG_PROMOTION, WRONG_RELATIVE_ERROR, FaultPlan
from probes.refdev.storage import StorageModel

DISPATCH_KEY = "PrivateUse1"
HAND_WRITTEN = (
    "aten::_copy_from",
    "aten::_copy_from_and_resize",
    "aten::convolution_overrideable",
    "aten::convolution_backward_overrideable",
    "aten::_efficientzerotensor",
)
#: CompositeExplicitAutograd ops that still need a refdev kernel (the generic one); see the module docstring
EXTRA_GENERIC = ("aten::copy_", "aten::conj_physical_")
_NUMBERS = (bool, int, float, complex)

Kernel = Callable[..., Any]


def op_catalogue() -> Dict[str, Any]:
    """Qualified overload name ('aten::add.Tensor', 'aten::mm') -> OpOverload, for every op we register."""
    catalogue = {}
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        if name not in HAND_WRITTEN and name not in EXTRA_GENERIC and \
                not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"):
            continue
        base, _, overload = name[len("aten::"):].partition(".")
        packet = getattr(torch.ops.aten, base, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if op is not None:
            catalogue[name] = op
    return catalogue


def family(name: str) -> str:
    """'aten::mm.out' -> 'aten::mm'."""
    return name.split(".", 1)[0]


def select(catalogue: Dict[str, Any], target: str, kind: str) -> List[str]:
    """The overloads a fault target names: one overload, or every overload of a family.

    A family whose plain overload is CompositeImplicitAutograd (``aten::adaptive_avg_pool2d`` runs
    ``_adaptive_avg_pool2d`` or ``mean``; only its ``.out`` has a CPU kernel) is refused: faulting the ``.out``
    alone would leave the op the user calls untouched, a fault with no effect.
    """
    every = torch._C._dispatch_get_all_op_names()
    if "." in target[len("aten::"):]:
        chosen = [target] if target in catalogue else []
    elif target in every and target not in catalogue and \
            torch._C._dispatch_has_kernel_for_dispatch_key(target, "CompositeImplicitAutograd"):
        chosen = []
    else:
        chosen = [name for name in catalogue if family(name) == target]
    if chosen:
        return chosen
    raise _unknown_target(every, target, kind)


def _unknown_target(every: List[str], target: str, kind: str) -> ValueError:
    """The error for a fault target naming no refdev kernel: a composite op, or no operator at all."""
    known = target in every or any(family(n) == target for n in every)
    if known:
        why = (
            "has no refdev kernel of its own (it is composite: it runs other ops, e.g. aten::linear runs "
            "aten::addmm); name the op the dispatcher reaches"
        )
    else:
        why = "is not an operator in torch %s" % torch.__version__
    return ValueError("bad refdev fault '%s:%s': %s %s; %s" % (kind, target, target, why, USAGE))


class KernelSet:
    """Builds, registers and drops the PrivateUse1 kernels of one process."""

    def __init__(self, model: StorageModel, plan: FaultPlan) -> None:
        self.model = model
        self.plan = plan
        self.catalogue = op_catalogue()
        self.libraries: Dict[str, Any] = {}
        #: fault kind -> the overloads it applies to
        self.faulty: Dict[str, Set[str]] = {kind: set() for kind in plan.op_faults()}
        for kind, targets in plan.op_faults().items():
            for target in targets:
                self.faulty[kind].update(select(self.catalogue, target, kind))

    def register_all(self) -> int:
        for name in self.catalogue:
            if name not in self.faulty["missing"]:
                self.register(name)
        return len(self.libraries)

    def register(self, name: str) -> None:
        if name in self.libraries:
            return
        op = self.catalogue[name]
        library = torch.library.Library("aten", "IMPL")
        library.impl(name[len("aten::"):], self._kernel_for(name, op), DISPATCH_KEY)
        self.libraries[name] = library

    # -- kernel construction ---------------------------------------------------------------------
    def _kernel_for(self, name: str, op: Any) -> Kernel:
        hand_written: Dict[str, Kernel] = {
            "aten::_copy_from": self._copy_from,
            "aten::_copy_from_and_resize": self._copy_from_and_resize,
            "aten::convolution_overrideable": self._convolution,
            "aten::convolution_backward_overrideable": self._convolution_backward,
            "aten::_efficientzerotensor": self._zeros,
        }
        kernel = hand_written.get(name) or self._generic(op)
        if name in self.faulty["fallback"]:
            kernel = _announced_fallback(name, kernel)
        if name in self.faulty["hang"]:
            return _hang(name)
        if name in self.faulty["crash"]:
            return _crash(name)
        if name in self.faulty["wrong"]:
            return _off_by_relative_error(kernel)
        if name in self.faulty["wrong:promotion"]:
            return self._wrong_dtype(kernel, op)
        return kernel

    def _generic(self, op: Any) -> Kernel:
        model = self.model
        positions, names = _written_args(op)
        tensor_positions, tensor_names = _tensor_args(op)
        device_type = model.device_type

        def kernel(*args: Any, **kwargs: Any) -> Any:
            calls = _Call(model)
            if tensor_positions or tensor_names:
                args, kwargs = _unwrapped_numbers(args, kwargs, tensor_positions, tensor_names)
            cpu_args = calls.to_cpu(args)
            cpu_kwargs = {k: calls.to_cpu(v) for k, v in kwargs.items()}
            device = kwargs.get("device")
            keep_on_cpu = isinstance(device, torch.device) and device.type != device_type
            result = op(*cpu_args, **cpu_kwargs)
            for position in positions:
                if position < len(args):
                    calls.resync(args[position], cpu_args[position])
            for name in names:
                if name in kwargs:
                    calls.resync(kwargs[name], cpu_kwargs[name])
            return calls.from_cpu(result, keep_on_cpu)

        return kernel

    def _zeros(self, size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
               pin_memory: Any = None) -> torch.Tensor:
        cpu = torch.zeros(size, dtype=dtype if dtype is not None else torch.get_default_dtype())
        return _Call(self.model).from_cpu(cpu, False)

    def _copy_from(self, src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        calls = _Call(self.model)
        calls.to_cpu(dst).copy_(calls.to_cpu(src))
        return dst

    def _copy_from_and_resize(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        calls = _Call(self.model)
        dst_cpu = calls.to_cpu(dst)
        dst_cpu.resize_(src.shape).copy_(calls.to_cpu(src))
        calls.resync(dst, dst_cpu)
        return dst

    def _convolution(self, input: Any, weight: Any, bias: Any, *rest: Any) -> Any:
        calls = _Call(self.model)
        args = calls.to_cpu((input, weight, bias) + rest)
        return calls.from_cpu(torch.ops.aten.convolution.default(*args), False)

    def _convolution_backward(
        self, grad_output: Any, input: Any, weight: Any, stride: Any, padding: Any, dilation: Any,
        transposed: bool, output_padding: Any, groups: int, output_mask: Any,
    ) -> Any:
        calls = _Call(self.model)
        grad_cpu, input_cpu, weight_cpu = calls.to_cpu((grad_output, input, weight))
        out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
        result = torch.ops.aten.convolution_backward.default(
            grad_cpu, input_cpu, weight_cpu, [out_channels], stride, padding, dilation, transposed,
            output_padding, groups, output_mask,
        )
        return calls.from_cpu(result, False)

    def _wrong_dtype(self, kernel: Kernel, op: Any) -> Kernel:
        if any(_written_args(op)):
            return kernel  # in-place and out= results keep their argument's dtype by construction
        model = self.model

        def wrong(*args: Any, **kwargs: Any) -> Any:
            result = kernel(*args, **kwargs)
            if not isinstance(result, torch.Tensor):
                return result
            name = str(result.dtype).replace("torch.", "")
            wrong_dtype = getattr(torch, WRONG_PROMOTION.get(name, name))
            calls = _Call(model)
            return calls.from_cpu(calls.to_cpu(result).to(wrong_dtype), False)

        return wrong


class _Call:
    """The CPU views of one kernel call, so outputs that alias an argument map back to it."""

    __slots__ = ("model", "by_view", "storages")

    def __init__(self, model: StorageModel) -> None:
        self.model = model
        self.by_view: Dict[int, Any] = {}  # id(cpu view or cpu argument) -> the caller's tensor
        self.storages: Dict[int, Any] = {}  # CPU StorageImpl address -> device storage object

    def to_cpu(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if value.device.type != self.model.device_type:
                self.by_view[id(value)] = value
                return value
            device_storage = value.untyped_storage()
            view = self.model.cpu_view(value)
            self.by_view[id(view)] = value
            self.storages[view.untyped_storage()._cdata] = device_storage
            return view
        if isinstance(value, (list, tuple)):
            return type(value)(self.to_cpu(v) for v in value)
        if isinstance(value, torch.device) and value.type == self.model.device_type:
            if value.index not in (None, 0):
                raise RuntimeError(
                    "%s has one device, index 0; got %s. Use device=%r"
                    % (self.model.device_type, value, self.model.device_type)
                )
            return torch.device("cpu")
        if isinstance(value, torch.UntypedStorage) and value.device.type == self.model.device_type:
            cpu = self.model.cpu_storage(value)
            self.storages[cpu._cdata] = value
            return cpu
        return value

    def from_cpu(self, value: Any, keep_on_cpu: bool) -> Any:
        if isinstance(value, torch.Tensor):
            original = self.by_view.get(id(value))
            if original is not None:
                return original
            if keep_on_cpu or value.device.type != "cpu":
                return value
            if value.is_conj() or value.is_neg():  # the device tensor cannot take the bit over: materialise
                value = value.resolve_conj().resolve_neg()
            shared = self.storages.get(value.untyped_storage()._cdata)
            if shared is not None:
                shared = self.model.current(shared)
            return self.model.to_device(value, shared)
        if isinstance(value, (list, tuple)):
            return type(value)(self.from_cpu(v, keep_on_cpu) for v in value)
        return value

    def resync(self, device_arg: Any, cpu_arg: Any) -> None:
        """After a mutating op: follow the CPU view's new storage, geometry or size on the device."""
        if isinstance(device_arg, (list, tuple)):
            for d, c in zip(device_arg, cpu_arg):
                self.resync(d, c)
            return
        if not (isinstance(device_arg, torch.Tensor) and device_arg.device.type == self.model.device_type):
            return
        cpu_storage = cpu_arg.untyped_storage()
        device_storage = self.storages.get(cpu_storage._cdata)
        if device_storage is None:
            device_storage = self.model.new_device_storage(cpu_storage)
        else:
            device_storage = self.model.current(device_storage)
        self.storages[cpu_storage._cdata] = device_storage
        same = (
            device_arg.untyped_storage()._cdata == device_storage._cdata
            and device_arg.shape == cpu_arg.shape
            and device_arg.stride() == cpu_arg.stride()
            and device_arg.storage_offset() == cpu_arg.storage_offset()
        )
        if not same:
            self.model.place(device_arg, device_storage, cpu_arg)


def _written_args(op: Any) -> Tuple[Tuple[int, ...], Tuple[str, ...]]:
    """What an op writes to: positions (self of in-place ops) and keyword names (``out=``)."""
    written = [
        (i, arg) for i, arg in enumerate(op._schema.arguments)
        if arg.alias_info is not None and arg.alias_info.is_write
    ]
    return (
        tuple(i for i, arg in written if not arg.kwarg_only),
        tuple(arg.name for _, arg in written if arg.kwarg_only),
    )


def _tensor_args(op: Any) -> Tuple[Tuple[int, ...], Tuple[str, ...]]:
    """Where the schema takes a plain ``Tensor`` (a Python number there is a wrapped scalar)."""
    found = [(i, arg) for i, arg in enumerate(op._schema.arguments) if isinstance(arg.type, torch._C.TensorType)]
    return (
        tuple(i for i, arg in found if not arg.kwarg_only),
        tuple(arg.name for _, arg in found if arg.kwarg_only),
    )


def _number_dtype(value: Any, others: List[Any]) -> Any:
    """The dtype a wrapped number acts as: it never widens a tensor of its own kind or a higher one.

    Next to a dimensioned tensor of its kind or higher, a float is made float64 (complex: complex128): a 0-dim
    tensor of the same kind loses to dimensioned ones in type promotion, and CPU kernels read it as a scalar
    in op math, as they read a wrapped number, so 180/pi does not round to bf16. Next to 0-dim tensors only
    (which would compete), it takes their dtype.
    """
    tensors = [t for t in others if isinstance(t, torch.Tensor)]
    like = tensors[0].dtype if tensors else None
    dimensioned = any(t.dim() > 0 for t in tensors)
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, int):
        return _int_dtype(like, dimensioned)
    if isinstance(value, float):
        return _float_dtype(like, dimensioned)
    return _complex_dtype(like, dimensioned)


def _int_dtype(like: Any, dimensioned: bool) -> Any:
    return like if like is not None and not like.is_floating_point and not like.is_complex and \
        like != torch.bool and not dimensioned else torch.int64


def _float_dtype(like: Any, dimensioned: bool) -> Any:
    if like is not None and (like.is_floating_point or like.is_complex):
        return torch.float64 if dimensioned else (like if like.is_floating_point else torch.float64)
    return torch.get_default_dtype()


def _complex_dtype(like: Any, dimensioned: bool) -> Any:
    if like is not None and like.is_complex:
        return torch.complex128 if dimensioned else like
    return torch.complex128 if torch.get_default_dtype() == torch.float64 else torch.complex64


def _has_number(args: Any, kwargs: Any, positions: Tuple[int, ...], names: Tuple[str, ...]) -> bool:
    return any(isinstance(args[i], _NUMBERS) for i in positions if i < len(args)) or \
        any(isinstance(kwargs.get(n), _NUMBERS) for n in names)


def _unwrapped_numbers(args: Any, kwargs: Any, positions: Tuple[int, ...], names: Tuple[str, ...]) -> Any:
    if not _has_number(args, kwargs, positions, names):
        return args, kwargs
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    args = tuple(torch.tensor(a, dtype=_number_dtype(a, tensors)) if i in positions and isinstance(a, _NUMBERS) else a
                 for i, a in enumerate(args))
    kwargs = {k: torch.tensor(v, dtype=_number_dtype(v, tensors)) if k in names and isinstance(v, _NUMBERS) else v
              for k, v in kwargs.items()}
    return args, kwargs


def _announced_fallback(name: str, kernel: Kernel) -> Kernel:
    """The kernel, saying once per process, as MPS and vendor plugins do (TORCH_WARN_ONCE), that it ran on the
    CPU (the ``fallback:`` fault); every time under ``torch.set_warn_always(True)``, as TORCH_WARN_ONCE does."""
    import warnings

    text = ("The operator '%s' is not currently supported on the refdev device and will fall back to run on the "
            "CPU (ACCELENV_REFDEV_FAULTS fallback)" % name)

    warned: List[bool] = []

    def fallback(*args: Any, **kwargs: Any) -> Any:
        if not warned or torch.is_warn_always_enabled():  # once per process, as real backends warn
            warned.append(True)
            warnings.warn(text, UserWarning, stacklevel=2)
        return kernel(*args, **kwargs)

    return fallback


def _off_by_relative_error(kernel: Kernel) -> Kernel:
    def wrong(*args: Any, **kwargs: Any) -> Any:
        result = kernel(*args, **kwargs)
        for tensor in result if isinstance(result, (list, tuple)) else (result,):
            if isinstance(tensor, torch.Tensor) and (tensor.is_floating_point() or tensor.is_complex()):
                with torch.no_grad():
                    tensor.mul_(1.0 + WRONG_RELATIVE_ERROR)
        return result

    return wrong


def _announce(what: str, name: str) -> None:
    # Names the op in the stderr a probe runner keeps, since the process cannot report it afterwards.
    sys.stderr.write("refdev: injected %s in %s (ACCELENV_REFDEV_FAULTS)\n" % (what, name))
    sys.stderr.flush()


def _hang(name: str) -> Kernel:
    def hang(*args: Any, **kwargs: Any) -> Any:
        _announce("hang", name)
        while True:
            time.sleep(3600)

    return hang


def _crash(name: str) -> Kernel:
    def crash(*args: Any, **kwargs: Any) -> Any:
        _announce("crash (SIGABRT)", name)
        os.abort()

    return crash
