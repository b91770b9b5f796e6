"""The API's own documents: the OpenAPI document, Swagger UI and ReDoc, served offline.

The pages load only this server's assets (fastapi-offline's copies of Swagger UI and ReDoc, mounted by the
app factory at ``STATIC_URL``) under a content-security policy allowing exactly their inline scripts. The
router is included after every other one, so the hot routes are matched first.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, JSONResponse

OPENAPI_URL = "/openapi.json"
SWAGGER_URL = "/docs"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
REDOC_URL = "/redoc"
#: where the app factory mounts ``STATIC_DIR``
STATIC_URL = "/static/api-docs"
#: Swagger UI's and ReDoc's bundles as fastapi-offline ships them (no CDN: the docs work offline)
STATIC_DIR = str(files("fastapi_offline") / "static")

#: the docs pages load only this server's assets: ReDoc's bundle would otherwise fetch its vendor's logo from
#: the internet (its side menu has no option to drop it); Swagger UI and ReDoc start from an inline script,
#: allowed by its hash only (``{scripts}``), never 'unsafe-inline'
DOCS_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self'{scripts}; worker-src 'self' blob:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)

router = APIRouter(include_in_schema=False)


def docs_csp(html: bytes) -> str:
    """``DOCS_CSP`` allowing exactly the inline scripts of ``html`` (by their sha256)."""
    hashes = "".join(
        f" 'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(html)
    )
    return DOCS_CSP.format(scripts=hashes)


def _same_origin_only(page: HTMLResponse) -> HTMLResponse:
    page.headers["content-security-policy"] = docs_csp(bytes(page.body))
    return page


@router.get(OPENAPI_URL)
def openapi_document(request: Request) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get(SWAGGER_URL)
def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return _same_origin_only(
        get_swagger_ui_html(
            openapi_url=f"{root}{OPENAPI_URL}",
            title=f"{request.app.title} - Swagger UI",
            oauth2_redirect_url=OAUTH2_REDIRECT_URL,
            swagger_js_url=f"{root}{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            swagger_ui_parameters=request.app.swagger_ui_parameters,
        )
    )


@router.get(OAUTH2_REDIRECT_URL)
def swagger_ui_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get(REDOC_URL)
def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return _same_origin_only(
        get_redoc_html(
            openapi_url=f"{root}{OPENAPI_URL}",
            title=f"{request.app.title} - ReDoc",
            redoc_js_url=f"{root}{STATIC_URL}/redoc.standalone.js",
            with_google_fonts=False,
            redoc_favicon_url=f"{root}{STATIC_URL}/favicon.png",
        )
    )
