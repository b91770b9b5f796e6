"""``--certify``: the rubric rows a probe can measure are scored from the run's checks, the others are listed
with null points, and the block goes into the report (and validates against the published schema)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from probes.harness import certify

REPO_ROOT = Path(__file__).resolve().parents[2]


def _entry(cid: str, status: str = "passed", **data: object) -> dict:
    return {"id": cid, "group": cid.split(".")[0], "status": status, "duration_s": 0.0, "detail": None, "data": data}


def test_measurable_rows_are_scored_from_their_checks_and_the_rest_are_null() -> None:
    entries = [_entry("smoke.train_step"), _entry("ops.dtype_support", held=["float32", "float16", "int64"]),
               _entry("models.resnet.train.float32"), _entry("models.resnet.inference", "failed"),
               _entry("distributed.all_reduce", "skipped"), _entry("runtime.profiler"),
               _entry("opinfo.add"), _entry("opinfo.mm", "failed")]
    block = certify.certification({"checks": entries})
    rows = {r["row"].split(":")[0]: r for r in block["rows"]}
    assert rows["Prerequisite 1"]["points"] == 8 and rows["Prerequisite 1"]["partial"] is True
    assert rows["Prerequisite 2"]["points"] is None  # CVEs: not a probe's to measure
    assert rows["Feature Support 2"]["points"] == 3  # +1 per data type held
    assert rows["Feature Support 4"]["points"] == 1  # training passed, inference failed
    assert rows["Feature Support 5"]["points"] == 0  # skipped on one device is not a pass
    assert rows["Testing Coverage 4"]["points"] == 2  # 1 of 2 OpInfos: 50 %
    assert block["score"] == sum(r["points"] or 0 for r in block["rows"])
    assert block["of_total"] == 124 and block["of_measurable"] < 124
    assert "12c8495aa033fe56a6a93a91cd4c2a6c86f68489" in block["rubric"]


def test_probe_certify_puts_the_block_in_the_report(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env.update(PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore::UserWarning")
    proc = subprocess.run([sys.executable, "-m", "probes", "--device", "cpu", "--checks", "smoke", "--certify",
                           "--output", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["certification"]["rows"][0]["points"] == 8
    assert "certification (PyTorch Compute Platform Quality Levels)" in proc.stderr
    assert report["coverage"]["backend_relevant"] > 500 and report["coverage"]["exercised"] > 0

    from compat_service.domain.evidence.report import ProbeReport

    ProbeReport.model_validate(report)  # the published schema takes the new blocks
