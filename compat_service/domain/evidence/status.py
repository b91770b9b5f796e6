"""The evidence status rules: how probe reports turn a matrix cell from *declared* into something known.

This module is the one place these rules live. The database keeps per-cell counters incrementally (see
``compat_service.db.evidence.ingest``); the counters a rule needs are exactly the fields of
:class:`ReportVerdict`, added up per cell into :class:`CellTally`.

A check is **bad** when its status is ``failed``, ``timeout``, ``crashed`` or ``error``. In the ``ops`` and
``allocator`` groups ``unsupported`` is a **gap**: the backend has no kernel for the op (the dispatcher's
"Could not run 'aten::X' with arguments from the ... backend") or lacks the allocator feature, so a model
that needs it fails there. In the ``smoke`` and ``models`` groups (**train groups**) ``unsupported`` is bad:
a device that cannot run the training step or a common model (a missing ``aten::mm``, a missing pooling
backward) cannot train, whatever else passed. Elsewhere ``unsupported`` (no autocast kernels, no distributed
backend) and ``skipped`` are neither good nor bad. A check is **failing** when it is bad or a gap. The
**required** groups are ``detect``, ``smoke`` and ``models``: they say whether torch sees the device and can
train on it at all.

A report **passes** when no required check is bad and at least one smoke check passed: a report whose smoke
or models group failed never counts as passing for its cell. The probe's own ``summary.ok`` and exit code
follow the same rule (``probes.checks.registry``, pinned equal to this module by a test). A host counts towards
verification when at least one of its reports passed.

Rules, first match wins (N = ``Settings.verified_min_hosts``, S = ``Settings.verified_min_submitters``):

=============  ===================================================================================
health         when
=============  ===================================================================================
``broken``     some report has a bad detect/smoke check ("no kernel image is available", a crash or
               out-of-memory in the train step, the device not detected)
``partial``    no required check ever failed, smoke passed somewhere, and some ops / allocator / amp /
               distributed check is failing (bad or a gap; the failing checks are listed)
``verified``   no check ever failing, and passing reports came from at least S distinct submitters
               and, as corroboration, from at least N distinct hosts. A submitter is a token's owner
               (set by the admin: two tokens of one owner are one submitter); a host fingerprint is
               self-reported, so one owner inventing fingerprints verifies nothing
``unconfirmed``  reports exist but none of the above: too few passing hosts or submitters, or nothing ran
``none``       no report at all
=============  ===================================================================================

The **status** shown for a cell combines health with whether the declared matrix lists the cell:

=============  ===================================================================================
status         when
=============  ===================================================================================
``observed``   the matrix does not list the combination (a PrivateUse1 backend such as ``refdev``,
               a torch build the matrix does not know); its health is still reported beside it
``verified``   declared, health ``verified``
``partial``    declared, health ``partial``
``broken``     declared, health ``broken``
``declared``   declared, health ``none`` or ``unconfirmed`` (not enough evidence yet)
=============  ===================================================================================

A declared cell can hold several evidence cells (drivers, GPU architectures); seen as one, its health is
the most severe of theirs, in the order of the first table (:func:`combine_health`).

One broken report marks a cell broken: a combination that crashed on a real host is worth a warning even
when others pass, and the failing checks say which.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from pydantic import BaseModel, Field

from compat_service.domain.evidence.lookup import EvidenceStatus
from compat_service.domain.evidence.report import CheckResult

Health = Literal["verified", "partial", "broken", "unconfirmed", "none"]
#: a cell's status (GET /v1/matrix, the pages): a verdict, or "observed" (reports, for a cell the matrix
#: does not declare); the one list, which the API's `status` filter and the schemas read
CellStatus = Literal[EvidenceStatus, "observed"]
CELL_STATUSES: tuple[str, ...] = get_args(CellStatus)

#: statuses that count as a failure of the check: the one list in the service (the probes, which cannot
#: import it, keep `probes.checks.outcome.BAD_STATUSES`; a test pins the two equal)
FailingStatus = Literal["failed", "timeout", "crashed", "error"]
BAD_STATUSES: frozenset[str] = frozenset(get_args(FailingStatus))
#: check groups that must pass for a combination to be usable at all
REQUIRED_GROUPS: frozenset[str] = frozenset({"detect", "smoke", "models"})
#: groups where ``unsupported`` is bad: the device cannot train (the probe's ``registry.REQUIRED``)

#: groups where ``unsupported`` is a gap (a missing kernel or allocator feature), not a neutral outcome
GAP_GROUPS: frozenset[str] = frozenset({"ops", "allocator"})
TRAIN_GROUPS: frozenset[str] = frozenset({"smoke", "models"})
#: groups where an ``unsupported`` check is failing: the gaps and the train groups
UNSUPPORTED_FAILS: frozenset[str] = GAP_GROUPS | TRAIN_GROUPS


class ReportVerdict(BaseModel):
    """What one report contributes to its cell's counters."""

    passed: bool = Field(description="no bad required check, and at least one smoke check passed")
    required_bad: bool = Field(description="some detect/smoke/models check is bad")
    other_bad: bool = Field(description="some ops/allocator/amp/distributed check is failing (bad or a gap)")
    smoke_passed: bool = Field(description="at least one smoke check passed")
    failing_checks: list[str] = Field(default_factory=list)


class CellTally(BaseModel):
    """The per-cell counters the rules read; maintained incrementally by the ingest."""

    reports: int = 0
    hosts: int = 0
    passing_hosts: int = 0
    #: distinct tokens that submitted reports, and those that submitted a passing one
    submitters: int = 0
    passing_submitters: int = 0
    required_bad_reports: int = 0
    other_bad_reports: int = 0
    smoke_passed_reports: int = 0


def is_bad(group: str, status: str) -> bool:
    """A failure of the check: a bad status, or ``unsupported`` in a train group."""
    return status in BAD_STATUSES or (status == "unsupported" and group in TRAIN_GROUPS)


def is_failing(group: str, status: str) -> bool:
    """Bad, or a gap (``unsupported`` in a gap group)."""
    return is_bad(group, status) or (status == "unsupported" and group in GAP_GROUPS)


def classify_report(checks: Iterable[CheckResult]) -> ReportVerdict:
    """Sum up one report's checks into the flags the cell counters need."""
    required_bad = other_bad = smoke_passed = False
    failing: list[str] = []
    for check in checks:
        if check.group == "smoke" and check.status == "passed":
            smoke_passed = True
        if not is_failing(check.group, check.status):
            continue
        failing.append(check.id)
        if check.group in REQUIRED_GROUPS:
            required_bad = True
        else:
            other_bad = True
    return ReportVerdict(
        passed=smoke_passed and not required_bad,
        required_bad=required_bad,
        other_bad=other_bad,
        smoke_passed=smoke_passed,
        failing_checks=failing,
    )


def cell_health(tally: CellTally | None, *, min_hosts: int, min_submitters: int = 1) -> Health:
    """Apply the health rules of the module docstring to one cell's counters."""
    if tally is None or tally.reports == 0:
        return "none"
    if tally.required_bad_reports > 0:
        return "broken"
    if tally.other_bad_reports > 0:
        return "partial" if tally.smoke_passed_reports > 0 else "unconfirmed"
    if tally.passing_hosts >= max(min_hosts, 1) and tally.passing_submitters >= max(min_submitters, 1):
        return "verified"
    return "unconfirmed"


def cell_status(health: Health, *, declared: bool) -> CellStatus:
    """Combine health with matrix membership (second table of the module docstring)."""
    if not declared:
        return "observed"
    if health in ("verified", "partial", "broken"):
        return health
    return "declared"


#: most severe first: the order :func:`combine_health` reads
HEALTH_SEVERITY: tuple[Health, ...] = ("broken", "partial", "verified", "unconfirmed", "none")


def combine_health(healths: Iterable[Health]) -> Health:
    """The health of several evidence cells seen as one (a declared cell, for the resolver)."""
    present = set(healths)
    return next((h for h in HEALTH_SEVERITY if h in present), "none")
