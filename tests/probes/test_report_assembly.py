"""The probe's report assembly: what it writes validates against the service's schema."""

from __future__ import annotations

import json

from compat_service.domain.evidence.report import ProbeReport, nul_character_paths
from probes.harness import report as report_assembly


def test_nul_characters_from_host_text_are_replaced_visibly() -> None:
    environment = report_assembly.fallback_environment("cuda", "nvidia-smi printed \x00\x00 garbage")
    entries = [
        {"id": "detect.driver", "group": "detect", "status": "error", "duration_s": 0.0,
         "detail": "read \x00 from /proc", "data": {"raw\x00key": "v\x00"}},
    ]
    report = report_assembly.assemble(environment, [], entries, "f" * 64, True)
    body = json.dumps(report).encode()
    assert b"\\u0000" not in body
    assert report["checks"][0]["detail"] == "read \ufffd from /proc"
    assert report["checks"][0]["data"] == {"raw\ufffdkey": "v\ufffd"}
    parsed = ProbeReport.model_validate_json(body)
    assert nul_character_paths(parsed, body) == []
