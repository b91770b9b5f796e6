"""Is the database ready to serve: reachable, migrated to head, a matrix loaded? Each check says why not."""

from __future__ import annotations

from pydantic import BaseModel

from compat_service.db import migrate
from compat_service.db.engine import require_existing
from compat_service.db.matrix.snapshot_follower import latest_load_ref
from compat_service.domain.errors import DatabaseNotReadyError


class Check(BaseModel):
    name: str
    ok: bool
    detail: str


class Readiness(BaseModel):
    ready: bool
    checks: list[Check]
    matrix_version: str | None = None


def readiness(engine) -> Readiness:
    checks: list[Check] = []
    try:
        require_existing(engine)
        current = migrate.current_revision(engine)
    except DatabaseNotReadyError as err:
        detail = f"{err.message}: {err.hint}" if err.hint else err.message
        checks.append(Check(name="database", ok=False, detail=detail))
        return Readiness(ready=False, checks=checks)
    checks.append(Check(name="database", ok=True, detail="reachable"))
    head = migrate.head_revision()
    if current != head:
        checks.append(
            Check(
                name="schema",
                ok=False,
                detail=migrate.describe_revision(current),
            )
        )
        return Readiness(ready=False, checks=checks)
    checks.append(Check(name="schema", ok=True, detail=f"at head {head}"))
    ref = latest_load_ref(engine)
    if ref is None:
        checks.append(Check(name="matrix", ok=False, detail="no matrix loaded: run `accelenv db load`"))
        return Readiness(ready=False, checks=checks)
    checks.append(Check(name="matrix", ok=True, detail=f"load {ref[0]}"))
    return Readiness(ready=True, checks=checks, matrix_version=ref[1][:16])
