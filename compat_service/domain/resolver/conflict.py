"""A resolver failure before it becomes a public error: plain data, no pydantic.

`explanation.to_error` turns it into the `UnsatisfiableError` subclass named by `code`. Kept apart
so the success path of `accelenv resolve` never imports pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: one cause of a failure: (constraint, origin, detail)
CauseRow = tuple[str, str, str | None]


@dataclass(eq=False)  # exceptions must stay hashable
class Conflict(Exception):
    """The resolver's internal, pydantic-free form of a failure; `to_error` makes the public error."""

    code: str
    message: str
    hint: str | None = None
    causes: list[CauseRow] = field(default_factory=list)
    #: facts the alternatives search uses, e.g. {"driver_needed": "530.30.02"}
    facts: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)
