"""The runtime base of the generated row classes (rows.py): what every row does, written once by hand.

rows_codegen.py writes one class per schema model onto `Frozen`; what they share (immutability, equality,
the JSON form, a changed copy) lives here, so the generator carries no second copy of it.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar, TypeVar

from compat_service.domain.json_types import JsonObject

__all__ = ["Fields", "Frozen", "JsonObject", "as_json", "replace", "row_json", "set_slot"]

#: sets a slot of a frozen row (its own __setattr__ refuses): the generated __init__ and from_json use it
set_slot = object.__setattr__
#: (attribute, JSON key) of every field of a row class, in the schema's order
Fields = tuple[tuple[str, str], ...]
_Frozen_T = TypeVar("_Frozen_T", bound="Frozen")


class Frozen:
    """Base of every row class: slotted, immutable once built, equal when of one class with equal fields."""

    __slots__ = ()
    _fields: ClassVar[Fields] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: build a changed copy with rows.replace")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name, _ in self._fields)

    __hash__ = None  # type: ignore[assignment]  # rows hold lists, as the schema's frozen models do

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name, _ in self._fields)
        return f"{type(self).__name__}({fields})"


def as_json(value: object) -> object:
    """A row (or a list or dict of rows) in the schema's JSON form: ``model_dump(mode="json", by_alias=True)``."""
    if isinstance(value, Frozen):
        return row_json(value)
    if isinstance(value, list):
        return [as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def row_json(row: Frozen) -> JsonObject:
    """One row in the schema's JSON form (`as_json` of a row)."""
    return {key: as_json(getattr(row, name)) for name, key in row._fields}


def replace(row: _Frozen_T, **changes: object) -> _Frozen_T:
    """A copy of ``row`` with ``changes`` (attribute names) applied."""
    values = {name: getattr(row, name) for name, _ in row._fields}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(row).__name__} has no field {sorted(unknown)}")
    return type(row)(**{**values, **changes})
