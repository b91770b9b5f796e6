"""A real HTTP package index on loopback serving the recorded fixtures of tests/data/index/.

``/simple/<project>/`` negotiates PEP 691 JSON or PEP 503 HTML from the Accept header and answers
conditional requests (ETag / If-None-Match -> 304); ``/files/<wheel>`` serves a small real zip built around
the recorded METADATA, honouring Range; ``/files/<wheel>.metadata`` is the PEP 658 file where
``IndexState.pep658`` advertises one; ``/whl/<label>/<project>/`` serves the variant-index fixtures.
``IndexState`` holds the knobs a test turns: hidden versions (a release not yet published), yanked files,
failures (503) and delays per path, JSON on or off, and a log of every request.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import random
import re
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from packaging.utils import parse_sdist_filename, parse_wheel_filename

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "index"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_HREF_FILE = re.compile(r'href="[^"]*/([^/"#]+)(?:#[^"]*)?"')


@dataclass
class IndexState:
    json_enabled: bool = True
    etags: bool = True
    #: project -> versions the index does not have yet
    hidden: dict[str, set[str]] = field(default_factory=dict)
    #: file names yanked (on top of what the recorded page says)
    yanked: set[str] = field(default_factory=set)
    #: file names whose PEP 658 metadata file the page advertises and the server serves
    pep658: set[str] = field(default_factory=set)
    #: path -> number of 503 answers still to give
    fail: dict[str, int] = field(default_factory=dict)
    #: path -> (seconds, number of slow answers still to give)
    slow: dict[str, tuple[float, int]] = field(default_factory=dict)
    #: (method, path, range header or None, status)
    log: list[tuple[str, str, str | None, int]] = field(default_factory=list)
    bytes_sent: dict[str, int] = field(default_factory=dict)
    #: (path, content type) of every project page answered with a body
    pages_served: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: path -> a function answering that path instead (a hostile index: tests/security/)
    override: dict[str, Callable[[BaseHTTPRequestHandler], None]] = field(default_factory=dict)

    def requests_to(self, prefix: str) -> list[tuple[str, str, str | None, int]]:
        return [entry for entry in self.log if entry[1].startswith(prefix)]


def _version_of(filename: str) -> str:
    if not filename.endswith(".whl"):
        return str(parse_sdist_filename(filename)[1])
    return str(parse_wheel_filename(filename)[1])


def build_wheel(filename: str) -> bytes:
    """A small real wheel: a 256 KiB filler member, then ``*.dist-info/METADATA`` (recorded) and ``WHEEL``."""
    name, version, _build, _tags = parse_wheel_filename(filename)
    dist = filename.split("-")[0]
    recorded = FIXTURES / "metadata" / f"{filename}.METADATA"
    minimal = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    metadata = recorded.read_bytes() if recorded.is_file() else minimal
    out = io.BytesIO()
    filler = random.Random(filename).randbytes(256 * 1024)
    with zipfile.ZipFile(out, "w") as wheel:
        stamp = (2026, 12, 1, 0, 0, 0)
        wheel.writestr(zipfile.ZipInfo(f"{dist}/_filler.bin", stamp), filler, zipfile.ZIP_STORED)
        info = f"{dist}-{version}.dist-info"
        wheel.writestr(zipfile.ZipInfo(f"{info}/METADATA", stamp), metadata, zipfile.ZIP_DEFLATED)
        wheel.writestr(zipfile.ZipInfo(f"{info}/WHEEL", stamp), b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
    return out.getvalue()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        state = self.server.state
        with state.lock:
            state.log.append(("GET", self.path, self.headers.get("Range"), status))
            state.bytes_sent[self.path] = state.bytes_sent.get(self.path, 0) + len(body)
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self) -> None:
        state = self.server.state
        path = unquote(self.path.split("?", 1)[0])
        with state.lock:
            failures = state.fail.get(path, 0)
            if failures:
                state.fail[path] = failures - 1
            seconds, count = state.slow.get(path, (0.0, 0))
            if count:
                state.slow[path] = (seconds, count - 1)
        if path in state.override:
            return state.override[path](self)
        if failures:
            return self._send(503, b"try again", {"Content-Type": "text/plain"})
        if count:
            time.sleep(seconds)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "simple":
            return self._project(parts[1])
        if len(parts) == 3 and parts[0] == "whl":
            return self._variant(parts[1], parts[2])
        if len(parts) == 2 and parts[0] == "files":
            return self._file(parts[1])
        return self._send(404, b"not found")

    # -- pages -------------------------------------------------------------------------------------------

    def _project(self, project: str) -> None:
        state = self.server.state
        page_json = FIXTURES / "pages" / f"{project}.json"
        if not page_json.is_file():
            return self._send(404, b"no such project")
        hidden = state.hidden.get(project, set())
        accept = self.headers.get("Accept", "")
        if state.json_enabled and JSON_TYPE in accept:
            data = json.loads(page_json.read_text())
            files = []
            for entry in data["files"]:
                if _version_of(entry["filename"]) in hidden:
                    continue
                if entry["filename"] in state.yanked:
                    entry["yanked"] = "yanked by the test"
                if entry["filename"] in state.pep658:
                    entry["core-metadata"] = True
                files.append(entry)
            data["files"] = files
            data["versions"] = [v for v in data["versions"] if v not in hidden]
            body, content_type = json.dumps(data).encode(), JSON_TYPE
        else:
            lines = []
            for line in (FIXTURES / "pages" / f"{project}.html").read_text().splitlines():
                match = _HREF_FILE.search(line)
                if match:
                    filename = html.unescape(match.group(1))
                    if _version_of(filename) in hidden:
                        continue
                    extra = ""
                    if filename in state.yanked:
                        extra += ' data-yanked="yanked by the test"'
                    if filename in state.pep658:
                        extra += ' data-core-metadata="true"'
                    line = line.replace("<a ", f"<a{extra} ", 1)
                lines.append(line)
            body, content_type = "\n".join(lines).encode(), "text/html; charset=utf-8"
        self._page(body, content_type)

    def _page(self, body: bytes, content_type: str) -> None:
        headers = {"Content-Type": content_type, "Vary": "Accept"}
        if self.server.state.etags:
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            headers["ETag"] = etag
            if self.headers.get("If-None-Match") == etag:
                return self._send(304, b"", {"ETag": etag})
        with self.server.state.lock:
            self.server.state.pages_served.append((self.path, content_type))
        self._send(200, body, headers)

    def _variant(self, label: str, project: str) -> None:
        page = FIXTURES / "variants" / f"{label}-{project}.html"
        if not page.is_file():
            return self._send(404, b"no such project")
        self._page(page.read_bytes(), "text/html")

    # -- files -------------------------------------------------------------------------------------------

    def _file(self, filename: str) -> None:
        state = self.server.state
        if filename.endswith(".metadata"):
            wheel = filename.removesuffix(".metadata")
            recorded = FIXTURES / "metadata" / f"{wheel}.METADATA"
            if wheel in state.pep658 and recorded.is_file():
                return self._send(200, recorded.read_bytes(), {"Content-Type": "text/plain"})
            return self._send(404, b"no metadata file")
        if not filename.endswith(".whl") or not (FIXTURES / "metadata" / f"{filename}.METADATA").is_file():
            return self._send(404, b"no such file")
        data = self.server.wheel(filename)
        spec = self.headers.get("Range")
        if spec is None:
            return self._send(200, data, {"Content-Type": "application/octet-stream"})
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", spec)
        if match is None:
            return self._send(416, b"bad range")
        first, last = match.groups()
        size = len(data)
        if first == "":
            start, end = max(0, size - int(last)), size - 1
        else:
            start, end = int(first), min(size - 1, int(last) if last else size - 1)
        headers = {"Content-Type": "application/octet-stream", "Content-Range": f"bytes {start}-{end}/{size}",
                   "Accept-Ranges": "bytes"}
        self._send(206, data[start : end + 1], headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: IndexState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self._wheels: dict[str, bytes] = {}

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that timed out and hung up (the slow-server test) is not a server failure

    def wheel(self, filename: str) -> bytes:
        with self.state.lock:
            if filename not in self._wheels:
                self._wheels[filename] = build_wheel(filename)
            return self._wheels[filename]


@dataclass
class LoopbackIndex:
    base: str
    state: IndexState

    @property
    def simple(self) -> str:
        return f"{self.base}/simple/"

    def variant(self, label: str) -> str:
        return f"{self.base}/whl/{label}"


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[str]:
    """Serve on a thread until the block ends; yields the base URL."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def loopback_index(state: IndexState | None = None) -> Iterator[LoopbackIndex]:
    server = _Server(state or IndexState())
    with serving(server) as base:
        yield LoopbackIndex(base, server.state)
