"""The published OpenAPI document, made complete enough to fuzz as published (tests/api/test_fuzz_openapi.py).

FastAPI builds the document from the routes; this adds what no single route can say, once for all of them:

- JSON Schemas that routes embed whole (the probe report in the report bodies) keep their shared
  definitions under ``$defs``, which do not resolve from the document root: they are moved to
  ``components/schemas`` and every ``#/$defs/X`` becomes ``#/components/schemas/X``;
- an operation whose token is optional (``deps.holds_scope``) says so: ``security: [{}, {HTTPBearer: []}]``;
- every operation declares the error answers the one error handler (``api/errors.py``) can give it: 422
  when it takes parameters or a body, 503 when the database fails, in the ``ErrorBody`` shape.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from compat_service.api.deps import OPTIONAL_BEARER_SCHEME
from compat_service.domain.errors import ErrorBody

_DEFS_REF = "#/$defs/"
_COMPONENTS_REF = "#/components/schemas/"
#: operations that never touch the database (nothing to answer 503 for)
_NO_DATABASE = frozenset({"/healthz", "/v1/probe", "/v1/schemas/probe-report", "/openapi.json", "/docs"})


def _hoist_defs(node: Any, found: dict[str, Any]) -> Any:
    """``node`` with every ``$defs`` removed (collected into ``found``) and refs to them rewritten."""
    if isinstance(node, dict):
        defs = node.get("$defs")
        if isinstance(defs, dict):
            for name, schema in defs.items():
                found[name] = _hoist_defs(schema, found)
        return {
            key: (_COMPONENTS_REF + value[len(_DEFS_REF):])
            if key == "$ref" and isinstance(value, str) and value.startswith(_DEFS_REF)
            else _hoist_defs(value, found)
            for key, value in node.items()
            if key != "$defs"
        }
    if isinstance(node, list):
        return [_hoist_defs(item, found) for item in node]
    return node


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _COMPONENTS_REF + "ErrorBody"}}},
    }


def complete_openapi(document: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    document = _hoist_defs(document, found)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in found.items():
        schemas.setdefault(name, schema)
    schemas.setdefault("ErrorBody", ErrorBody.model_json_schema(ref_template=_COMPONENTS_REF + "{model}"))
    for name, schema in ErrorBody.model_json_schema(ref_template=_COMPONENTS_REF + "{model}").get("$defs", {}).items():
        schemas.setdefault(name, schema)
    schemas["ErrorBody"].pop("$defs", None)
    schemes = document["components"].get("securitySchemes", {})
    optional = schemes.pop(OPTIONAL_BEARER_SCHEME, None)
    if optional is not None:
        schemes.setdefault("HTTPBearer", {"type": "http", "scheme": "bearer"})
    for path, operations in document.get("paths", {}).items():
        for operation in operations.values():
            if any(OPTIONAL_BEARER_SCHEME in req for req in operation.get("security", [])):
                operation["security"] = [{}, {"HTTPBearer": []}]
            responses = operation.setdefault("responses", {})
            if operation.get("parameters") or operation.get("requestBody"):
                responses.setdefault("422", _error("invalid parameters or body (invalid-request, report-invalid)"))
            if path not in _NO_DATABASE:
                responses.setdefault("503", _error("the database is unavailable (database-not-ready)"))
    return document


def install_openapi(app: FastAPI) -> None:
    """Serve the completed document (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete_openapi(
                get_openapi(
                    title=app.title, version=app.version, summary=app.summary, description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
