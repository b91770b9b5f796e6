"""`matrix refresh` against a hostile index on loopback (issue 24, items 5 and 6): every read is bounded in
bytes and time, a page that is not the project's simple-API page is never trusted, redirects stay within
the index's origin, and a refresh that would delete most of a project's facts stops. After each case the
matrix_data directory given to the refresh is byte-for-byte what it was.

Each case ends in a few seconds: the limits are turned down (``ReadLimits``) and every hostile handler
sends a bounded amount."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import time
import zipfile
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cli import matrix_cmd
from compat_service.index.client import IndexClient, ReadLimits
from compat_service.index.errors import IndexResponseError, IndexUnreachableError
from compat_service.index.page_cache import IndexCache
from compat_service.index.refresh import RefreshResult, run_refresh
from tests.index.conftest import FAST_RETRY, location
from tests.index.loopback_index import FIXTURES, LoopbackIndex

pytestmark = pytest.mark.timeout(60)
TODAY = dt.date(2026, 12, 1)
SMALL = ReadLimits(page_bytes=2 * 1024 * 1024, metadata_bytes=256 * 1024, request_s=1.5, run_s=30, redirects=5)
runner = CliRunner()
app = typer.Typer()
matrix_cmd.register(app)
TORCH_WHEELS = sorted(p.name.removesuffix(".METADATA") for p in (FIXTURES / "metadata").glob("torch-*.METADATA"))


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def refresh(index: LoopbackIndex, matrix: Path, limits: ReadLimits = SMALL, **kwargs: Any) -> RefreshResult:
    kwargs.setdefault("variants", False)
    with IndexClient(cache=IndexCache(None), timeout=5.0, retry=FAST_RETRY, limits=limits) as c:
        return run_refresh(c, location(index), matrix, today=TODAY, **kwargs)


@pytest.fixture
def refreshed(index: LoopbackIndex, matrix: Path) -> dict[str, str]:
    """matrix_data after an honest refresh: the facts a hostile answer must not take away."""
    refresh(index, matrix)
    return snapshot(matrix)


def _raw(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes = b"") -> None:
    handler.send_response(status)
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.end_headers()
    if body:
        handler.wfile.write(body)


def _ranges(data: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    """A file host honouring Range for ``data``."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        spec = handler.headers.get("Range", "")[len("bytes="):]
        first, _, last = spec.partition("-")
        size = len(data)
        start, end = (max(0, size - int(last)), size - 1) if first == "" else (int(first), min(size - 1, int(last)))
        _raw(handler, 206, {"Content-Range": f"bytes {start}-{end}/{size}", "Content-Length": str(end - start + 1)},
             data[start:end + 1])

    return answer


def _portal(handler: BaseHTTPRequestHandler) -> None:
    body = b"<html><head><title>Sign in</title></head><body><form>Please sign in</form></body></html>"
    _raw(handler, 200, {"Content-Type": "text/html", "Content-Length": str(len(body))}, body)


def test_a_captive_portal_page_is_an_error_not_an_empty_project(
    index: LoopbackIndex, matrix: Path, refreshed: dict[str, str]
) -> None:
    index.state.override["/simple/torchvision/"] = _portal
    args = ["matrix", "refresh", "--index-url", index.simple, "--path", str(matrix), "--no-cache", "--no-variants",
            "--package", "torchvision"]
    result = runner.invoke(app, args)
    assert result.exit_code == 6, result.output
    assert "index-bad-response" in result.stderr and "lists no file of torchvision" in result.stderr
    assert "Traceback" not in result.output
    assert snapshot(matrix) == refreshed


def test_a_refresh_that_would_remove_most_facts_stops_unless_allowed(
    index: LoopbackIndex, matrix: Path, refreshed: dict[str, str]
) -> None:
    index.state.hidden = {"torch": {"2.14.0", "2.14.1"}}  # the index "lost" two of three releases
    args = ["matrix", "refresh", "--index-url", index.simple, "--path", str(matrix), "--no-cache", "--no-variants",
            "--package", "torch"]
    stopped = runner.invoke(app, args)
    assert stopped.exit_code == 12, stopped.output
    assert "refresh-removes-facts" in stopped.stderr and "--allow-removals" in stopped.stderr
    assert snapshot(matrix) == refreshed
    allowed = runner.invoke(app, [*args, "--allow-removals"])
    assert allowed.exit_code == 0, allowed.output
    assert snapshot(matrix) != refreshed


def _redirect(target: Callable[[BaseHTTPRequestHandler], str]) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        _raw(handler, 302, {"Location": target(handler), "Content-Length": "0"})

    return answer


def _other_origin(handler: BaseHTTPRequestHandler) -> str:
    port = handler.server.server_address[1]  # type: ignore[index]
    return f"http://localhost:{port}/simple/torch/"


def _api_99(handler: BaseHTTPRequestHandler) -> None:
    body = json.dumps({"meta": {"api-version": "99.0"}, "name": "torch", "files": []}).encode()
    _raw(handler, 200, {"Content-Type": "application/vnd.pypi.simple.v1+json", "Content-Length": str(len(body))}, body)


def _endless(handler: BaseHTTPRequestHandler) -> None:
    """A page that never ends (no Content-Length); stops after 64 MiB or when the client hangs up."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.end_headers()
    chunk = b"<a href='x'>" * 5000
    try:
        for _ in range(64 * 1024 * 1024 // len(chunk)):
            handler.wfile.write(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _drip(handler: BaseHTTPRequestHandler) -> None:
    """A page sent one byte every 0.1 s (at most 100 bytes): each read is quick, the whole never is."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", "100")
    handler.end_headers()
    try:
        for _ in range(100):
            handler.wfile.write(b"a")
            handler.wfile.flush()
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):
        pass


CASES = {
    "other-origin-redirect": (_redirect(_other_origin), IndexResponseError, "redirects to another origin"),
    "redirect-loop": (_redirect(lambda h: "/simple/torch/"), IndexResponseError, "more than 5 redirects"),
    "api-version-99": (_api_99, IndexResponseError, "simple-API version '99.0'"),
    "endless-page": (_endless, IndexResponseError, f"sent more than {SMALL.page_bytes} bytes"),
    "dripping-page": (_drip, IndexUnreachableError, "did not finish its answer within 1.5 s"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_project_page_is_a_clear_error(
    index: LoopbackIndex, matrix: Path, refreshed: dict[str, str], case: str
) -> None:
    answer, error, message = CASES[case]
    index.state.override["/simple/torch/"] = answer
    started = time.monotonic()
    with pytest.raises(error, match=message):
        refresh(index, matrix, packages=["torch"])
    assert time.monotonic() - started < 20
    assert snapshot(matrix) == refreshed


def _huge_metadata(handler: BaseHTTPRequestHandler) -> None:
    """A PEP 658 metadata file of 4 MiB, sent without a length."""
    handler.send_response(200)
    handler.end_headers()
    try:
        for _ in range(64):
            handler.wfile.write(b"Requires-Dist: x\n" * 4096)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _bomb_wheel(filename: str) -> bytes:
    dist = filename.split("-")[0]
    version = filename.split("-")[1]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as wheel:
        headers = b"Metadata-Version: 2.1\nName: torch\nVersion: " + version.encode() + b"\n"
        metadata = headers + b"\n" * (8 * 1024 * 1024)
        wheel.writestr(f"{dist}-{version}.dist-info/METADATA", metadata, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _oversized_range(handler: BaseHTTPRequestHandler) -> None:
    """Whatever range is asked, 3 MiB come back (with a plausible Content-Range)."""
    size = 3 * 1024 * 1024
    handler.send_response(206)
    handler.send_header("Content-Range", f"bytes 0-{size - 1}/{size}")
    handler.end_headers()
    try:
        for _ in range(48):
            handler.wfile.write(b"\0" * 65536)
    except (BrokenPipeError, ConnectionResetError):
        pass


def test_a_huge_metadata_file_is_refused(index: LoopbackIndex, matrix: Path, refreshed: dict[str, str]) -> None:
    index.state.pep658 = set(TORCH_WHEELS)
    for name in TORCH_WHEELS:
        index.state.override[f"/files/{name}.metadata"] = _huge_metadata
    with pytest.raises(IndexResponseError, match=f"sent more than {SMALL.metadata_bytes} bytes"):
        refresh(index, matrix, packages=["torch"])
    assert snapshot(matrix) == refreshed


def test_a_metadata_member_inflating_past_the_limit_is_refused(
    index: LoopbackIndex, matrix: Path, refreshed: dict[str, str]
) -> None:
    index.state.pep658 = set()
    for name in TORCH_WHEELS:
        index.state.override[f"/files/{name}"] = _ranges(_bomb_wheel(name))
    with pytest.raises(IndexResponseError, match="METADATA inflates to 8388"):
        refresh(index, matrix, packages=["torch"])
    assert snapshot(matrix) == refreshed


def test_a_range_answer_larger_than_asked_is_cut_off(
    index: LoopbackIndex, matrix: Path, refreshed: dict[str, str]
) -> None:
    index.state.pep658 = set()
    for name in TORCH_WHEELS:
        index.state.override[f"/files/{name}"] = _oversized_range
    with pytest.raises(IndexResponseError, match="sent more than 65536 bytes"):
        refresh(index, matrix, packages=["torch"])
    assert snapshot(matrix) == refreshed


def test_validate_flags_a_generated_file_that_lost_most_of_its_facts(tmp_path: Path) -> None:
    import shutil

    from compat_service.index.generated import load_facts, write_facts
    from matrix_data import DATA_DIR

    previous, current = tmp_path / "previous", tmp_path / "current"
    for target in (previous, current):
        shutil.copytree(DATA_DIR, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    torch = load_facts(current, "torch")
    assert torch is not None and len(torch.releases) > 4
    write_facts(current, torch.model_copy(update={"releases": torch.releases[-1:]}))  # valid, most facts gone
    flagged = runner.invoke(app, ["matrix", "validate", str(current), "--previous", str(previous)])
    same = runner.invoke(app, ["matrix", "validate", str(previous), "--previous", str(previous)])
    assert flagged.exit_code == 4, flagged.output
    assert "index/torch.yaml: holds" in flagged.stdout and "lost more than 50%" in flagged.stdout
    assert same.exit_code == 0, same.output


def test_a_malformed_requires_dist_is_reported(index: LoopbackIndex, matrix: Path, refreshed: dict[str, str]) -> None:
    index.state.pep658 = set(TORCH_WHEELS)

    def poisoned(name: str) -> Callable[[BaseHTTPRequestHandler], None]:
        head, _, rest = (FIXTURES / "metadata" / f"{name}.METADATA").read_bytes().partition(b"\n\n")
        body = head.rstrip(b"\n") + b"\nRequires-Dist: numpy >= \nRequires-Dist: ok-package (>=1.0\n\n" + rest
        return lambda handler: _raw(handler, 200, {"Content-Length": str(len(body))}, body)

    for name in TORCH_WHEELS:
        index.state.override[f"/files/{name}.metadata"] = poisoned(name)
    result = refresh(index, matrix, packages=["torch"], write=False)
    assert any("'numpy >= '" in n and "not a valid requirement" in n for n in result.notices), result.notices
    assert any("'ok-package (>=1.0'" in n for n in result.notices), result.notices
    assert snapshot(matrix) == refreshed
