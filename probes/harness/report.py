"""Assemble the versioned report (schema "1", compat_service/domain/evidence/report.py); summarise it."""

import datetime
import uuid

from probes.checks import outcome as checks
from probes.checks import registry
from probes.harness import redaction, relay
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
    """Counts per status, ``ok`` (``registry.is_failing``: no failing check, and every smoke and models check
    passed or skipped), and ``groups``: what each group with a summary function adds up to (OpInfo's totals
    and missing ops) -- part of the report, not a check."""
    counts = dict((status, 0) for status in checks.STATUSES)
    for entry in entries:
        counts[entry["status"]] += 1
    ok = not any(registry.is_failing(entry["group"], entry["status"]) for entry in entries)
    result = {"total": len(entries), "counts": counts, "ok": ok}
    groups = {}
    for group in registry.GROUPS:
        mine = [entry for entry in entries if entry["group"] == group.name]
        function = group.summary_function() if mine else None
        if function is not None:
            groups[group.name] = function(mine)
    if groups:
        result["groups"] = groups
    return result


def perf_block(entries):
    """The perf group's figures, gathered from its checks' ``data.figures`` (None when the group did not run)."""
    figures = []
    ran = False
    for entry in entries:
        if entry["group"] != "perf":
            continue
        ran = True
        for figure in (entry.get("data") or {}).get("figures") or []:
            figures.append(dict(figure, check=entry["id"]))
    return {"figures": figures} if ran else None


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


def assemble(environment, devices, entries, fingerprint, fingerprint_stable, coverage=None):
    """The report; the checks' texts carry no host paths (``probes.harness.redaction``) and no NUL characters.
    ``coverage``: the dispatcher coverage block (``probes.checks.dispatcher.summarise``), when counted."""
    entries = [redaction.redact(entry) for entry in entries]
    report = _assemble(environment, devices, entries, fingerprint, fingerprint_stable)
    if coverage is not None:
        report["coverage"] = coverage
    report["ci_relay"] = relay.block(report)
    return without_nul(report)


def _assemble(environment, devices, entries, fingerprint, fingerprint_stable):
    environment = dict(environment)
    environment["host_fingerprint"] = fingerprint
    extra = dict(environment.get("extra") or {})
    extra["fingerprint_stable"] = fingerprint_stable
    environment["extra"] = extra
    report = {
        "schema_version": SCHEMA_VERSION,
        "report_id": str(uuid.uuid4()),
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "tool": dict(TOOL),
        "environment": environment,
        "devices": devices,
        "checks": entries,
        "summary": summary(entries),
    }
    perf = perf_block(entries)
    if perf is not None:
        report["perf"] = perf
    return report


def _group_rows(report, statuses):
    rows = []
    for group in checks.GROUPS:
        counts = dict((s, 0) for s in statuses)
        for entry in report["checks"]:
            if entry["group"] == group:
                counts[entry["status"]] += 1
        if any(counts.values()):
            rows.append([group] + [str(counts[s]) for s in statuses])
    return rows


def _group_table(report):
    """The per-group count table: a header, a rule, then one row per group with any checks."""
    statuses = checks.STATUSES
    rows = _group_rows(report, statuses)
    header = ["group"] + list(statuses)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _coverage_lines(report):
    coverage = report.get("coverage")
    if not (coverage and coverage.get("backend_relevant")):
        return []
    return ["dispatcher coverage: %d of %d backend-relevant aten overloads exercised on the device (%.1f%%); "
            "%d missing, %d fell back to CPU" % (coverage["exercised"], coverage["backend_relevant"],
                                                 100.0 * (coverage.get("fraction") or 0.0),
                                                 len(coverage.get("missing") or ()),
                                                 len(coverage.get("fell_back") or ()))]


def _perf_lines(report):
    perf = report.get("perf") or {}
    if not perf.get("figures"):
        return []
    return (["", "perf (device | this host's CPU | fraction of the device's peak):"]
            + ["  " + render_figure(figure) for figure in perf["figures"][:24]])


def _not_ok_lines(report):
    bad = [e for e in report["checks"] if registry.is_failing(e["group"], e["status"])]
    if not bad:
        return []
    lines = ["", "not ok:"]
    for entry in bad[:20]:
        lines.append("  %-9s %s: %s" % (entry["status"], entry["id"], (entry["detail"] or "")[:160]))
    if len(bad) > 20:
        lines.append("  ... and %d more" % (len(bad) - 20))
    return lines


def render_summary(report):
    """A plain-text table: one row per group, one column per status, then the checks that went wrong."""
    lines = _group_table(report)
    env = report["environment"]
    lines.insert(0, "accelenv probe: torch %s (%s) on %s, python %s" % (
        env["torch_version"], env.get("torch_build"), env["backend"], env["python_version"]))
    for name, group in sorted((report["summary"].get("groups") or {}).items()):
        lines.append("%s: %s" % (name, group.get("detail") or group.get("status")))
    lines += _coverage_lines(report)
    lines += _perf_lines(report)
    lines += _not_ok_lines(report)
    verdict = "OK" if report["summary"]["ok"] else "NOT OK"
    lines.append("%s: %d checks, %s" % (verdict, report["summary"]["total"], ", ".join(
        "%d %s" % (n, s) for s, n in report["summary"]["counts"].items() if n)))
    return "\n".join(lines)


def _number(value, unit):
    if value is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale and unit.endswith("/s"):
            return "%.3g %s%s" % (value / scale, prefix, unit)
    if unit == "s":
        if abs(value) < 1e-3:
            return "%.3g us" % (value * 1e6)
        if abs(value) < 1:
            return "%.3g ms" % (value * 1e3)
    return "%.3g %s" % (value, unit)


def render_figure(figure):
    """One perf figure as a line: name, value, the host CPU's figure, the fraction of peak."""
    unit = figure.get("unit") or ""
    text = "%-34s %12s" % (figure.get("name"), _number(figure.get("value"), unit))
    spread = figure.get("spread")
    text += " %-7s" % ("+/-%.0f%%" % (50.0 * spread) if spread is not None else "")
    text += " | cpu %12s" % _number(figure.get("cpu_value"), unit)
    if figure.get("valid") is False:
        return text + "  INVALID: %s" % (figure.get("invalid_reason") or "cannot be trusted")
    if figure.get("peak_fraction") is not None:
        text += " | %.1f%% of peak" % (100.0 * figure["peak_fraction"])
    if figure.get("note"):
        text += "  (%s)" % figure["note"]
    return text
