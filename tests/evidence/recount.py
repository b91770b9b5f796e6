"""Recount a database's evidence from its stored reports, independently of the ingest code, and compare.

The rules are restated here from docs (compat_service/domain/evidence/status.py's docstring): a report
*passes* when a smoke check passed and no detect/smoke check is bad; a host or submitter counts as
passing when one of its reports passed.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

BAD = {"failed", "timeout", "crashed", "error"}
STATUSES = ("passed", "failed", "unsupported", "skipped", "timeout", "crashed", "error")
GAP_GROUPS = {"ops", "allocator"}


def _verdict(checks: list[dict[str, Any]]) -> dict[str, bool]:
    smoke = any(c["group"] == "smoke" and c["status"] == "passed" for c in checks)
    failing = [c for c in checks if c["status"] in BAD or (c["status"] == "unsupported" and c["group"] in GAP_GROUPS)]
    required_bad = any(c["group"] in ("detect", "smoke") for c in failing)
    other_bad = any(c["group"] not in ("detect", "smoke") for c in failing)
    return {"passed": smoke and not required_bad, "required_bad": required_bad, "other_bad": other_bad,
            "smoke_passed": smoke}


def recount(engine: Engine) -> tuple[dict[int, dict[str, int]], dict[tuple[int, str], Counter[str]]]:
    """Per cell id: the cell counters; per (cell id, check id): the counts by status."""
    cells: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"reports": 0, "hosts": set(), "passing_hosts": set(), "submitters": set(),
                 "passing_submitters": set(), "required_bad_reports": 0, "other_bad_reports": 0,
                 "smoke_passed_reports": 0}
    )
    checks: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    with engine.connect() as conn:
        # a submitter counts as its token's owner (revision 0009: the owner's first token id)
        rows = conn.execute(sa.text(
            "SELECT r.cell_id, r.host_fingerprint, coalesce(t.owner_key, r.submitter_id), r.body "
            "FROM probe_report r LEFT JOIN api_token t ON t.id = r.submitter_id"
        ))
        for cell_id, host, submitter, body in rows:
            report = json.loads(body)
            verdict = _verdict(report["checks"])
            cell = cells[cell_id]
            submitter = submitter or 0
            cell["reports"] += 1
            cell["hosts"].add(host)
            cell["submitters"].add(submitter)
            if verdict["passed"]:
                cell["passing_hosts"].add(host)
                cell["passing_submitters"].add(submitter)
            cell["required_bad_reports"] += verdict["required_bad"]
            cell["other_bad_reports"] += verdict["other_bad"]
            cell["smoke_passed_reports"] += verdict["smoke_passed"]
            for check in report["checks"]:
                checks[(cell_id, check["id"])][check["status"]] += 1
    flat = {cid: {k: len(v) if isinstance(v, set) else v for k, v in c.items()} for cid, c in cells.items()}
    return flat, checks


def stored_counters(engine: Engine) -> tuple[dict[int, dict[str, int]], dict[tuple[int, str], Counter[str]]]:
    """What the evidence tables say, in ``recount``'s shape (cells with no report left are left out)."""
    names = ("reports", "hosts", "passing_hosts", "submitters", "passing_submitters", "required_bad_reports",
             "other_bad_reports", "smoke_passed_reports")
    with engine.connect() as conn:
        cells = {
            row[0]: dict(zip(names, row[1:]))
            for row in conn.execute(sa.text(f"SELECT id, {', '.join(names)} FROM evidence_cell"))
        }
        checks: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
        query = f"SELECT cell_id, check_id, {', '.join(STATUSES)} FROM evidence_check"
        for cell_id, check_id, *counts in conn.execute(sa.text(query)):
            for status, n in zip(STATUSES, counts):
                if n:
                    checks[(cell_id, check_id)][status] += n
    kept = {cid: c for cid, c in cells.items() if any(c.values())}
    return kept, {k: v for k, v in checks.items() if sum(v.values())}


def assert_counters_equal_a_recount(engine: Engine) -> int:
    """Every counter equals a recount from the stored reports; returns the number of stored reports."""
    expected_cells, expected_checks = recount(engine)
    cells, checks = stored_counters(engine)
    assert cells == expected_cells
    assert checks == expected_checks
    return sum(c["reports"] for c in expected_cells.values())
