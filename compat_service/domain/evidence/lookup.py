"""The hook through which verification evidence reaches the resolver (storage lives elsewhere).

The resolver asks `EvidenceLookup.status_for(...)` about each candidate cell it would pick and gets a
`CellVerdict` (status, hosts, detail); steering.py decides what to do with it. The service's public
shape of a cell's evidence is `cells.CellEvidence` (GET /v1/evidence), a different, fuller object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

#: the resolver's verdict on a candidate's cell: declared (no report reached it, or too few hosts), verified,
#: partial, broken; a cell's published status adds "observed" (`status.CellStatus`)
EvidenceStatus = Literal["declared", "verified", "partial", "broken"]


@dataclass(frozen=True)
class CellVerdict:
    """What the evidence says about one declared cell, as the resolver reads it."""

    status: EvidenceStatus
    #: distinct hosts whose reports back the status
    hosts: int = 0
    detail: str | None = None


class EvidenceLookup(Protocol):
    def status_for(
        self, torch_version: str, build: str, python: str, os: str, arch: str
    ) -> CellVerdict | None:
        """The evidence for one matrix cell; None = no reports."""
