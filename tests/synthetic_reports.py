"""Small, valid probe reports built in code, for tests and benchmarks that need many of them fast.

They have a real report's shape (environment, one device, detect / smoke / ops / allocator checks, summary)
but a handful of checks instead of ~160, so thousands can be built and sent in a test. The evidence tests
that need what a real probe writes use the probe itself (``tests/evidence/conftest.py``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from typing import Any

#: check id -> group of the checks every synthetic report carries
CHECKS: tuple[tuple[str, str], ...] = (
    ("detect.device_count", "detect"),
    ("smoke.tensor_roundtrip", "smoke"),
    ("smoke.train_step", "smoke"),
    ("ops.mm.default.float32", "ops"),
    ("ops.add.Tensor.float16", "ops"),
    ("ops.sort.default.float32", "ops"),
    ("allocator.cache_reuse", "allocator"),
)
BAD = ("failed", "timeout", "crashed", "error")


def summary_of(checks: list[dict[str, Any]]) -> dict[str, Any]:
    counts = Counter(c["status"] for c in checks)
    return {"total": len(checks), "counts": dict(counts), "ok": not any(counts[s] for s in BAD)}


def synthetic_report(
    *,
    host: str = "0",
    torch: str = "2.13.0+cpu",
    build: str | None = "cpu",
    python: str = "3.11.7",
    os: str = "linux",
    arch: str = "x86_64",
    backend: str = "cpu",
    driver: str | None = None,
    runtime: str | None = None,
    device_arch: str | None = None,
    statuses: dict[str, str] | None = None,
    report_id: str | None = None,
) -> dict[str, Any]:
    """A valid report; ``statuses`` overrides the status of named checks (all pass otherwise)."""
    statuses = statuses or {}
    checks = []
    for check_id, group in CHECKS:
        status = statuses.get(check_id, "passed")
        check: dict[str, Any] = {"id": check_id, "group": group, "status": status, "duration_s": 0.01}
        if group == "ops":
            check["data"] = {"aten_op": "aten::" + check_id.split(".")[1], "dtype": check_id.rsplit(".", 1)[1]}
        if status != "passed":
            check["detail"] = f"{check_id} {status} on purpose"
        checks.append(check)
    return {
        "schema_version": "1",
        "report_id": report_id or str(uuid.uuid4()),
        "created_at": dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc).isoformat(),
        "tool": {"name": "accelenv-probe", "version": "0.1.0"},
        "environment": {
            "torch_version": torch,
            "torch_build": build,
            "python_version": python,
            "os": os,
            "arch": arch,
            "backend": backend,
            "runtime_version": runtime,
            "driver_version": driver,
            "device_arch": device_arch,
            "device_name": None,
            "host_fingerprint": f"host-{host}".ljust(16, "0"),
            "companions": {},
            "extra": {},
        },
        "devices": [{"index": 0, "type": backend, "name": None, "arch": device_arch}],
        "checks": checks,
        "summary": summary_of(checks),
    }
