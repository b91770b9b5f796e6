"""``--certify``: the run mapped onto the rows of the PyTorch Compute Platform Quality Levels rubric that a
probe on one host can measure, each with its points and the evidence (the check ids) behind them.

Source: "PyTorch Compute Platform Quality Levels" (scoring tables; 124 points; Stable: every P0 row and 80 %,
Unstable: 70 %), proposed to PyTorch's TAC and Accelerator Integration Working Group (pytorch/rfcs#63),
https://github.com/dvrogozh/pytorch/commit/12c8495aa033fe56a6a93a91cd4c2a6c86f68489 . ``ROWS`` cites each row as
"<table> <ID>" as the document numbers them (its Feature Support table numbers two rows 5). Rows about the
vendor (hardware for sale, software releases, CVEs, documentation, binaries, unit-test and benchmark suites,
C++ extensions) are not measurable by a probe: they are listed with ``points: null`` and count in ``of_total``
only, never in ``score``. The score is therefore out of the measurable points, not a quality level.
"""

RUBRIC = ("PyTorch Compute Platform Quality Levels, "
          "https://github.com/dvrogozh/pytorch/commit/12c8495aa033fe56a6a93a91cd4c2a6c86f68489 (pytorch/rfcs#63)")
RUBRIC_TOTAL = 124


def _by_id(entries):
    return dict((e["id"], e) for e in entries)


def _group(entries, group):
    return [e for e in entries if e["group"] == group]


def _all_passed(found):
    return bool(found) and all(e["status"] == "passed" for e in found)


def _percentile_points(fraction):
    return 6 if fraction >= 1.0 else 4 if fraction >= 0.8 else 2 if fraction >= 0.5 else 0


def _smoke(entries, report):
    smoke = _group(entries, "smoke")
    ok = _all_passed(smoke)
    return (8 if ok else 0), [e["id"] for e in smoke], (
        "the smoke group on the device (one of the three environments the row names: the other two, the stack "
        "without the hardware and a minimal OS, are not this host's to measure)")


def _dtypes(entries, report):
    entry = _by_id(entries).get("ops.dtype_support")
    if entry is None or entry["status"] != "passed":
        return 0, [entry["id"]] if entry else [], "ops.dtype_support did not pass"
    held = entry["data"].get("held") or []
    return len(held), [entry["id"]], "+1 per data type held: %s" % ", ".join(held)


def _eager_graph_perf(entries, report):
    figures = dict((f["name"], f) for f in (report.get("perf") or {}).get("figures") or [])
    matmul = figures.get("matmul.float32") or {}
    eager = matmul.get("valid") is not False and matmul.get("value") is not None and \
        matmul.get("cpu_value") is not None and matmul["value"] >= matmul["cpu_value"]
    compile_ok = _all_passed(_group(entries, "compile"))
    return int(eager) + int(compile_ok), ["perf.matmul"] + [e["id"] for e in _group(entries, "compile")], (
        "eager: matmul.float32 at least the host CPU's (%s); graph: the compile group passed (%s; its speed is "
        "not measured)" % (eager, compile_ok))


def _inference_training(entries, report):
    models = _group(entries, "models")
    training = _all_passed([e for e in models if ".train." in e["id"]])
    inference = _all_passed([e for e in models if e["id"].endswith(".inference")])
    return int(inference) + int(training), [e["id"] for e in models], (
        "the models group against CPU (inference: its forward passes; training: its training steps); speed "
        "against the CPU's is in perf.model_steps")


def _distributed(entries, report):
    found = _group(entries, "distributed")
    return (1 if _all_passed(found) else 0), [e["id"] for e in found], \
        "a two-rank collective and DDP step on the device's own backend, on distinct devices"


def _profiling(entries, report):
    entry = _by_id(entries).get("runtime.profiler")
    return (1 if entry and entry["status"] == "passed" else 0), ["runtime.profiler"], \
        "torch.profiler records the device's activity"


def _modes_tested(entries, report):
    eager = _all_passed(_group(entries, "ops")) and _all_passed(_group(entries, "models"))
    graph = _all_passed(_group(entries, "compile"))
    return 2 * int(eager) + 2 * int(graph), ["ops.*", "models.*", "compile.*"], \
        "eager: the ops and models groups passed (%s); graph: the compile group passed (%s)" % (eager, graph)


def _ops_coverage(entries, report):
    opinfo = [e for e in _group(entries, "opinfo") if e["status"] in ("passed", "failed", "unsupported")]
    if not opinfo:
        return 0, [], "the opinfo group did not run"
    fraction = sum(1 for e in opinfo if e["status"] == "passed") / float(len(opinfo))
    coverage = report.get("coverage") or {}
    return _percentile_points(fraction), ["opinfo.*"], (
        "%.1f%% of the OpInfos compared pass against CPU (50%%: +2, 80%%: +4, 100%%: +6); dispatcher coverage %s "
        "of %s backend-relevant overloads"
        % (100 * fraction, coverage.get("exercised"), coverage.get("backend_relevant")))


def _distributed_tested(entries, report):
    points, evidence, _ = _distributed(entries, report)
    return 4 * points, evidence, "the distributed group passed on the device"


#: (row, priority, max points, how the probe scores it or None when it cannot)
ROWS = (
    ("Prerequisite 1: Stability (smoke_test.py in three environments)", "P0", 8, _smoke),
    ("Prerequisite 2: Security (no CVE)", "P0", 8, None),
    ("Compute Platform Hardware 1: Accessibility", "P1", 4, None),
    ("Compute Platform Hardware 2: Stability", "P0", 6, None),
    ("Compute Platform Software Stack 1: Accessibility", "P1", 4, None),
    ("Compute Platform Software Stack 2: Stability", "P0", 4, None),
    ("Compute Platform Software Stack 3: Maintainability", "P0", 4, None),
    ("Feature Support 2: data types (+1 each of 11)", "P1", 11, _dtypes),
    ("Feature Support 3: eager and graph mode at a reasonable performance", "P1", 2, _eager_graph_perf),
    ("Feature Support 4: inference and training", "P1", 2, _inference_training),
    ("Feature Support 5: distributed backend", "P1", 1, _distributed),
    ("Feature Support 6: C++ extension API", "P1", 1, None),
    ("Feature Support 5 (Debugability): profiling", "P1", 1, _profiling),
    ("Testing Coverage 1: PyTorch unit tests", "P1", 6, None),
    ("Testing Coverage 2: benchmarks (dynamo)", "P1", 6, None),
    ("Testing Coverage 3: eager and graph mode tested", "P1", 4, _modes_tested),
    ("Testing Coverage 4: ops test coverage", "P1", 6, _ops_coverage),
    ("Testing Coverage 5: distributed tested", "P1", 4, _distributed_tested),
)


def certification(report):
    """The report's ``certification`` block: every row with its points (null: not measurable here) and evidence."""
    entries = report.get("checks") or []
    rows, score, measurable = [], 0, 0
    for row, priority, most, scorer in ROWS:
        if scorer is None:
            rows.append({"row": row, "priority": priority, "max": most, "points": None,
                         "evidence": "not measurable by a probe on one host"})
            continue
        points, ids, why = scorer(entries, report)
        points = min(points, most)
        score += points
        measurable += most
        entry = {"row": row, "priority": priority, "max": most, "points": points, "checks": ids[:20],
                 "evidence": why[:400]}
        if scorer is _smoke:
            entry["partial"] = True  # one of the row's three environments: the vendor confirms the other two
        rows.append(entry)
    return {"rubric": RUBRIC, "score": score, "of_measurable": measurable, "of_total": RUBRIC_TOTAL, "rows": rows,
            "note": "rows marked null need evidence a probe cannot give (vendor, CI and release facts); the score "
                    "is not a quality level"}


def render(block):
    lines = ["certification (%s): %d of the %d measurable points (the rubric has %d)"
             % (block["rubric"].split(",")[0], block["score"], block["of_measurable"], block["of_total"])]
    for row in block["rows"]:
        points = "-" if row["points"] is None else "%d" % row["points"]
        lines.append("  %3s/%-3d %s %s" % (points, row["max"], row["priority"], row["row"]))
    return "\n".join(lines)
