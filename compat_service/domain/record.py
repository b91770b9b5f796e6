"""`Record`: the base of the small value classes on the path of `accelenv resolve` (the resolver's stage records,
hardware verdicts, wheel-tag floors): slotted, built by an explicit ``__init__``, equal and hashable by their fields.

Not dataclasses: ``@dataclass`` writes and compiles each class's methods when its module is imported, and
`accelenv resolve` pays that for every class before it answers (benchmarks/README.md has the figures). The model
is packaging's ``tags.Tag``: ``__slots__`` and an explicit ``__init__`` per class; what every record shares
(equality, hash and repr over ``__slots__``, in order) is written once here. A record is not changed once built,
by convention, as `Resolution`.
"""

from __future__ import annotations

__all__ = ["Record"]


class Record:
    """Equal to a record of the same class with equal fields; hashed and shown by its fields (``__slots__``)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self.__slots__])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
