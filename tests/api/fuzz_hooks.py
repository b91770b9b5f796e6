"""Schemathesis hooks for fuzzing the service (loaded through SCHEMATHESIS_HOOKS by test_fuzz_openapi.py):
how to put an ``application/x-ndjson`` body on the wire, one JSON value per line."""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(_ctx: Any, value: Any) -> bytes:
    # the body's bytes: schemathesis puts them on the wire itself (a dict here was form-encoded as `data=...`)
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    items = value if isinstance(value, list) else [value]
    return "\n".join(json.dumps(item) for item in items).encode()
