"""The published OpenAPI document, made complete enough to fuzz as published (tests/api/test_fuzz_openapi.py).

FastAPI builds the document from the routes; this adds what no single route can say, once for all of them:

- JSON Schemas that routes embed whole (the probe report in the report bodies) keep their shared
  definitions under ``$defs``, which do not resolve from the document root: they are moved to
  ``components/schemas`` and every ``#/$defs/X`` becomes ``#/components/schemas/X``;
- an operation whose token is optional (``deps.holds_scope``) says so: ``security: [{}, {HTTPBearer: []}]``;
- every operation declares the error answers the one error handler (``api/errors.py``) can give it: 422
  when it takes parameters or a body, 503 when the database fails, in the ``ErrorBody`` shape;
- the service, its authentication (tokens and scopes) and each operation are described, and each parameter
  has an example (``SERVICE_DESCRIPTION``, ``OPERATION_DESCRIPTIONS``, ``PARAMETER_EXAMPLES``).
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
        return {key: _hoisted_value(key, value, found) for key, value in node.items() if key != "$defs"}
    if isinstance(node, list):
        return [_hoist_defs(item, found) for item in node]
    return node


def _hoisted_value(key: str, value: Any, found: dict[str, Any]) -> Any:
    """A ``$ref`` to a ``$defs`` entry rewritten to the components; any other value hoisted in turn."""
    if key == "$ref" and isinstance(value, str) and value.startswith(_DEFS_REF):
        return _COMPONENTS_REF + value[len(_DEFS_REF):]
    return _hoist_defs(value, found)


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _COMPONENTS_REF + "ErrorBody"}}},
    }


#: the service, as the document's ``info.description`` says it (Swagger UI and ReDoc show it first)
SERVICE_DESCRIPTION = """\
accelenv answers **which PyTorch install works on an accelerator host**, from a sourced matrix of torch
releases, builds, Pythons, platforms and drivers, joined with **evidence**: probe reports sent by hosts that
ran the install.

- `GET /v1/resolve`: the pinned install for one target (torch, Python, OS/arch, backend, driver, GPU arch),
  with the reasons and sources behind each decision; `format=pip|requirements|uv|conda|dockerfile` answers
  the install text the CLI prints. An unsatisfiable request is a 409 with its causes and the nearest
  requests that would work.
- `GET /v1/ci-matrix`: a CI test matrix of the combinations that exist, in GitHub Actions' `include` shape,
  with what was excluded and why (docs/ci.md).
- `GET /v1/torch`, `GET /v1/matrix`, `GET /v1/evidence`: the matrix and its evidence.
- `POST /v1/reports`: a probe report (`accelenv probe`, `GET /v1/probe`) joins the evidence.

**Authentication.** Reading is open. Writing takes a bearer token (`Authorization: Bearer <token>`), made by
the operator with `accelenv token create --scope report|read|admin`: `report` submits probe reports, `read`
also sees raw reports and failure texts, `admin` withdraws a token's reports. An unknown or revoked token is
a 401 (never ignored), a token of another scope a 403.

**Conventions.** Every error is `{code, message, hint, causes, alternatives}` with a stable `code`; a query
parameter an operation does not take is a 422 naming the nearest one it does; every GET answer carries an
`ETag` (`If-None-Match` gets a 304) and `Cache-Control`.
"""

#: per operation (method, path): what its summary leaves out
OPERATION_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("get", "/v1/resolve"): "The same object as `accelenv resolve --format json` (schema: "
    "`compat_service/schemas/resolution.v1.json`), including `install.pip` / `install.uv`, the commands to "
    "run. With `format` other than json the answer is the CLI's text (text/plain). Every parameter may be "
    "left out: the newest released torch, its newest Python, linux-x86_64, cpu. Example: "
    "`/v1/resolve?torch=2.3&python=3.11&backend=cu121&driver=535.104.05&format=pip`.",
    ("get", "/healthz"): "Liveness: the process answers. Never touches the database.",
    ("get", "/readyz"): "Readiness for a load balancer: the database answers, its schema is at head and a matrix "
    "is loaded; 503 with the reason otherwise.",
    ("get", "/v1/torch"): "Releases newest first, filtered by minor, Python, build label or family and "
    "platform, paged with `limit`/`offset`. Example: `/v1/torch?minor=2.3&backend=cuda`.",
    ("get", "/v1/torch/{version}"): "The minor's entry as matrix_data holds it (variants, Pythons, default "
    "index, patches), the GPU arch lists covering the release and every source its rows cite. Example: "
    "`/v1/torch/2.3.1`.",
    ("post", "/v1/reports"): "A probe report (`accelenv probe --output FILE`; schema: "
    "`GET /v1/schemas/probe-report`) joins the evidence of its cell. 201 when stored, 200 when the same "
    "report id was already stored with the same content. Needs a `report` token. Example: `curl -X POST -H "
    "'Authorization: Bearer $TOKEN' -H 'Content-Type: application/json' --data-binary @report.json "
    "$SERVER/v1/reports`.",
    ("post", "/v1/reports/batch"): "Many reports in one request (a JSON array, or NDJSON with Content-Type "
    "application/x-ndjson); one result per item, in order. Needs a `report` token.",
    ("get", "/v1/reports/{report_id}"): "The stored report as it was received (validated; its summary "
    "derived). Needs a `read` token.",
    ("get", "/v1/evidence"): "The evidence of one cell: per-check counts, hosts, submitters, first and last "
    "seen, failing checks. Pass every part of the key the probe reported (`build`, `runtime`, `driver`, "
    "`device_arch`); a part left out means 'unknown'. A `read` token also sees report ids and failure texts. "
    "Example: `/v1/evidence?torch=2.3.1&python=3.11&os=linux&arch=x86_64&backend=cuda&build=cu121`.",
    ("get", "/v1/probe"): "The probe as one self-contained Python file (standard library + torch): "
    "`curl -o accelenv_probe.py $SERVER/v1/probe && python -I accelenv_probe.py > report.json`.",
    ("get", "/v1/schemas/probe-report"): "The JSON Schema every submitted report must follow.",
    ("post", "/v1/tokens/{token_id}/withdraw"): "Revokes the token and withdraws every report it submitted "
    "from the evidence, recounting the cells they were part of. Needs an `admin` token.",
    ("get", "/v1/packages"): "The ecosystem packages `with=` knows (vllm and the others `matrix refresh` follows), "
    "each with what the matrix holds of it.",
    ("get", "/v1/packages/{name}"): "One package's releases newest first: the torch requirement and companion pins "
    "each release's metadata states per platform, its Pythons, yanked releases and the curated rows. Example: "
    "`/v1/packages/vllm?platform=linux-x86_64`.",
    ("get", "/metrics"): "The Prometheus text format: requests by route and status, latency histograms, "
    "reports ingested, ingest queue depth, the loaded matrix.",
}

#: an example value per query or path parameter name (where one parameter name means the same everywhere)
PARAMETER_EXAMPLES: dict[str, Any] = {
    "torch": "2.3", "python": "3.11", "os": "linux", "arch": "x86_64", "backend": "cuda", "driver": "535.104.05",
    "gpu_arch": "sm_90", "with": "torchvision,torchaudio", "format": "pip", "minor": "2.3", "build": "cu121",
    "family": "cuda", "platform": "linux-x86_64", "version": "2.3.1", "mode": "pr", "runtime": "12.1",
    "device_arch": "sm_90", "status": "verified", "require_verified": "true", "strict": "true",
    "report_id": "3f1c0e8a-5b7d-4c2e-9a61-0d2f4b8e7c15", "token_id": 7, "gpu": "A100", "name": "vllm",
    "prereleases": False, "max_cells": "256", "shard": "1/3", "glibc": "2.17", "musl": "1.2", "macos": "13.6",
}
#: operations whose parameter of that name needs another example than the table's
_PARAMETER_EXAMPLES_BY_PATH: dict[tuple[str, str], str] = {
    ("/v1/ci-matrix", "torch"): ">=2.3", ("/v1/ci-matrix", "python"): "supported",
    ("/v1/ci-matrix", "family"): "cpu,cuda", ("/v1/evidence", "torch"): "2.3.1",
    ("/v1/matrix", "torch"): ">=2.3",
}


def _describe(path: str, method: str, operation: dict[str, Any]) -> None:
    """The operation's description and each parameter's example, where the route gave none."""
    text = OPERATION_DESCRIPTIONS.get((method, path))
    if text and not operation.get("description"):
        operation["description"] = text
    for parameter in operation.get("parameters", []):
        name = parameter.get("name")
        example = _PARAMETER_EXAMPLES_BY_PATH.get((path, name), PARAMETER_EXAMPLES.get(name))
        if example is not None and "example" not in parameter and "examples" not in parameter:
            parameter["example"] = example


def complete_openapi(document: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    document.setdefault("info", {}).setdefault("description", SERVICE_DESCRIPTION)
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
    bearer = schemes.get("HTTPBearer")
    if bearer is not None:
        bearer["description"] = (
            "a token from `accelenv token create --scope report|read|admin`, sent as "
            "`Authorization: Bearer <token>` (see the service description)"
        )
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            _describe(path, method, operation)
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
