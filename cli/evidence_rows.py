"""Evidence rows for `accelenv matrix show --server URL | --database URL`: status, counts, failing checks.

From a service: GET /v1/matrix, every page (cli/service_client.py). From a database: the query the
service runs (``compat_service.db.evidence.queries``, imported lazily: only these flags pay for SQLAlchemy).
Only cells with reports are returned; the declared cells without any are what `show` already prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def fetch_evidence_rows(
    torch: str, *, server: str | None, database: str | None, path: Path | None
) -> list[dict[str, Any]]:
    rows = _from_server(server, torch) if server else _from_database(database, torch, path) if database else []
    return [r for r in rows if r["reports"] > 0]


def _from_server(server: str, torch: str) -> list[dict[str, Any]]:
    from cli.service_client import ServiceClient

    return ServiceClient(server).matrix_rows(torch)


def _from_database(database: str, torch: str, path: Path | None) -> list[dict[str, Any]]:
    from sqlmodel import Session

    from compat_service.db.evidence.lookup import open_evidence_database
    from compat_service.db.evidence.matrix_cells import matrix_cells
    from compat_service.db.evidence.queries import MatrixFilter, with_failing_checks
    from compat_service.domain.evidence.cells import DeclaredMatrix
    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached

    engine, settings = open_evidence_database(database)
    try:
        declared = DeclaredMatrix(load_matrix_cached(path).data)
        with Session(engine) as session:
            rows = matrix_cells(
                session, declared, MatrixFilter(torch=torch), min_hosts=settings.verified_min_hosts,
                min_submitters=settings.verified_min_submitters,
            )
            cells = [c for c in rows if c[1]]
            return [row.model_dump(mode="json") for row in with_failing_checks(session, cells)]
    finally:
        engine.dispose()


def fetch_observed_arch_lists(
    versions: list[str], *, server: str | None, database: str | None, path: Path | None = None
) -> list[dict[str, Any]]:
    """Arch lists learned from agreeing probe reports for builds of ``versions`` no curated row covers."""
    if server:
        from cli.service_client import ServiceClient
        from compat_service.domain.errors import ServerUnreachableError

        client = ServiceClient(server)
        hint = "check --server / ACCELENV_SERVER, or drop it to show the matrix alone"
        found: list[dict[str, Any]] = []
        for version in versions:
            response = client.request("GET", f"/v1/torch/{version}", unreachable_hint=hint)
            if response.status_code == 404:
                continue
            if not response.is_success:
                raise client.error_from(response)
            try:
                found.extend(response.json().get("observed_arch_lists", []))
            except ValueError as exc:
                message = f"could not read torch {version} from {server}: {exc}"
                raise ServerUnreachableError(message, hint=hint) from None
        return found
    if database:
        from compat_service.db.evidence.build_facts import observed_facts
        from compat_service.db.evidence.lookup import open_evidence_database
        from compat_service.domain.matrix.interface import InMemoryMatrix
        from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
        from compat_service.domain.matrix.model.row_base import row_json

        engine, _settings = open_evidence_database(database)
        try:
            rows = [b.as_arch_list() for b in observed_facts(engine).builds.values()]
        finally:
            engine.dispose()
        matrix = InMemoryMatrix(load_matrix_cached(path).data, rows)
        return [row_json(row) for v in versions for row in matrix.observed_arch_lists(v)]
    return []


def render_observed_arch_lists(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console

    console = Console()
    for r in rows:
        ptx = f" + PTX {r['ptx']}" if r.get("ptx") else ""
        console.print(
            f"observed arch list: torch {r['torch'].lstrip('=')} {r['variant']} {', '.join(r['platforms'])}: "
            f"{' '.join(r['archs'])}{ptx}  [{', '.join(r['source'])}]",
            highlight=False, markup=False, soft_wrap=True,
        )


def render_evidence(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    from cli.terminal_text import plain

    console = Console()
    if not rows:
        console.print("evidence: no probe reports for this release", highlight=False)
        return
    table = Table(title="evidence from probe reports")
    for column in ("torch", "build", "Python", "platform", "device", "status", "reports", "hosts", "failing checks"):
        table.add_column(column)
    for r in rows:
        # report text is data: never Rich markup, never terminal control (cli/terminal_text.py)
        table.add_row(*(plain(cell) for cell in _evidence_cells(r)))
    console.print(table)


def _evidence_cells(r: dict[str, Any]) -> tuple[str, ...]:
    """One evidence row as the table's cells."""
    driver = r["driver_version"] and f"driver {r['driver_version']}"
    device = " ".join(p for p in (r["backend"], r["device_arch"], driver) if p)
    plain_status = r["status"] == r["health"] or r["health"] in ("none", "unconfirmed")
    status = r["status"] if plain_status else f"{r['status']} ({r['health']})"
    more = len(r["failing_checks"]) - 5
    failing = ", ".join(r["failing_checks"][:5]) + (f" +{more}" if more > 0 else "")
    return (r["torch_version"], r["torch_build"] or "?", r["python"], f"{r['os']}-{r['arch']}", device,
            status, str(r["reports"]), str(r["hosts"]), failing or "-")
