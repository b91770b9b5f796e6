"""A resolver failure before it becomes a public error: plain data, no pydantic.

`explanation.to_error` turns it into the `UnsatisfiableError` subclass named by `code`. Kept apart
so the success path of `accelenv resolve` never imports pydantic.
"""

from __future__ import annotations

from typing import TypedDict

#: one cause of a failure: (constraint, origin, detail)
CauseRow = tuple[str, str, str | None]


class ConflictFacts(TypedDict, total=False):
    """The facts of a failure the alternatives search reads."""

    #: the --python asked for (python-not-supported)
    python: str | None
    #: the --gpu-arch asked for (arch-not-covered)
    gpu_arch: str | None
    #: the lowest driver a build that fits needs (driver-too-old)
    driver_needed: str
    #: the companions no build provides (companion-missing)
    missing: list[str]
    #: the runtimes the builds that fit use
    runtimes: list[str]
    #: the known_bad.yaml rules that refused the builds (known-bad)
    rules: list[str]


class Conflict(Exception):
    """The resolver's internal, pydantic-free form of a failure; `to_error` makes the public error."""

    code: str
    message: str
    hint: str | None
    causes: list[CauseRow]
    #: facts the alternatives search uses, e.g. {"driver_needed": "530.30.02"}
    facts: ConflictFacts
    #: the stage (state.STAGES) every candidate patch dropped out at or before, when the stages refused them all
    #: (set by `explanation.explain_failure`; None for any other failure)
    stage: str | None

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        causes: list[CauseRow] | None = None,
        facts: ConflictFacts | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.causes = [] if causes is None else causes
        self.facts = ConflictFacts() if facts is None else facts
        self.stage = None
