"""The pages in headless Chromium against a real server on loopback (see conftest.py for the set-up).

Every test's page is routed through the loopback guard: a request to any other host fails the test.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.pages.conftest import Site, Visit

pytestmark = pytest.mark.slow


def api_resolve(site: Site, query: str) -> dict:
    body = httpx.get(f"{site.base_url}/v1/resolve?{query}", timeout=10).json()
    body.pop("request_id", None)
    return body


def pip_text(visit: Visit) -> str:
    """The pip output without its `# warning:` / `# status:` comment lines."""
    text = visit.page.locator("#out-pip").inner_text()
    return "".join(line for line in text.splitlines(True) if not line.startswith("#"))


def test_changing_a_value_changes_the_command(visit: Visit, site: Site) -> None:
    visit.open("/")
    before = pip_text(visit)
    assert before.startswith("pip install torch==")
    assert "/whl/cpu" in before

    with visit.page.expect_navigation():
        visit.page.select_option("#f-backend", "cu121")
    assert "backend=cu121" in visit.page.url
    after = pip_text(visit)
    assert after != before and "/whl/cu121" in after and "+cu121" not in before

    with visit.page.expect_navigation():
        visit.page.select_option("#f-python", "3.10")
    assert re.search(r"[?&]python=3\.10(&|$)", visit.page.url)
    assert visit.resolution()["python"] == "3.10"
    assert visit.resolution() == api_resolve(site, "backend=cu121&python=3.10")

    # a typed driver applies when the field is left (keyboard only: type, then Tab)
    visit.page.focus("#f-driver")
    visit.page.keyboard.type("450.80.02")
    with visit.page.expect_navigation():
        visit.page.keyboard.press("Tab")
    assert "driver=450.80.02" in visit.page.url
    assert visit.page.locator("section.error").is_visible()  # cu121 needs a newer driver
    visit.screenshot("selector-driver-too-old")


def test_copy_puts_the_command_on_the_clipboard(visit: Visit) -> None:
    visit.open("/?torch=2.4&backend=cu118")
    visit.page.click("button.copy[data-copy=out-pip]")
    status = visit.page.locator("#out-pip ~ .copied")
    status.wait_for()
    assert status.inner_text() == "Copied"
    copied = visit.page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == visit.page.locator("#out-pip").inner_text().strip()
    assert "torch==2.4.1" in copied and "/whl/cu118" in copied

    # another format: chosen in place, kept in the URL, copied as shown
    visit.page.check("input[name=fmt][value=requirements]")
    assert "format=requirements" in visit.page.url
    assert visit.page.locator("#out-requirements").is_visible()
    assert not visit.page.locator("#out-pip").is_visible()
    visit.page.click("button.copy[data-copy=out-requirements]")
    visit.page.locator("#out-requirements ~ .copied").wait_for()
    copied = visit.page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == visit.page.locator("#out-requirements").inner_text().strip()
    assert "torch==2.4.1" in copied
    visit.screenshot("selector")


def test_a_long_jetpack_url_wraps_in_its_box_and_the_warning_is_said_once(visit: Visit) -> None:
    """Issue 29: NVIDIA's JetPack wheel URL is one long line; it wraps inside its code box at every width (the
    copy takes it whole), and the torch-only companion warning is said once, under Warnings."""
    visit.open("/?gpu_arch=sm_87&driver=540.4.0&arch=aarch64&python=3.10")
    box = visit.page.locator("#out-pip")
    wheel = "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/torch-2.5.0a0+872d972e41"
    for width in (1280, 390):
        visit.page.set_viewport_size({"width": width, "height": 900})
        inner, shown, right = box.evaluate("e => [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().right]")
        assert inner <= shown, f"the pip box scrolls sideways at {width} px: {inner} > {shown}"
        assert right <= width, f"the pip box ends at {right} px in a {width} px viewport"
    assert wheel in box.inner_text() and "# warning" not in box.inner_text()
    visit.page.click("button.copy[data-copy=out-pip]")
    visit.page.locator("#out-pip ~ .copied").wait_for()
    assert wheel in visit.page.evaluate("navigator.clipboard.readText()")
    warning = "NVIDIA's JetPack table lists torch only"
    said = [w for w in visit.page.locator("ul.warnings li").all_inner_texts() if warning in w]
    assert len(said) == 1, said
    assert visit.page.locator("main").inner_text().count(warning) == 1
    visit.screenshot("selector-jetpack")


def field_name(visit: Visit, field_id: str) -> str:
    """What the form calls a field: its label's own text (without the "(optional)" note or the control)."""
    return visit.page.locator(f"label[for={field_id}]").evaluate(
        "el => (el.firstChild.nodeType === Node.TEXT_NODE ? el.firstChild : el.firstChild.firstChild)"
        ".textContent.trim()"
    )


def test_the_warnings_name_the_fields_the_form_shows(visit: Visit) -> None:
    visit.open("/?torch=2.3")
    with visit.page.expect_navigation():
        visit.page.select_option("#f-backend", "cu121")
    warnings = [w.removeprefix("warning").strip() for w in visit.page.locator("ul.warnings li").all_inner_texts()]
    assert warnings and not [w for w in warnings if re.search(r"--[a-z]", w)], warnings
    python, driver, gpu = (field_name(visit, f) for f in ("f-python", "f-driver", "f-gpu"))
    assert (python, driver, gpu) == ("Python", "Driver version", "GPU architecture")
    assert any(w.startswith(f"no {python} given: chose Python") for w in warnings), warnings
    assert any(w.startswith(f"no {gpu} (or GPU name) given") for w in warnings), warnings
    # a missing driver: one warning with both floors and what lies below the toolkit's own
    (about_driver,) = [w for w in warnings if "driver" in w.lower()]
    assert about_driver.startswith(f"no {driver.lower()} given: cu121 needs an NVIDIA driver >= ")
    assert "own floor" in about_driver and "PTX JIT" in about_driver  # one line (issue 29)
    assert len(set(warnings)) == len(warnings)


def test_an_impossible_choice_shows_the_error_and_alternatives_that_fill_the_selector(
    visit: Visit, site: Site
) -> None:
    visit.open("/?torch=2.3")
    with visit.page.expect_navigation():
        visit.page.select_option("#f-python", "3.13")
    error = visit.page.locator("section.error[role=alert]")
    assert error.is_visible()
    assert "python-unsupported" in error.inner_text()
    assert "3.8–3.12" in error.inner_text()
    expected = api_resolve(site, "torch=2.3&python=3.13")
    assert visit.resolution() == expected
    links = error.locator("ul.alternatives a")
    assert links.count() == len(expected["alternatives"]) >= 1
    visit.screenshot("selector-error")

    wanted = expected["alternatives"][-1]["request"]
    with visit.page.expect_navigation():
        links.nth(len(expected["alternatives"]) - 1).click()
    assert not visit.page.locator("section.error").count()
    assert visit.page.locator("#f-torch").input_value() == wanted["torch"]
    assert visit.page.locator("#f-python").input_value() == wanted["python"]
    assert visit.resolution()["torch"] == wanted["torch"]


def test_the_url_reproduces_a_selection(visit: Visit, site: Site) -> None:
    query = "torch=2.5&python=3.11&os=windows&backend=cuda&driver=560.70&with=torchvision&format=uv"
    visit.open("/?" + query)
    page = visit.page
    assert page.locator("#f-torch").input_value() == "2.5"
    assert page.locator("#f-python").input_value() == "3.11"
    assert page.locator("#f-os").input_value() == "windows"
    assert page.locator("#f-backend").input_value() == "cuda"
    assert page.locator("#f-driver").input_value() == "560.70"
    assert page.locator("#f-with").input_value() == "torchvision"
    assert page.locator("input[name=fmt][value=uv]").is_checked()
    assert page.locator("#out-uv").is_visible()
    assert visit.resolution() == api_resolve(site, query.replace("&format=uv", ""))
    # a second visit to the same link shows the same install
    first = page.locator("#out-uv").inner_text()
    visit.open("/?" + query)
    assert page.locator("#out-uv").inner_text() == first


def test_pasted_nvidia_smi_fills_driver_and_gpu(visit: Visit) -> None:
    pasted = (REPO_ROOT / "tests/data/host_tools/nvidia-smi_550.40.07_rtx4070.txt").read_text()
    visit.open("/?torch=2.5")
    visit.page.click("details.paste summary")
    visit.page.fill("#f-paste", pasted)
    with visit.page.expect_navigation():
        visit.page.click("details.paste button[type=submit]")
    assert visit.page.locator("#f-driver").input_value() == "550.40.07"
    assert visit.page.locator("#f-backend").input_value() == "cuda"
    assert visit.page.locator("#f-torch").input_value() == "2.5"
    assert "RTX 4070" in visit.page.locator("details.paste [role=status]").inner_text()
    assert visit.resolution()["family"] == "cuda"


def test_the_matrix_filters_and_a_cell_opens_its_evidence(visit: Visit, site: Site) -> None:
    cpu = site.reports["cpu"]
    version = cpu["environment"]["torch_version"].partition("+")[0]
    visit.open("/matrix")
    all_columns = visit.page.locator("#heatmap thead th").all_inner_texts()[1:]
    assert "cpu" in all_columns and any(c.startswith("rocm") for c in all_columns)

    with visit.page.expect_navigation():
        visit.page.select_option("#m-family", "cuda")
    columns = visit.page.locator("#heatmap thead th").all_inner_texts()[1:]
    assert columns and all(re.fullmatch(r"cu\d{3}", c) for c in columns)
    assert "family=cuda" in visit.page.url
    visit.screenshot("matrix-cuda")

    visit.open("/matrix?platform=linux-x86_64&python=3.11")
    square = visit.page.locator(f'td.sq a[data-torch="{version}"][data-build="cpu"]')
    # the refdev report ran on this CPU build: a device the matrix does not list for it, so "observed"
    # (the most telling status of the square); the status is text too, not only colour
    assert square.get_attribute("data-status") == "observed"
    assert square.inner_text().startswith("O")
    assert "observed" in square.get_attribute("aria-label") and "declared" in square.get_attribute("aria-label")
    with visit.page.expect_navigation():
        square.click()
    evidence = visit.page.locator("#evidence")
    text = evidence.inner_text()
    assert f"Evidence for torch {version} cpu" in text
    cards = evidence.locator("article.cell")
    assert cards.count() == 2
    cpu_card = cards.filter(has_text="device cpu")
    # one passing host: listed, not yet verified (ACCELENV_VERIFIED_MIN_HOSTS=2)
    assert "declared" in cpu_card.locator("h3").inner_text()
    assert "1 (1 passing)" in cpu_card.inner_text() and "unconfirmed" in cpu_card.inner_text()
    refdev_card = cards.filter(has_text="device refdev")
    assert "observed" in refdev_card.locator("h3").inner_text()
    assert "OutOfMemoryError" in refdev_card.locator("table").inner_text()
    oom_link = refdev_card.locator(f'a[href="/reports/{site.reports["oom"]["report_id"]}"]')
    assert oom_link.count() == 1
    link = cpu_card.locator(f'a[href="/reports/{cpu["report_id"]}"]')
    assert link.count() == 1
    visit.screenshot("matrix-evidence")
    with visit.page.expect_navigation():
        link.click()
    assert visit.page.locator("h1").inner_text() == "Probe report"


def test_the_release_page_renders_its_facts(visit: Visit) -> None:
    response = visit.open("/torch/2.5.1")
    assert response.status == 200
    page = visit.page
    assert page.locator("h1").inner_text() == "torch 2.5.1"
    facts = page.locator("#release-facts").inner_text()
    assert "torchvision" in facts and "0.20.1" in facts and "triton" in facts
    python = page.locator("#python-per-platform").inner_text()
    assert "linux-x86_64" in python and "3.12" in python
    assert "cu124" in page.locator("#builds").inner_text()
    floors = page.locator("#driver-floors").inner_text()
    assert "cu124" in floors and "linux" in floors
    assert page.locator("#gpu-archs").inner_text().count("sm_90") >= 1
    assert page.locator("#release-facts a.src").count() >= 1  # facts link to their sources
    visit.screenshot("release")
    assert visit.open("/torch/9.9.9").status == 404
    assert "not in the matrix" in page.locator("section.error").inner_text()


def test_the_report_page_puts_failing_checks_first(visit: Visit, site: Site) -> None:
    report = site.reports["oom"]
    visit.open(f"/reports/{report['report_id']}")
    page = visit.page
    env = page.locator("#environment").inner_text()
    assert report["environment"]["torch_version"] in env and "refdev" in env
    failing = page.locator("#failing")
    assert failing.is_visible()
    failed = [c for c in report["checks"] if c["status"] == "failed"]
    assert failing.locator("tbody tr").count() == len(failed) > 0
    assert "OutOfMemoryError" in failing.inner_text()
    # the failing section comes before the groups
    assert page.locator("#failing ~ details.group").count() >= 1
    assert page.locator("#check-summary").inner_text().startswith(f"{report['summary']['total']} checks")
    visit.screenshot("report")


def test_docs_pages_load_their_own_assets(visit: Visit) -> None:
    visit.open("/docs")
    visit.page.locator(".swagger-ui .info").wait_for()
    assert "accelenv" in visit.page.locator(".swagger-ui .info").inner_text()
    visit.open("/redoc")
    visit.page.locator("redoc h1, [role=main] h1, h1").first.wait_for()
    assert any("/static/api-docs/" in url for url in visit.guard.seen)
