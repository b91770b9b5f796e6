"""The matrix page's model: torch releases × builds, each square summing the matrix cells under it.

The cells are `GET /v1/matrix`'s rows (``matrix_cells``: declared cells joined with their evidence, then
the observed ones), filtered the same way; a square shows how many of its cells (Python × platform) have
each status and takes the colour of the most telling one (broken, partial, verified, observed, declared).
A square with no cell is ``unknown``: the matrix does not list that build for that release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from packaging.version import InvalidVersion, Version

from compat_service.domain.backends import label_family
from compat_service.domain.evidence.cells import MatrixCell

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


@dataclass
class Heatmap:
    columns: list[str]
    rows: list[tuple[str, list[Square]]]
    cells: int
    #: the matrix cells of the square named by the URL's torch and build
    selected: list[MatrixCell] = field(default_factory=list)
    selected_key: tuple[str | None, str | None] = (None, None)


def matrix_url(state: dict[str, str], **changes: str | None) -> str:
    merged = {**state, **changes}
    ordered = {k: merged[k] for k in (*FILTERS, "torch", "build") if merged.get(k)}
    return "/matrix" + ("?" + urlencode(ordered) if ordered else "")


def build_heatmap(
    cells: list[MatrixCell], variant_labels: list[str], state: dict[str, str]
) -> Heatmap:
    """Squares for ``cells`` (already filtered by Python, platform and status); ``state`` is the URL's."""
    family = state.get("family")
    by_square: dict[tuple[str, str], dict[str, int]] = {}
    selected: list[MatrixCell] = []
    for cell in cells:
        build = cell.torch_build or "unknown"
        if family and (label_family(build) or cell.backend) != family:
            continue
        counts = by_square.setdefault((cell.torch_version, build), {})
        counts[cell.status] = counts.get(cell.status, 0) + 1
        if (cell.torch_version, build) == (state.get("torch"), state.get("build")):
            selected.append(cell)
    builds = {b for _, b in by_square}
    columns = [label for label in variant_labels if label in builds]
    columns += sorted(builds - set(columns))
    versions = sorted({t for t, _ in by_square}, key=_version_key, reverse=True)
    rows = []
    for version in versions:
        squares = []
        for build in columns:
            counts = by_square.get((version, build), {})
            href = matrix_url(state, torch=version, build=build) + "#evidence" if counts else ""
            squares.append(Square(torch=version, build=build, counts=counts, href=href))
        rows.append((version, squares))
    # evidence first: the cells with reports are what a visitor opens a square for
    selected.sort(key=lambda c: (-c.reports, c.python, c.os, c.arch))
    total = sum(sum(counts.values()) for counts in by_square.values())
    return Heatmap(
        columns=columns, rows=rows, cells=total, selected=selected,
        selected_key=(state.get("torch"), state.get("build")),
    )


def evidence_params(cell: MatrixCell) -> dict[str, str]:
    """`GET /v1/evidence`'s query for one evidence cell (its full key)."""
    params = {"torch": cell.torch_version, "python": cell.python, "os": cell.os, "arch": cell.arch,
              "backend": cell.backend or ""}
    for name, value in (("build", cell.torch_build), ("runtime", cell.runtime_version),
                        ("driver", cell.driver_version), ("device_arch", cell.device_arch)):
        if value:
            params[name] = value
    return params
