"""The matrix page's model: torch releases × builds, each square summing the matrix cells under it.

The cells are `GET /v1/matrix`'s rows, in its one row form (``matrix_cells.MatrixRow``: declared cells joined
with their evidence, then the observed ones), filtered the same way; a square shows how many of its cells
(Python × platform) have each status and takes the colour of the most telling one (broken, partial, verified,
observed, declared).
A square with no cell is ``unknown``: the matrix does not list that build for that release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from packaging.version import InvalidVersion, Version

from compat_service.db.evidence.matrix_cells import MatrixRow
from compat_service.domain.backends import label_family

#: every status a square can show, most telling first (its colour is the first one present)
STATUSES = ("broken", "partial", "verified", "observed", "declared")
LEGEND = (
    ("verified", "V", "no check failing, and passing reports from enough distinct hosts"),
    ("partial", "P", "the device trains (smoke passed) but some ops, allocator, AMP or distributed checks fail"),
    ("broken", "B", "a report has a failing detect or smoke check (not detected, crash, out of memory)"),
    ("observed", "O", "reports for a combination the matrix does not list (e.g. a PrivateUse1 backend)"),
    ("declared", "D", "the matrix lists it, with its sources; not enough probe reports yet"),
    ("unknown", "–", "the matrix does not list this build for this release, and no report names it"),
)
LETTER = {status: letter for status, letter, _ in LEGEND}
FILTERS = ("family", "platform", "python", "status")


def _version_key(text: str) -> tuple[int, Version | str]:
    try:
        return 1, Version(text)
    except InvalidVersion:
        return 0, text


@dataclass
class Square:
    """One release × build square; its status, letter and label are computed once (the page has ~800)."""

    torch: str
    build: str
    counts: dict[str, int]
    href: str
    status: str = field(init=False)
    letter: str = field(init=False)
    total: int = field(init=False)
    label: str = field(init=False)

    def __post_init__(self) -> None:
        self.status = next((s for s in STATUSES if self.counts.get(s)), "unknown")
        self.letter = LETTER[self.status]
        self.total = sum(self.counts.values())
        parts = ", ".join(f"{n} {s}" for s in STATUSES if (n := self.counts.get(s)))
        self.label = f"torch {self.torch} {self.build}: {self.status}" + (f" ({parts})" if parts else "")


#: most torch versions / builds the matrix does not list (seen only in reports) that become rows / columns of
#: the page, those with the most reports first: reports are submitted by token holders, and a page everyone
#: loads must not grow with what they make up (issue 24); GET /v1/matrix pages through all of them
MAX_OBSERVED_ROWS = 12
MAX_OBSERVED_COLUMNS = 12


@dataclass
class Heatmap:
    columns: list[str]
    rows: list[tuple[str, list[Square]]]
    cells: int
    #: observed cells left off the page (their release or build is beyond the caps above), and how many
    #: releases and builds that is
    hidden_cells: int = 0
    hidden_rows: int = 0
    hidden_columns: int = 0

    def weight(self) -> int:
        """Roughly what this model holds, in bytes (the page cache is bounded by it)."""
        return 2_000 + 400 * len(self.rows) * max(len(self.columns), 1)


def matrix_url(state: dict[str, str], **changes: str | None) -> str:
    merged = {**state, **changes}
    ordered = {k: merged[k] for k in (*FILTERS, "torch", "build") if merged.get(k)}
    return "/matrix" + ("?" + urlencode(ordered) if ordered else "")


def _kept(counts: dict[str, int], listed: set[str], cap: int) -> set[str]:
    """``listed`` and the ``cap`` others with the most reports (ties: the highest version / name)."""
    others = sorted((k for k in counts if k not in listed), key=lambda k: (counts[k], _version_key(k)), reverse=True)
    return (listed & counts.keys()) | set(others[:cap])


def _tally(
    cells: Sequence[MatrixRow], family: str | None, listed_versions: set[str], listed_builds: set[str]
) -> tuple[dict[tuple[str, str], dict[str, int]], dict[str, int], dict[tuple[str, str], int]]:
    """({square: {status: cells}}, {release: reports}, {square: reports}) over the cells of ``family``; the
    releases and builds the matrix lists (declared cells) are added to ``listed_versions`` / ``listed_builds``."""
    by_square: dict[tuple[str, str], dict[str, int]] = {}
    reports_by_version: dict[str, int] = {}
    reports_by_square: dict[tuple[str, str], int] = {}
    for cell in cells:
        build = cell.torch_build or "unknown"
        if family and (label_family(build) or cell.backend) != family:
            continue
        counts = by_square.setdefault((cell.torch_version, build), {})
        counts[cell.status] = counts.get(cell.status, 0) + 1
        if cell.declared:
            listed_versions.add(cell.torch_version)
            listed_builds.add(build)
        square = (cell.torch_version, build)
        reports_by_version[cell.torch_version] = reports_by_version.get(cell.torch_version, 0) + cell.reports
        reports_by_square[square] = reports_by_square.get(square, 0) + cell.reports
    return by_square, reports_by_version, reports_by_square


def _reports_by_build(reports_by_square: dict[tuple[str, str], int], kept_versions: set[str]) -> dict[str, int]:
    """Reports per build, counting the kept releases' squares only."""
    reports_by_build: dict[str, int] = {}
    for (version, build), reports in reports_by_square.items():
        if version in kept_versions:
            reports_by_build[build] = reports_by_build.get(build, 0) + reports
    return reports_by_build


def _square_rows(
    by_square: dict[tuple[str, str], dict[str, int]], columns: list[str], state: dict[str, str]
) -> list[tuple[str, list[Square]]]:
    """One row of squares per release, newest first, one square per column."""
    versions = sorted({t for t, _ in by_square}, key=_version_key, reverse=True)
    rows = []
    for version in versions:
        squares = []
        for build in columns:
            counts = by_square.get((version, build), {})
            href = matrix_url(state, torch=version, build=build) + "#evidence" if counts else ""
            squares.append(Square(torch=version, build=build, counts=counts, href=href))
        rows.append((version, squares))
    return rows


def build_heatmap(
    cells: Sequence[MatrixRow], variant_labels: list[str], state: dict[str, str],
    *, max_observed_rows: int = MAX_OBSERVED_ROWS, max_observed_columns: int = MAX_OBSERVED_COLUMNS,
) -> Heatmap:
    """Squares for ``cells`` (already filtered by Python, platform and status); ``state`` holds the
    validated filters (the squares link to them). Releases and builds only reports name are capped."""
    listed_versions: set[str] = set()
    listed_builds = set(variant_labels)
    by_square, reports_by_version, reports_by_square = _tally(cells, state.get("family"), listed_versions,
                                                              listed_builds)
    kept_versions = _kept(reports_by_version, listed_versions, max_observed_rows)
    # the builds of the kept releases only: a column of squares all left off would show nothing
    reports_by_build = _reports_by_build(reports_by_square, kept_versions)
    kept_builds = _kept(reports_by_build, listed_builds, max_observed_columns)
    all_builds = {b for _, b in by_square}
    hidden = 0
    for key in [k for k in by_square if k[0] not in kept_versions or k[1] not in kept_builds]:
        hidden += sum(by_square.pop(key).values())
    builds = {b for _, b in by_square}
    columns = [label for label in variant_labels if label in builds]
    columns += sorted(builds - set(columns))
    rows = _square_rows(by_square, columns, state)
    total = sum(sum(counts.values()) for counts in by_square.values())
    return Heatmap(
        columns=columns, rows=rows, cells=total, hidden_cells=hidden,
        hidden_rows=len(reports_by_version.keys() - kept_versions),
        hidden_columns=len(all_builds - kept_builds),
    )


def square_cells(cells: Sequence[MatrixRow], state: dict[str, str]) -> list[MatrixRow]:
    """The cells of the square ``state`` names (its torch and build), evidence first."""
    family = state.get("family")
    selected = [
        c for c in cells
        if (c.torch_version, c.torch_build or "unknown") == (state.get("torch"), state.get("build"))
        and not (family and (label_family(c.torch_build or "unknown") or c.backend) != family)
    ]
    # evidence first: the cells with reports are what a visitor opens a square for
    selected.sort(key=lambda c: (-c.reports, c.python, c.os, c.arch))
    return selected


def evidence_params(cell: MatrixRow) -> dict[str, str]:
    """`GET /v1/evidence`'s query for one evidence cell (its full key)."""
    params = {"torch": cell.torch_version, "python": cell.python, "os": cell.os, "arch": cell.arch,
              "backend": cell.backend or ""}
    for name, value in (("build", cell.torch_build), ("runtime", cell.runtime_version),
                        ("driver", cell.driver_version), ("device_arch", cell.device_arch)):
        if value:
            params[name] = value
    return params
