"""A real PEP 691 index on loopback built from recorded metadata, for the resolution oracle (uv) to resolve against.

Each project is a list of `RecordedWheel` (file name, ``Requires-Dist`` lines, ``Requires-Python``). The server
answers ``/simple/<project>/`` with PEP 691 JSON (sha256 of each wheel, ``core-metadata`` with its hash: PEP 658/714),
``/files/<wheel>`` with a small real wheel around that METADATA and ``/files/<wheel>.metadata`` with the METADATA
alone. ``flat_pages`` are a project's own wheel pages (PyG's, mmcv's: pip's ``--find-links``): ``/<path>`` answers
an HTML page of links to its wheels, each served under ``/files/`` as the index's are. Unlike ``loopback_index``
(recorded pages of the real index, with the real index's hashes), every hash here is
the hash of what this server serves, so a resolver that checks them is satisfied. ``requests`` logs every path asked.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.index.loopback_index import serving

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class RecordedWheel:
    filename: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None

    def metadata(self) -> bytes:
        name, version, _build, _tags = parse_wheel_filename(self.filename)
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        lines += [f"Requires-Dist: {req}" for req in self.requires_dist]
        return ("\n".join(lines) + "\n").encode()

    def wheel(self) -> bytes:
        _name, version, _build, _tags = parse_wheel_filename(self.filename)
        dist = self.filename.split("-")[0]
        info = f"{dist}-{version}.dist-info"
        out = io.BytesIO()
        stamp = (2026, 12, 1, 0, 0, 0)
        with zipfile.ZipFile(out, "w") as wheel:
            wheel.writestr(zipfile.ZipInfo(f"{dist}/__init__.py", stamp), b"")
            wheel.writestr(zipfile.ZipInfo(f"{info}/METADATA", stamp), self.metadata())
            tags = self.filename.removesuffix(".whl").split("-")[-3:]
            wheel.writestr(
                zipfile.ZipInfo(f"{info}/WHEEL", stamp),
                f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {'-'.join(tags)}\n".encode(),
            )
            wheel.writestr(zipfile.ZipInfo(f"{info}/RECORD", stamp), b"")
        return out.getvalue()


@dataclass
class _Served:
    projects: dict[str, list[RecordedWheel]]
    files: dict[str, bytes] = field(default_factory=dict)
    metadata: dict[str, bytes] = field(default_factory=dict)
    pages: dict[str, bytes] = field(default_factory=dict)
    flat_pages: dict[str, list[RecordedWheel]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        for wheels in [*self.projects.values(), *self.flat_pages.values()]:
            for wheel in wheels:
                self.metadata[wheel.filename] = wheel.metadata()

    def file(self, filename: str) -> bytes:
        """The wheel, built the first time its page or the file is asked for."""
        with self.lock:
            if filename not in self.files:
                every = [*self.projects.values(), *self.flat_pages.values()]
                wheel = next(w for ws in every for w in ws if w.filename == filename)
                self.files[filename] = wheel.wheel()
            return self.files[filename]

    def page(self, project: str) -> bytes | None:
        wheels = self.projects.get(project)
        if wheels is None:
            return None
        if project not in self.pages:
            self.pages[project] = self._page(project, wheels)
        return self.pages[project]

    def _page(self, project: str, wheels: list[RecordedWheel]) -> bytes:
        files = []
        for wheel in wheels:
            entry: dict[str, object] = {
                "filename": wheel.filename,
                "url": f"../../files/{wheel.filename}",
                "hashes": {"sha256": hashlib.sha256(self.file(wheel.filename)).hexdigest()},
                "core-metadata": {"sha256": hashlib.sha256(self.metadata[wheel.filename]).hexdigest()},
            }
            if wheel.requires_python:
                entry["requires-python"] = wheel.requires_python
            files.append(entry)
        return json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files}).encode()

    def flat_page(self, path: str) -> bytes | None:
        """A project's own wheel page: one link per wheel, the sha256 in the fragment (as PyG's pages link)."""
        wheels = self.flat_pages.get(path)
        if wheels is None:
            return None
        depth = "../" * path.count("/")
        links = []
        for wheel in wheels:
            digest = hashlib.sha256(self.file(wheel.filename)).hexdigest()
            links.append(f'<a href="{depth}files/{quote(wheel.filename)}#sha256={digest}">{wheel.filename}</a><br>')
        return ("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n").encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "max-age=3600")  # one test's answers never change
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD (uv's probe of a flat page's wheel) gets the headers alone
            self.wfile.write(body)

    def do_GET(self) -> None:
        served = self.server.served
        path = unquote(self.path.split("?", 1)[0])
        with served.lock:
            served.requests.append(path)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "simple":
            body = served.page(str(canonicalize_name(parts[1])))
            if body is None:
                return self._send(404, b"no such project", "text/plain")
            return self._send(200, body, JSON_TYPE)
        page = served.flat_page("/".join(parts))
        if page is not None:
            return self._send(200, page, "text/html")
        if len(parts) == 2 and parts[0] == "files":
            name = parts[1]
            if name.endswith(".metadata") and name.removesuffix(".metadata") in served.metadata:
                return self._send(200, served.metadata[name.removesuffix(".metadata")], "text/plain")
            if name in served.metadata:
                return self._send(200, served.file(name), "application/octet-stream")
        self._send(404, b"not found", "text/plain")

    def do_HEAD(self) -> None:
        self.do_GET()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, served: _Served) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.served = served


@dataclass
class MetadataIndex:
    simple: str
    requests: list[str]
    #: the server's root (``http://127.0.0.1:PORT``): a flat page is at ``{base}/{path}``
    base: str = ""


@contextmanager
def metadata_index(projects: Mapping[str, Sequence[RecordedWheel]],
                   flat_pages: Mapping[str, Sequence[RecordedWheel]] | None = None) -> Iterator[MetadataIndex]:
    served = _Served({str(canonicalize_name(k)): list(v) for k, v in projects.items()},
                     flat_pages={k.strip("/"): list(v) for k, v in (flat_pages or {}).items()})
    with serving(_Server(served)) as base:
        yield MetadataIndex(f"{base}/simple/", served.requests, base)
