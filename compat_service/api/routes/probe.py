"""`GET /v1/probe` (the self-contained probe bundle) and `GET /v1/schemas/probe-report` (its report schema).

The bundle is generated from the installed ``probes`` package on first request and kept for the process:
the same code `accelenv probe --bundle` writes, so what the service hands out cannot drift from it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from probes.harness import bundle

router = APIRouter(tags=["probe"])

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "probe-report.v1.json"


@functools.lru_cache(maxsize=1)
def _bundle_text() -> str:
    return bundle.build_bundle_source()


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@router.get(
    "/v1/probe",
    summary="The probe as one Python file: run it with `python -I accelenv_probe.py` where torch is installed",
    response_class=Response,
)
def get_probe_bundle() -> Response:
    return Response(
        _bundle_text(),
        media_type="text/x-python; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{bundle.BUNDLE_NAME}"'},
    )


class SchemaResponse(JSONResponse):
    media_type = "application/schema+json"


@router.get(
    "/v1/schemas/probe-report",
    summary="JSON Schema of the probe report (schema_version 1)",
    response_class=SchemaResponse,
    responses={200: {"content": {"application/schema+json": {"schema": {"type": "object"}}}}},
)
def get_probe_report_schema() -> SchemaResponse:
    return SchemaResponse(_schema())
