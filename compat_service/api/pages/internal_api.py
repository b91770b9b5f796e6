"""Read an API route from inside the process, as a client would (same validation, same access rules).

A page asks ``GET /v1/...`` through the app's own ASGI stack, forwarding the visitor's ``Authorization``
header and request id, so a page never shows what the API would refuse that visitor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import Request

from compat_service.api.middleware.observability import current_request_id


@dataclass(frozen=True)
class ApiAnswer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status == 200

    @property
    def error(self) -> dict[str, Any]:
        """The API's error body ({code, message, hint, ...}); empty for a success."""
        return self.body if not self.ok and isinstance(self.body, dict) else {}


async def api_get(request: Request, path: str, params: dict[str, str] | None = None) -> ApiAnswer:
    headers = {"accept": "application/json"}
    auth = request.headers.get("authorization")
    if auth:
        headers["authorization"] = auth
    rid = current_request_id()
    if rid:
        headers["x-request-id"] = rid
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://internal") as client:
        res = await client.get(path, params=params, headers=headers)
    try:
        body = res.json()
    except ValueError:
        body = {"code": "bad-answer", "message": res.text[:200]}
    return ApiAnswer(res.status_code, body)
