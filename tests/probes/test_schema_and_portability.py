"""The published schema file equals the model, and probes/ stays runnable on Python 3.8.

Regenerate the schema file after changing compat_service/domain/evidence/report.py:
    .venv/bin/python -c "import json; from compat_service.domain.evidence.report import ProbeReport; \
open('compat_service/schemas/probe-report.v1.json', 'w').write(json.dumps(ProbeReport.model_json_schema(), \
indent=2, sort_keys=True) + '\\n')"
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from compat_service.domain.evidence.report import ProbeReport
from tests.conftest import REPO_ROOT
from tests.probes.conftest import SCHEMA_FILE


def test_schema_file_matches_the_model() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == ProbeReport.model_json_schema()


def test_probes_need_at_most_python_3_8() -> None:
    vermin = Path(sys.executable).with_name("vermin")
    proc = subprocess.run([str(vermin), "--no-tips", "--violations", "-t=3.8-", str(REPO_ROOT / "probes")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"Minimum required versions: 3\.8\b", proc.stdout), proc.stdout
