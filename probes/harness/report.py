"""Assemble the versioned report (schema "1", compat_service/domain/evidence/report.py); summarise it."""

import datetime
import uuid

from probes.checks import outcome as checks
from probes.harness import redaction
from probes.host import facts as host_facts

SCHEMA_VERSION = "1"
TOOL = {"name": "accelenv-probe", "version": "0.1.0"}


def fallback_environment(backend, problem):
    """The environment when no worker got far enough to describe torch (torch missing, worker died)."""
    host = host_facts.host_summary()
    return {
        "torch_version": "unknown",
        "torch_build": None,
        "python_version": host["python_version"],
        "os": host["os"],
        "arch": host["arch"],
        "backend": backend,
        "runtime_version": None,
        "driver_version": None,
        "device_arch": None,
        "device_name": None,
        "companions": {},
        "extra": {"problem": problem, "cpu_model": host["cpu_model"], "cpu_count": host["cpu_count"]},
    }


def summary(entries):
    counts = dict((status, 0) for status in checks.STATUSES)
    for entry in entries:
        counts[entry["status"]] += 1
    ok = not any(counts[status] for status in checks.BAD_STATUSES)
    return {"total": len(entries), "counts": counts, "ok": ok}


def without_nul(value):
    """``value`` with every NUL character in its strings and keys replaced by U+FFFD.

    Text read from vendor tools and crashed workers can carry NULs; the service refuses reports holding them
    (its stores keep text), so the probe replaces them visibly instead of losing the whole report."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return dict((without_nul(k), without_nul(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [without_nul(item) for item in value]
    return value


def assemble(environment, devices, entries, fingerprint, fingerprint_stable):
    """The report; the checks' texts carry no host paths (``probes.harness.redaction``) and no NUL characters."""
    entries = [redaction.redact(entry) for entry in entries]
    report = _assemble(environment, devices, entries, fingerprint, fingerprint_stable)
    return without_nul(report)


def _assemble(environment, devices, entries, fingerprint, fingerprint_stable):
    environment = dict(environment)
    environment["host_fingerprint"] = fingerprint
    extra = dict(environment.get("extra") or {})
    extra["fingerprint_stable"] = fingerprint_stable
    environment["extra"] = extra
    return {
        "schema_version": SCHEMA_VERSION,
        "report_id": str(uuid.uuid4()),
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "tool": dict(TOOL),
        "environment": environment,
        "devices": devices,
        "checks": entries,
        "summary": summary(entries),
    }


def render_summary(report):
    """A plain-text table: one row per group, one column per status, then the checks that went wrong."""
    statuses = checks.STATUSES
    rows = []
    for group in checks.GROUPS:
        counts = dict((s, 0) for s in statuses)
        for entry in report["checks"]:
            if entry["group"] == group:
                counts[entry["status"]] += 1
        if any(counts.values()):
            rows.append([group] + [str(counts[s]) for s in statuses])
    header = ["group"] + list(statuses)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    env = report["environment"]
    lines.insert(0, "accelenv probe: torch %s (%s) on %s, python %s" % (
        env["torch_version"], env.get("torch_build"), env["backend"], env["python_version"]))
    bad = [e for e in report["checks"] if e["status"] in checks.BAD_STATUSES]
    if bad:
        lines.append("")
        lines.append("not ok:")
        for entry in bad[:20]:
            lines.append("  %-9s %s: %s" % (entry["status"], entry["id"], (entry["detail"] or "")[:160]))
        if len(bad) > 20:
            lines.append("  ... and %d more" % (len(bad) - 20))
    verdict = "OK" if report["summary"]["ok"] else "NOT OK"
    lines.append("%s: %d checks, %s" % (verdict, report["summary"]["total"], ", ".join(
        "%d %s" % (n, s) for s, n in report["summary"]["counts"].items() if n)))
    return "\n".join(lines)
