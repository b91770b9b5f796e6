"""Issue 24, item 1: the public heatmap cannot be grown by one token's reports or by anonymous URLs.

Through the real app (TestClient) on a real SQLite database: a report token stores reports for hundreds of
made-up torch versions and builds; the page stays within the declared releases and builds plus a few
observed ones, and says how many it leaves off. Made-up ``torch``/``build``/filter values in the URL are
refused (404) or ignored with a notice, and never build or keep another heatmap.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.api.deps import state_of
from compat_service.api.pages import heatmap
from compat_service.db.engine import make_engine
from compat_service.db.matrix.tables import ApiTokenCreate
from compat_service.db.tokens import create_token
from tests.api.conftest import settings_for
from tests.synthetic_reports import synthetic_report

MADE_UP = 300


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path_factory.mktemp('heat') / 'accelenv.sqlite3'}"
    app = create_app(settings_for(url, matrix_refresh_s=0))
    engine = make_engine(url)
    try:
        _public, secret = create_token(engine, ApiTokenCreate(scope="report", note="flooder"))
    finally:
        engine.dispose()
    with TestClient(app, raise_server_exceptions=False) as c:
        c.get("/matrix")  # declared rows before the flood
        reports = [
            synthetic_report(host=str(n), torch=f"7.{n}.0+junk{n}", build=f"junk{n}", report_id=None)
            for n in range(MADE_UP)
        ]
        for start in range(0, MADE_UP, 100):
            res = c.post("/v1/reports/batch", json=reports[start:start + 100],
                         headers={"Authorization": f"Bearer {secret}"})
            assert res.status_code == 200, res.text
            assert {r["status"] for r in res.json()["results"]} == {"created"}
        yield c


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr id="torch-([^"]+)">', page)


def _columns(page: str) -> int:
    head = page[page.index('<table class="heat"'):page.index("</thead>")]
    return head.count('<th scope="col"><span>')


def test_observed_releases_and_builds_are_capped_on_the_page(client: TestClient) -> None:
    page = client.get("/matrix")
    assert page.status_code == 200
    rows = _rows(page.text)
    made_up = [r for r in rows if r.startswith("7.")]
    declared = [r for r in rows if not r.startswith("7.")]
    assert declared, rows
    assert len(made_up) == heatmap.MAX_OBSERVED_ROWS
    assert _columns(page.text) <= len(state_of(client.app).matrix_repository.current().data.build_variants.variants) + (
        heatmap.MAX_OBSERVED_COLUMNS
    )
    hidden = re.search(r"(\d+) observed cells .* not shown", html.unescape(page.text))
    assert hidden is not None and int(hidden[1]) == MADE_UP - heatmap.MAX_OBSERVED_ROWS
    assert len(page.content) < 2_000_000
    # every observed cell is still listed, paged, by the API
    api = client.get("/v1/matrix", params={"status": "observed", "limit": 1})
    assert api.json()["total"] >= MADE_UP


@pytest.mark.parametrize(
    "query",
    [{"torch": "junk{n}", "build": "cpu"}, {"torch": "2.13.0", "build": "junk-build{n}"}, {"torch": "7.{n}.0"}],
    ids=["torch", "build", "torch-alone"],
)
def test_a_made_up_square_is_a_404_and_builds_no_heatmap(client: TestClient, query: dict[str, str]) -> None:
    client.get("/matrix")
    cache = state_of(client.app).page_cache
    before = len(cache), cache.bytes
    for n in range(MADE_UP + 10, MADE_UP + 80):  # 70 distinct URLs
        res = client.get("/matrix", params={k: v.format(n=n) for k, v in query.items()})
        assert res.status_code == 404, res.text[:300]
        assert res.headers["content-type"].startswith("text/html")
        assert "has no square for" in html.unescape(res.text)
    assert (len(cache), cache.bytes) == before


def test_made_up_filters_are_named_and_ignored_not_cached(client: TestClient) -> None:
    client.get("/matrix")
    cache = state_of(client.app).page_cache
    before = len(cache)
    for n in range(40):
        res = client.get("/matrix", params={"python": f"3.{100 + n}", "family": f"fam{n}"})
        assert res.status_code == 200
        assert f"unknown python '3.{100 + n}'" in html.unescape(res.text)
    assert len(cache) == before


def test_a_square_of_the_page_still_opens(client: TestClient) -> None:
    page = client.get("/matrix").text
    found = re.search(r'<a href="(/matrix\?[^"]+)#evidence"', page)
    assert found is not None
    href = html.unescape(found[1])
    res = client.get(href)
    assert res.status_code == 200 and 'id="evidence"' in res.text
