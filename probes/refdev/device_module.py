"""``torch.refdev``: the device module torch looks up for the renamed PrivateUse1 backend.

This module object itself is registered (``torch._register_device_module``), so ``torch.refdev.X`` is the
function ``X`` below. ``torch.accelerator.is_available()`` / ``device_count()`` delegate here. The memory
functions mirror ``torch.cuda``'s names and keys; ``torch.accelerator.memory_*`` cannot reach them (it
asks the C++ allocator, which a Python backend does not have).

Imported only by ``probes.refdev.install`` after the availability check.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import torch

from probes.refdev.allocator import CachingAllocator

OutOfMemoryError = torch.OutOfMemoryError
DEVICE_NAME = "accelenv reference device (CPU-backed PrivateUse1)"

_allocator: Optional[CachingAllocator] = None
_rng_restores = True  # False under the ``rng`` fault: set_rng_state changes nothing


def attach(allocator: CachingAllocator, rng_fault: bool = False) -> None:
    global _allocator, _rng_restores
    _allocator = allocator
    _rng_restores = not rng_fault


def _alloc() -> CachingAllocator:
    if _allocator is None:
        raise RuntimeError("refdev is not installed in this process; call probes.refdev.install() first")
    return _allocator


def _check_device(device: Any) -> None:
    index = device.index if isinstance(device, torch.device) else device
    if index not in (None, 0, -1):
        raise ValueError("refdev has one device, index 0; got %r" % (device,))


# -- what torch and torch.accelerator call ----------------------------------------------------------
def is_available() -> bool:
    return _allocator is not None


def is_initialized() -> bool:
    return _allocator is not None


def _is_in_bad_fork() -> bool:
    return False


def _lazy_init() -> None:
    _alloc()


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(device: Any) -> None:
    _check_device(device)


class device(object):
    """``with torch.refdev.device(0):`` -- there is only device 0, so entering it changes nothing."""

    def __init__(self, device: Any) -> None:
        _check_device(device)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def synchronize(device: Any = None) -> None:
    """Kernels run synchronously on the CPU: nothing is ever pending."""
    _check_device(device)


def manual_seed(seed: int) -> None:
    """refdev kernels draw from the CPU generator, so seeding means seeding it (as ``torch.manual_seed``)."""
    torch.random.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    torch.random.default_generator.seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return torch.random.default_generator.initial_seed()


def get_rng_state(device: Any = "refdev") -> torch.Tensor:
    """The state of the generator refdev's random kernels draw from (the CPU one), as ``torch.cuda``'s."""
    _check_device(device if isinstance(device, (int, torch.device)) else None)
    return torch.random.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "refdev") -> None:
    _check_device(device if isinstance(device, (int, torch.device)) else None)
    if _rng_restores:
        torch.random.default_generator.set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state()]


def set_rng_state_all(new_states: Any) -> None:
    for state in new_states:
        set_rng_state(state)


def get_amp_supported_dtype() -> list:
    return [torch.float16, torch.bfloat16]


def get_device_name(device: Any = None) -> str:
    _check_device(device)
    return DEVICE_NAME


class DeviceProperties(object):
    """What ``get_device_properties`` gives, with ``torch.cuda``'s attribute names for what refdev has."""

    def __init__(self, name: str, total_memory: int) -> None:
        self.name = name
        self.total_memory = total_memory
        self.multi_processor_count = 1

    def __repr__(self) -> str:
        return "_RefdevDeviceProperties(name=%r, total_memory=%dMB)" % (self.name, self.total_memory >> 20)


def get_device_properties(device: Any = None) -> DeviceProperties:
    _check_device(device)
    return DeviceProperties(DEVICE_NAME, _alloc().capacity)


# -- memory, torch.cuda-style -------------------------------------------------------------------------
def memory_stats(device: Any = None) -> Dict[str, int]:
    _check_device(device)
    return _alloc().memory_stats()


def memory_allocated(device: Any = None) -> int:
    _check_device(device)
    return _alloc().stat("allocated_bytes.all.current")


def max_memory_allocated(device: Any = None) -> int:
    _check_device(device)
    return _alloc().stat("allocated_bytes.all.peak")


def memory_reserved(device: Any = None) -> int:
    _check_device(device)
    return _alloc().stat("reserved_bytes.all.current")


def max_memory_reserved(device: Any = None) -> int:
    _check_device(device)
    return _alloc().stat("reserved_bytes.all.peak")


def reset_peak_memory_stats(device: Any = None) -> None:
    _check_device(device)
    _alloc().reset_peak_stats()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _check_device(device)
    _alloc().reset_accumulated_stats()


def empty_cache() -> None:
    _alloc().empty_cache()


def mem_get_info(device: Any = None) -> Tuple[int, int]:
    """(free, total) bytes, as ``torch.cuda.mem_get_info``: free is what the allocator has not reserved."""
    _check_device(device)
    allocator = _alloc()
    return max(allocator.capacity - allocator.reserved(), 0), allocator.capacity


def get_memory_capacity() -> int:
    return _alloc().capacity


def set_memory_capacity(nbytes: int) -> None:
    """Change the simulated device size; blocks already reserved stay (like a real device, no eviction)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
        raise ValueError("refdev memory capacity must be a positive number of bytes; got %r" % (nbytes,))
    _alloc().capacity = nbytes


# -- the C++ side's Python hooks ----------------------------------------------------------------------
class Hooks(torch._C._acc.PrivateUse1Hooks):
    """Needed for backward: the autograd engine asks whether the backend is there."""

    def is_available(self) -> bool:
        return True

    def is_built(self) -> bool:
        return True

    def has_primary_context(self, device_index: int) -> bool:
        return True


class Guard(torch._C._acc.DeviceGuard):
    """The autograd engine and torch.Stream need a guard; 2.13 fixes index 0 and a no-op stream."""

    def type_(self) -> Any:
        return torch._C._autograd.DeviceType.PrivateUse1
