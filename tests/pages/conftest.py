"""A real `accelenv serve --port 0` over SQLite with real probe reports submitted, and headless Chromium.

Chromium is Debian's (``apt-get install -y chromium chromium-driver``) driven by Playwright through
``executable_path`` (Playwright's own browser download is not used). Without it the browser tests skip
saying so. Every page a test opens is routed through `LoopbackGuard`, which lets only requests to the
server's own loopback address through and records (and aborts) any other.

Screenshots go to ``test-artifacts/screenshots/`` (git-ignored): each page at desktop and phone width.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.evidence.conftest import _run_probe
from tests.evidence.live_server import prepare_database
from tests.pages.chromium import INSTALL_HINT, chromium_path
from tests.served import serve_port_zero, started_url

ARTIFACTS = REPO_ROOT / "test-artifacts" / "screenshots"
VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}
@dataclass
class Site:
    base_url: str
    token: str
    #: a `read` token: raw reports and failure texts need one (the pages pass the visitor's Authorization on)
    read_token: str
    #: name -> the submitted probe report (as stored)
    reports: dict[str, dict[str, Any]]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The service with a passing CPU report and a refdev report whose checks fail (out of memory)."""
    tmp = tmp_path_factory.mktemp("site")
    database_url = f"sqlite:///{tmp / 'site.sqlite3'}"
    token = prepare_database(database_url)
    read_token = _read_token(database_url)
    reports: dict[str, dict[str, Any]] = {}
    for name, args in {"cpu": ["--device", "cpu"], "oom": ["--device", "refdev", "--inject", "oom"]}.items():
        found = _run_probe(name, args, tmp)
        if isinstance(found, str):
            pytest.skip(f"probe suite not available: {found}")
        reports[name] = found
    with serve_port_zero(tmp, {"ACCELENV_MATRIX_REFRESH_S": "0"}, database_url=database_url) as served:
        base = started_url(served)
        for report in reports.values():
            res = httpx.post(f"{base}/v1/reports", json=report, headers={"Authorization": f"Bearer {token}"})
            assert res.status_code == 201, res.text
        yield Site(base_url=base, token=token, read_token=read_token, reports=reports)


def _read_token(database_url: str) -> str:
    from compat_service.db.engine import make_engine
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    engine = make_engine(database_url)
    try:
        return create_token(engine, ApiTokenCreate(scope="read", note="pages' browser"))[1]
    finally:
        engine.dispose()


@dataclass
class LoopbackGuard:
    """Routes every request of a page: the server's own origin passes, anything else is aborted and kept."""

    origin: str
    left_loopback: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)

    def __call__(self, route: Any) -> None:
        url = route.request.url
        self.seen.append(url)
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" == self.origin or parts.scheme in ("data", "blob"):
            route.continue_()
        else:
            self.left_loopback.append(url)
            route.abort()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip(f"Chromium is not installed (install it with: {INSTALL_HINT})")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    with playwright_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@dataclass
class Visit:
    page: Any
    guard: LoopbackGuard
    base_url: str

    def open(self, path: str) -> Any:
        response = self.page.goto(self.base_url + path, wait_until="load")
        assert response is not None
        return response

    def resolution(self) -> dict[str, Any]:
        """The API answer the selector embeds (what it rendered)."""
        return json.loads(self.page.locator("script#resolution").text_content())

    def screenshot(self, name: str) -> None:
        """``name``-desktop.png and ``name``-phone.png of the current URL, full page; and no sideways scroll."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        current = self.page.url
        size = self.page.viewport_size
        for label, (width, height) in VIEWPORTS.items():
            self.page.set_viewport_size({"width": width, "height": height})
            self.page.goto(current, wait_until="load")
            self.page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
            # readable at this width: nothing makes the page scroll sideways (wide tables scroll in place)
            scroll_width = self.page.evaluate("document.documentElement.scrollWidth")
            assert scroll_width <= width, f"{current} is {scroll_width} px wide at a {width} px viewport"
        self.page.set_viewport_size(size)


@pytest.fixture
def visit(browser: Any, site: Site) -> Iterator[Visit]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        extra_http_headers={"Authorization": f"Bearer {site.read_token}"},
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.base_url)
    guard = LoopbackGuard(origin=site.base_url)
    context.route("**/*", guard)
    page = context.new_page()
    yield Visit(page=page, guard=guard, base_url=site.base_url)
    context.close()
    assert guard.seen, "the guard saw no request: it did not intercept the page"
    assert not guard.left_loopback, f"requests left loopback: {guard.left_loopback}"
