"""The pages through the real app (no browser): the selector says what `GET /v1/resolve` says, for every golden
resolver case; canonical URLs; the nvidia-smi paste read by the probes' parsers; pages that refuse as the API
does; no page names another host for a script, style, font or image."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import yaml
from fastapi.testclient import TestClient

from compat_service.domain.resolver.request import PARAMETERS
from tests.conftest import REPO_ROOT

CASES_DIR = REPO_ROOT / "tests" / "data" / "resolver_cases"
TOOLS = REPO_ROOT / "tests" / "data" / "host_tools"
_EMBEDDED = re.compile(r'<script type="application/json" id="resolution">(.*?)</script>', re.DOTALL)


def golden_requests() -> list[tuple[str, dict[str, str]]]:
    out = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text())["cases"]:
            request = {str(k): str(v) for k, v in case["request"].items()}
            # an empty form field means "not set" on the page (it redirects to the URL without it), while the
            # API refuses an empty parameter: those cases are the API's alone
            if set(request) <= {p.name for p in PARAMETERS} and all(request.values()):
                out.append((f"{path.stem}-{case['id']}", request))
    return out


GOLDEN = golden_requests()


def embedded(html: str) -> dict:
    match = _EMBEDDED.search(html)
    assert match, "the selector embeds the API's answer"
    return json.loads(match.group(1))


@pytest.mark.parametrize("request_", [r for _, r in GOLDEN], ids=[i for i, _ in GOLDEN])
def test_the_selector_answers_what_get_v1_resolve_answers(client: TestClient, request_: dict[str, str]) -> None:
    query = urlencode(request_)
    page = client.get(f"/?{query}", follow_redirects=False)
    assert page.status_code == 200, page.text[:500]
    api = client.get(f"/v1/resolve?{query}").json()
    api.pop("request_id", None)
    assert embedded(page.text) == api
    if "code" in api:
        assert f"<code>{api['code']}</code>" in page.text
        for alt in api.get("alternatives", []):
            assert html.escape(alt["description"], quote=False) in page.text
    else:
        # a wheel installed by its URL (NVIDIA's JetPack wheels) is shown as a direct reference
        torch: dict[str, object] = next((p for p in api.get("packages", []) if p.get("name") == "torch"), {})
        shown = f"torch @ {torch['url']}" if torch.get("url") else f"torch=={api['pins']['torch']}"
        assert html.escape(shown, quote=False) in page.text


def test_enough_golden_cases_are_compared() -> None:
    assert len(GOLDEN) >= 30


def test_a_form_submit_with_empty_fields_redirects_to_the_canonical_url(client: TestClient) -> None:
    res = client.get("/?torch=2.4&python=&os=&driver=&backend=cu121&junk=1", follow_redirects=False)
    assert res.status_code == 303
    assert res.headers["location"] == "/?torch=2.4&backend=cu121"


def test_an_alternative_link_carries_the_request_it_names(client: TestClient) -> None:
    page = client.get("/?torch=2.3&python=3.13&backend=cu121&format=uv")
    api = client.get("/v1/resolve?torch=2.3&python=3.13&backend=cu121").json()
    hrefs = re.findall(r'<ul class="alternatives">(.*?)</ul>', page.text, re.DOTALL)[0]
    links = [parse_qs(urlsplit(h.replace("&amp;", "&")).query) for h in re.findall(r'href="([^"]+)"', hrefs)]
    assert len(links) == len(api["alternatives"])
    for link, alt in zip(links, api["alternatives"]):
        for key, value in alt["request"].items():
            assert link[key] == [str(value)]
        assert link["format"] == ["uv"]  # the rest of the selection stays


@pytest.mark.parametrize(
    ("capture", "driver"),
    [
        ("nvidia-smi_550.40.07_rtx4070.txt", "550.40.07"),
        ("nvidia-smi_450.57_titan-xp.txt", "450.57"),
        ("nvidia-smi_331.62_gtx680.txt", "331.62"),
        ("nvidia-smi_query_driver_version_2gpus.txt", None),
    ],
)
def test_pasted_nvidia_smi_fills_the_driver(client: TestClient, capture: str, driver: str | None) -> None:
    text = (TOOLS / capture).read_text()
    expected = driver or text.strip().splitlines()[-1].strip()
    res = client.post(
        "/nvidia-smi", content=urlencode({"output": text, "torch": "2.4"}),
        headers={"content-type": "application/x-www-form-urlencoded"}, follow_redirects=False,
    )
    assert res.status_code == 303
    query = parse_qs(urlsplit(res.headers["location"]).query)
    assert query["driver"] == [expected]
    assert query["torch"] == ["2.4"] and query["backend"] == ["cuda"]


def test_pasted_compute_capability_fills_the_gpu_arch(client: TestClient) -> None:
    text = "driver_version, compute_cap\n550.54.15, 9.0\n550.54.15, 9.0\n"
    res = client.post("/nvidia-smi", content=urlencode({"output": text}),
                      headers={"content-type": "application/x-www-form-urlencoded"}, follow_redirects=False)
    query = parse_qs(urlsplit(res.headers["location"]).query)
    assert query["driver"] == ["550.54.15"] and query["gpu_arch"] == ["9.0"]
    page = client.get(res.headers["location"])
    assert embedded(page.text)["family"] == "cuda"


def test_a_plain_nvidia_smi_paste_maps_the_gpu_name_to_its_architecture(client: TestClient) -> None:
    """Plain nvidia-smi prints no architecture: the GPU's name is mapped with the matrix's GPU names."""
    text = (TOOLS / "nvidia-smi_550.40.07_rtx4070.txt").read_text()
    res = client.post("/nvidia-smi", content=urlencode({"output": text, "torch": "2.8"}),
                      headers={"content-type": "application/x-www-form-urlencoded"}, follow_redirects=False)
    query = parse_qs(urlsplit(res.headers["location"]).query)
    assert "RTX 4070" in query["gpu"][0] and "gpu_arch" not in query
    page = client.get(res.headers["location"])
    answer = embedded(page.text)
    assert answer["family"] == "cuda"
    assert any("is sm_89" in r["detail"] for r in answer["reasons"]), answer["reasons"]
    assert "read from the GPU's name" in page.text


def test_an_answer_resting_on_unknown_is_shown_as_such(client: TestClient) -> None:
    page = client.get("/?" + urlencode({"torch": "2.11.0", "backend": "cu129", "gpu_arch": "sm_120", "python": "3.12"}))
    assert embedded(page.text)["status"] == "rests-on-unknown"
    assert "Rests on unknown:" in page.text


def _label_texts(page: str) -> dict[str, str]:
    """Each selector field's label as the form shows it (without its "(optional)" note)."""
    return {m[1]: m[2].strip() for m in re.finditer(r'<label for="(f-[\w-]+)">(?:<span>)?\s*([^<]+)', page)}


def _list_items(page: str, css_class: str) -> list[str]:
    block = re.search(rf'<(?:ul|ol) class="{css_class}">(.*?)</(?:ul|ol)>', page, re.DOTALL)
    assert block, f"the page has no {css_class} list"
    return [html.unescape(re.sub(r"<[^>]+>", "", item)).strip() for item in re.findall(r"<li>(.*?)</li>", block[1])]


def test_the_selector_warnings_name_the_form_fields_and_say_each_thing_once(client: TestClient) -> None:
    """The resolver speaks the CLI's flags (--driver); the page names its own fields, and a missing driver is
    one warning (both floors and what lies below the toolkit's own), not also "driver (not given) is below"."""
    page = client.get("/?" + urlencode({"torch": "2.3", "backend": "cu121"})).text
    labels = _label_texts(page)
    warnings = [w.removeprefix("warning").strip() for w in _list_items(page, "warnings")]
    assert not [w for w in warnings if re.search(r"--[a-z]", w)], warnings
    assert f"no {labels['f-python']} given: chose Python 3.12, the newest torch 2.3.1 supports" in warnings
    assert any(w.startswith(f"no {labels['f-gpu']} (or GPU name) given: cu121 has SASS") for w in warnings)
    (driver,) = [w for w in warnings if "driver" in w.lower()]
    assert driver.startswith(f"no {labels['f-driver'].lower()} given: cu121 needs an NVIDIA driver >= 525.60.13")
    assert "530.30.02" in driver and "PTX JIT" in driver  # one line; the reasons keep the long form (issue 29)
    assert len(set(warnings)) == len(warnings)
    reasons = _list_items(page, "reasons")
    assert any(f"newest patch matching {labels['f-torch']} 2.3 " in r for r in reasons), reasons
    # said once: the install texts are the commands alone; the API's JSON on the page stays the API's own answer
    assert not [fmt for fmt in ("pip", "requirements") if "# warning" in _install_text(page, fmt)]
    assert embedded(page) == {k: v for k, v in client.get("/v1/resolve?torch=2.3&backend=cu121").json().items()
                              if k != "request_id"}


def _install_text(page: str, fmt: str) -> str:
    """The text of one install format's code box, as the page shows it."""
    found = re.search(rf'<pre id="out-{fmt}"[^>]*><code>(.*?)</code></pre>', page, re.DOTALL)
    assert found, f"the page has no {fmt} install box"
    return html.unescape(found[1])


def test_a_jetson_answer_says_its_companion_warning_once(client: TestClient) -> None:
    """Issue 29: the JetPack answer's torch-only warning was printed in the install box as a comment and again
    under Warnings; it is said once, under Warnings, and the boxes hold the commands (NVIDIA's wheel URL)."""
    query = {"gpu_arch": "sm_87", "driver": "540.4.0", "arch": "aarch64", "python": "3.10"}
    page = client.get("/?" + urlencode(query)).text
    warning = "torchvision, torchaudio: NVIDIA's JetPack table lists torch only"
    assert [w for w in _list_items(page, "warnings") if warning in w]
    shown = html.unescape(_EMBEDDED.sub("", page))  # the embedded JSON is the API's body, not page text
    assert shown.count(warning) == 1, shown.count(warning)
    wheel = "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/torch-2.5.0a0+872d972e41"
    for fmt in ("pip", "requirements"):
        text = _install_text(page, fmt)
        assert wheel in text and "# warning" not in text and "# status" not in text, text
    assert any(warning in w for w in embedded(page)["warnings"])  # the API still says it
    # NVIDIA's wheel is installed by its URL, not picked among PyTorch's index variants: no PEP 817 section
    assert "Wheel variants (PEP 817)" not in page


def test_the_accelerator_field_labels_auto_honestly(client: TestClient) -> None:
    page = client.get("/")
    assert "auto: CPU, or the GPU the driver / GPU fields name" in page.text
    assert '<option value="cpu" >CPU only</option>' in page.text


@pytest.mark.parametrize(("path", "minor"), [("/torch/2.5", "2.5."), ("/torch/latest", "2.")])
def test_a_minor_or_latest_goes_to_the_newest_patch(client: TestClient, path: str, minor: str) -> None:
    res = client.get(path, follow_redirects=False)
    assert res.status_code == 302
    target = res.headers["location"]
    assert target.startswith("/torch/" + minor) and target.count(".") == 2
    assert client.get(target).status_code == 200


def test_a_paste_with_nothing_to_read_says_so(client: TestClient) -> None:
    res = client.post("/nvidia-smi", content=urlencode({"output": "hello", "python": "3.11"}),
                      headers={"content-type": "application/x-www-form-urlencoded"})
    assert res.status_code == 200
    assert "holds no NVIDIA driver version" in res.text
    assert 'value="3.11" selected' in res.text


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        ("/torch/9.9.9", 404, "torch 9.9.9 is not in the matrix"),
        ("/torch/not-a-version", 422, "invalid"),
        # raw reports need a read token (docs/service.md): the page answers what its API route answers
        ("/reports/00000000-0000-0000-0000-000000000000", 401, None),
        ("/reports/not-a-uuid", 404, None),
    ],
)
def test_pages_refuse_as_the_api_does(client: TestClient, path: str, status: int, text: str | None) -> None:
    res = client.get(path)
    assert res.status_code == status
    assert res.headers["content-type"].startswith("text/html")
    if text is None:  # the API route's own refusal, shown on the page
        api = client.get(f"/v1{path}")
        assert api.status_code == status
        text = api.json()["message"]
    assert text in html.unescape(res.text)


def test_matrix_page_filters_and_names_a_bad_filter(client: TestClient) -> None:
    every = client.get("/matrix").text
    cuda = client.get("/matrix?family=cuda&platform=linux-aarch64").text
    assert "rocm6.0" in every and "rocm6.0" not in cuda
    bad = client.get("/matrix?platform=beos-x86_64")
    assert bad.status_code == 200 and "unknown platform 'beos-x86_64'" in html.unescape(bad.text)


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("script", "img", "iframe") and found.get("src"):
            self.urls.append(found["src"] or "")
        if tag == "link" and found.get("href"):
            self.urls.append(found["href"] or "")


@pytest.mark.parametrize("path", ["/", "/matrix", "/torch/2.5.1", "/docs", "/redoc", "/?torch=2.3&python=3.13"])
def test_pages_load_nothing_from_another_host(client: TestClient, path: str) -> None:
    parser = _Assets()
    parser.feed(client.get(path).text)
    assert parser.urls
    assert all(url.startswith("/") and not url.startswith("//") for url in parser.urls), parser.urls
    for url in parser.urls:
        assert client.get(url).status_code == 200, url
    assert "fonts.googleapis" not in client.get(path).text


def test_pages_are_not_in_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/resolve" in paths and "/metrics" in paths
    assert not {"/", "/matrix", "/torch/{version}", "/reports/{report_id}", "/nvidia-smi"} & set(paths)


def test_static_files_ship_with_the_package() -> None:
    pages = Path(__file__).resolve().parents[2] / "compat_service" / "api" / "pages"
    assert (pages / "static" / "site.js").is_file() and (pages / "templates" / "selector.html").is_file()


def test_the_selector_says_which_wheel_variant_an_installer_and_accelenv_take(client: TestClient) -> None:
    page = client.get("/", params={"torch": "2.13.0", "backend": "cuda", "driver": "535.54.03", "gpu_arch": "sm_80",
                                   "python": "3.11", "os": "linux", "arch": "x86_64"})
    assert page.status_code == 200
    assert "Wheel variants (PEP 817)" in page.text
    assert "differs (minor-version-compat)" in page.text


def test_the_form_has_the_runtime_and_host_platform_fields_and_keeps_them(client: TestClient) -> None:
    """Issue 29: the vendor runtime, glibc, musl and macOS are fields; a glibc 2.17 host gets the 2.6 pin."""
    page = client.get("/?" + urlencode({"backend": "cpu", "python": "3.12", "os": "linux", "glibc": "2.17"})).text
    for name in ("runtime", "glibc", "musl", "macos"):
        assert f'name="{name}"' in page
    assert 'id="f-glibc" name="glibc" value="2.17"' in page
    assert "torch==2.6.0" in page
