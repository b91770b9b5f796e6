"""`Record`: the base of the small value classes on the path of `accelenv resolve` (the resolver's stage records,
hardware verdicts, wheel-tag floors): slotted, built by an explicit ``__init__``, equal and hashable by their fields.

Not dataclasses: ``@dataclass`` writes and compiles each class's methods when its module is imported, and
`accelenv resolve` pays that for every class before it answers (benchmarks/README.md has the figures). The model
is packaging's ``tags.Tag``: ``__slots__`` and an explicit ``__init__`` per class; what every record shares
(equality, hash and repr over ``__slots__``, in order) is written once here. A record is not changed once built,
by convention, as `Resolution`.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import ClassVar

__all__ = ["Record"]


class Record:
    """Equal to a record of the same class with equal fields; hashed and shown by its fields (``__slots__``)."""

    __slots__: tuple[str, ...] = ()
    #: the fields' values, in ``__slots__`` order (one getter per class, made with the class: records are hashed
    #: as dict keys on every resolve)
    _values: ClassVar[Callable[[Record], tuple[object, ...]]] = staticmethod(lambda record: ())

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._values = staticmethod(_getter(cls.__slots__))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return type(self)._values(self) == type(other)._values(other)

    def __hash__(self) -> int:
        return hash(type(self)._values(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


def _getter(names: tuple[str, ...]) -> Callable[[Record], tuple[object, ...]]:
    """The tuple of ``names``' values of a record (`operator.attrgetter`, which gives one name's value bare)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()
