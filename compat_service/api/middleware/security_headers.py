"""Response headers every answer carries, and the checks on a request's URL made before any route runs
(applied by `ObservabilityMiddleware`, the outermost layer, so no response leaves without them).

- Every response: ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``.
- HTML pages: a Content-Security-Policy allowing this origin's scripts, styles and images only (no inline
  script; the selector's ``<script type="application/json">`` is data, which CSP does not run), with
  ``frame-ancestors 'none'`` (and ``X-Frame-Options: DENY`` for older browsers). A route that sets its own
  policy (the API docs pages, app.py) keeps it.
- A redirect to this request's own host is made relative: Starlette builds redirect URLs (``/matrix/`` ->
  ``/matrix``) from the ``Host`` header, which a client chooses (``Host: evil.example`` was sent back).
- A token in the query string (``acv_…``, or a parameter named like a token) is refused with 400 before any
  route runs, and the access log shows the query as redacted: a URL ends up in logs, proxies and browser
  history, a token must not. Both are read percent-decoded too (``%61cv_…``, ``t%6Fken=``).
- A token in the path (``/v1/reports/acv_…``, plain or percent-encoded) is not a route's, so the route
  answers it as usual (404); the access log shows the path as redacted.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import unquote_to_bytes

#: the policy of the HTML pages (compat_service/api/pages/)
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
EVERY_RESPONSE = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"))
HTML_ONLY = ((b"content-security-policy", PAGE_CSP.encode()), (b"x-frame-options", b"DENY"))
#: what the access log shows instead of a query string / a path that held a token
REDACTED_QUERY = b"(redacted:token-in-query)"
REDACTED_PATH = b"(redacted:token-in-path)"
#: the prefix of every token the service issues (compat_service/db/tokens.py)
TOKEN_PREFIX = b"acv_"
_TOKEN_PARAM = re.compile(rb"(?:^|&)(?:[a-z_]*token|api_?key|access_key|secret|password)=", re.IGNORECASE)


#: what a query must hold (in any case) for `_TOKEN_PARAM` to match it: checked first, since nearly none does
_TOKEN_WORDS = (b"token", b"key", b"secret", b"password")


def _decoded(raw: bytes) -> bytes:
    """``raw`` with its percent-escapes (and a query's ``+``) decoded, as a route would read it."""
    return unquote_to_bytes(raw.replace(b"+", b" ")) if b"%" in raw or b"+" in raw else raw


def token_in_query(query: bytes) -> bool:
    if not query:
        return False
    query = _decoded(query)
    if TOKEN_PREFIX in query:
        return True
    lowered = query.lower()
    for word in _TOKEN_WORDS:  # a loop, not any() over a generator: this runs on every request
        if word in lowered:
            return _TOKEN_PARAM.search(query) is not None
    return False


def token_in_path(path: bytes) -> bool:
    return TOKEN_PREFIX in _decoded(path)


def with_security_headers(status: int, headers: list[Any], scope: MutableMapping[str, Any]) -> list[Any]:
    """``headers`` of a response start with the headers above added (and a same-host redirect made relative)."""
    is_html = has_csp = False
    location_at = -1
    for i, (name, value) in enumerate(headers):
        if name == b"content-type":
            is_html = value.startswith(b"text/html")
        elif name == b"content-security-policy":
            has_csp = True
        elif name == b"location":
            location_at = i
    out = [*headers, *EVERY_RESPONSE]
    if is_html and not has_csp:
        out.extend(HTML_ONLY)
    if 300 <= status < 400 and location_at >= 0:
        out[location_at] = (b"location", _relative(out[location_at][1], scope))
    return out


def _relative(location: bytes, scope: MutableMapping[str, Any]) -> bytes:
    host = next((v for n, v in scope.get("headers", ()) if n == b"host"), None)
    for scheme in (b"http://", b"https://"):
        if host is not None and location.startswith(scheme + host):
            rest = location[len(scheme + host) :]
            if rest.startswith(b"/") and not rest.startswith(b"//"):
                return rest
            if not rest:
                return b"/"
    return location
