"""The hook through which verification evidence reaches the resolver (storage lives elsewhere).

The resolver asks `EvidenceLookup.status_for(...)` about each candidate cell it would pick; today it only
records the answer in the resolution (``evidence``) and warns on "broken". The decision points where
"avoid broken, prefer verified, --require-verified" belong are marked ``EVIDENCE:`` in resolver.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

EvidenceStatus = Literal["declared", "verified", "partial", "broken"]


@dataclass(frozen=True)
class CellEvidence:
    status: EvidenceStatus
    #: distinct hosts whose reports back the status
    hosts: int = 0
    detail: str | None = None


class EvidenceLookup(Protocol):
    def status_for(
        self, torch_version: str, build: str, python: str, os: str, arch: str
    ) -> CellEvidence | None:
        """The evidence for one matrix cell; None = no reports."""
