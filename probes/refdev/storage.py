"""Where a refdev tensor's bytes live: a CPU ``UntypedStorage`` attached to the device storage.

Each device StorageImpl is made with ``torch._C._construct_storage_from_data_pointer`` over the CPU
storage's bytes (non-owning, device ``refdev:0``), and the CPU storage is attached to its Python object.
torch preserves that Python object for the StorageImpl's lifetime, so the attribute survives every C++
shallow copy (autograd's saved tensors, ``.data``, ``detach``): any device TensorImpl rebuilds its CPU view
from its own sizes, strides and offset. Keying the data on the tensor object instead loses it in
backward. The real data pointer is what lets ``torch.save`` handle device tensors (it rejects storages
whose pointer is null but whose size is not).

A device tensor's geometry is set without copying by redispatching
``aten::set_.source_Storage_storage_offset`` to its CPU kernel, which only checks bounds, so views share
the device StorageImpl as on a real device. When an op grows the CPU bytes (``resize_``, ``out=``), the
tensor moves to a new device StorageImpl over the new bytes; the allocator charge follows the CPU bytes.

Imported only by ``probes.refdev.install`` after the availability check, so torch is present.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from probes.refdev.allocator import CachingAllocator

CPU_ATTR = "_refdev_cpu"
CHARGE_ATTR = "_refdev_charge"

_SET_STORAGE = torch.ops.aten.set_.source_Storage_storage_offset
_CPU_KERNEL = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


class Charge:
    """The allocator block of one CPU storage, shared by the device StorageImpls made over it."""

    __slots__ = ("block", "holders")

    def __init__(self, block: Any) -> None:
        self.block = block
        self.holders = 0


class StorageModel:
    def __init__(self, allocator: CachingAllocator, device_type: str) -> None:
        self.allocator = allocator
        self.device_type = device_type
        self.device = torch.device("privateuseone", 0)  # the same device before and after the rename

    def cpu_storage(self, device_storage: Any) -> Any:
        cpu = getattr(device_storage, CPU_ATTR, None)
        if cpu is None:
            raise RuntimeError(
                "this %s tensor has no data: it was made outside the refdev kernels "
                "(e.g. by torch._C._acc.create_empty_tensor); create it with torch.empty(..., device=%r)"
                % (self.device_type, self.device_type)
            )
        return cpu

    def cpu_view(self, tensor: torch.Tensor) -> torch.Tensor:
        """A CPU tensor aliasing ``tensor``'s bytes, with the same geometry."""
        cpu = self.cpu_storage(tensor.untyped_storage())
        view = torch.empty(0, dtype=tensor.dtype)
        view = view.set_(cpu, tensor.storage_offset(), tensor.shape, tensor.stride())
        if tensor.is_conj():  # conjugate-aware ops (copy_, mm, ...) receive the lazy bit, not the values
            view = view.conj()
        if tensor.is_neg():
            view = view._neg_view()
        return view

    def new_device_storage(self, cpu_storage: Any, charge: Any = None) -> Any:
        """A device StorageImpl over ``cpu_storage``'s bytes; charged to the allocator unless ``charge``."""
        if charge is None:
            nbytes = cpu_storage.nbytes()
            charge = Charge(self.allocator.malloc(nbytes) if nbytes else None)  # may raise OOM
        device_storage = torch._C._construct_storage_from_data_pointer(
            cpu_storage.data_ptr(), self.device, cpu_storage.nbytes()
        )
        setattr(device_storage, CPU_ATTR, cpu_storage)
        setattr(device_storage, CHARGE_ATTR, charge)
        charge.holders += 1
        # Not at exit: freeing thousands of simulated blocks would only slow the interpreter's shutdown.
        weakref.finalize(device_storage, self._release, charge).atexit = False
        return device_storage

    def current(self, device_storage: Any) -> Any:
        """``device_storage``, or a new one when its CPU bytes were reallocated (grown) since."""
        cpu = self.cpu_storage(device_storage)
        if cpu.data_ptr() == device_storage.data_ptr() and cpu.nbytes() == device_storage.nbytes():
            return device_storage
        charge = getattr(device_storage, CHARGE_ATTR)
        old = charge.block
        charge.block = self.allocator.malloc(cpu.nbytes()) if cpu.nbytes() else None
        if old is not None:
            self.allocator.free(old)
        return self.new_device_storage(cpu, charge)

    def _release(self, charge: Charge) -> None:
        charge.holders -= 1
        if charge.holders == 0 and charge.block is not None:
            self.allocator.free(charge.block)
            charge.block = None

    def place(self, target: torch.Tensor, device_storage: Any, like: torch.Tensor) -> torch.Tensor:
        """Give device tensor ``target`` the storage ``device_storage`` and the geometry of ``like``."""
        _SET_STORAGE.redispatch(
            _CPU_KERNEL, target, device_storage, like.storage_offset(), list(like.shape), list(like.stride())
        )
        return target

    def to_device(self, cpu_tensor: torch.Tensor, device_storage: Any = None) -> torch.Tensor:
        """A device tensor over ``cpu_tensor``'s bytes; a new storage unless ``device_storage`` is given."""
        if device_storage is None:
            device_storage = self.new_device_storage(cpu_tensor.untyped_storage())
        target = torch._C._acc.create_empty_tensor((0,), cpu_tensor.dtype)
        return self.place(target, device_storage, cpu_tensor)

    def restore_location(self, obj: Any, location: str) -> Any:
        """``torch.load`` hook: a storage saved from refdev comes back on refdev (None: not ours).

        torch's own PrivateUse1 path calls ``torch.UntypedStorage(n, device="refdev")``, which needs a C++
        allocator a Python backend does not have (it crashes the process).
        """
        if location != self.device_type and not location.startswith(self.device_type + ":"):
            return None
        if location not in (self.device_type, self.device_type + ":0"):
            raise RuntimeError(
                "cannot load a storage onto %s: %s has one device, index 0; use map_location=%r"
                % (location, self.device_type, self.device_type)
            )
        return self.new_device_storage(obj)
