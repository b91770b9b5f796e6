"""How evidence steers the resolver (used only when an EvidenceLookup is given).

- A candidate build whose cell is ``broken`` is passed over while another candidate (another build of the
  same patch, or an older patch) is not; when every one is broken the newest is still chosen, with a warning.
- ``--require-verified`` accepts only ``verified`` cells; when none fits, :class:`NotVerifiedError` names the
  nearest verified alternative the evidence knows.
- The chosen cell's status goes into the answer: a reason when verified, a warning naming the failing checks
  when partial or broken.

The status of a cell comes from ``status`` (via the lookup); this module only decides what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from compat_service.domain.backends import CPU_WHEEL_FAMILIES, label_family
from compat_service.domain.errors import Alternative, Cause, NotVerifiedError
from compat_service.domain.evidence.lookup import CellVerdict, EvidenceLookup

C = TypeVar("C")
#: verified alternatives listed in a NotVerifiedError
MAX_ALTERNATIVES = 3


class EvidenceSteering:
    """Per resolution: asks the lookup about candidates and remembers what it passed over, and why."""

    def __init__(self, lookup: EvidenceLookup, *, os: str, arch: str, require_verified: bool) -> None:
        self.lookup = lookup
        self.os = os
        self.arch = arch
        self.require_verified = require_verified
        self.passed_over: list[tuple[str, str, str, CellVerdict]] = []

    def status(self, version: str, label: str, python: str) -> CellVerdict:
        found = self.lookup.status_for(version, label, python, self.os, self.arch)
        return found if found is not None else CellVerdict(status="declared")

    def pick(
        self, version: str, python: str, candidates: Sequence[C], label_of: Callable[[C], str],
        best: Callable[[list[C]], C],
    ) -> C | None:
        """The best acceptable candidate of one patch, or None to try an older patch."""
        acceptable: list[C] = []
        for c in candidates:
            cell = self.status(version, label_of(c), python)
            ok = cell.status == "verified" if self.require_verified else cell.status != "broken"
            if ok:
                acceptable.append(c)
            else:
                self.passed_over.append((version, label_of(c), python, cell))
        return best(acceptable) if acceptable else None

    def notes(self, chosen_version: str, chosen_label: str) -> list[str]:
        """Warnings for the broken cells passed over on the way to the chosen one."""
        return [
            f"passed over torch {v} {label} (Python {py}): reports mark it broken"
            + (f" ({cell.detail})" if cell.detail else "")
            for v, label, py, cell in self.passed_over
            if cell.status == "broken" and (v, label) != (chosen_version, chosen_label)
        ]

    def not_verified(self, request_text: str, family: str, python: str | None) -> NotVerifiedError:
        causes = [
            Cause(
                constraint=f"torch {v} {label} (Python {py}) is {cell.status}",
                origin="evidence: probe reports",
                detail=cell.detail,
            )
            for v, label, py, cell in self.passed_over[:8]
        ]
        causes.append(Cause(constraint="status == verified", origin="request: --require-verified"))
        return NotVerifiedError(
            f"no combination matching {request_text} on {self.os}-{self.arch} is verified by probe reports",
            hint="drop --require-verified to accept declared combinations, or submit probe reports "
            "(`accelenv probe --submit URL`) from hosts that run it",
            causes=causes,
            alternatives=self._alternatives(family, python),
        )

    def _alternatives(self, family: str, python: str | None) -> list[Alternative]:
        verified_cells: Callable[[str, str], list[tuple[str, str, str]]] | None = getattr(
            self.lookup, "verified_cells", None
        )
        if verified_cells is None:
            return []
        cells = [
            (t, build, py)
            for t, build, py in verified_cells(self.os, self.arch)
            if label_family(build) == family or (family in CPU_WHEEL_FAMILIES and build == "cpu")
        ]
        # nearest: the same Python first, then the newest torch
        cells.sort(key=lambda cell: (cell[2] != python, _version_key(cell[0])))
        return [
            Alternative(
                description=f"torch {t} {build} on Python {py} is verified",
                request={"torch": t, "python": py, "backend": build},
            )
            for t, build, py in cells[:MAX_ALTERNATIVES]
        ]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(-int(part) if part.isdigit() else 0 for part in version.split("."))


def answer_notes(cell: CellVerdict, version: str, label: str, platform: str) -> tuple[str | None, str | None]:
    """(reason, warning) the answer states for the chosen cell."""
    where = f"torch {version} {label} on {platform}"
    if cell.status == "verified":
        return f"{where} is verified: {cell.detail or f'{cell.hosts} host(s)'}", None
    if cell.status == "partial":
        return None, f"reports mark {where} as partial: it runs, but some checks fail" + (
            f" ({cell.detail})" if cell.detail else ""
        )
    if cell.status == "broken":
        return None, f"reports mark {where} as broken" + (f": {cell.detail}" if cell.detail else "")
    return f"{where} is declared by the matrix; probe reports do not verify it yet" + (
        f" ({cell.detail})" if cell.detail else ""
    ), None
