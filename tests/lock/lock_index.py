"""A loopback index for `accelenv lock`: small real wheels, built here, under several roots.

``/simple/<project>/`` is the default index; ``/whl/<label>/<project>/`` a torch index per build label (as
PyTorch lays them out), each page PEP 691 JSON linking ``/files/<wheel>`` and, for torch, the release's PEP 825
``torch-<version>-variants.json``. A wheel can be listed without its sha256 (``hash_stated=False``), as some
indexes do, so a test sees the lock record where each hash came from.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.index.loopback_index import serving

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class TinyWheel:
    filename: str
    requires_dist: tuple[str, ...] = ()
    #: module path -> source (the package's importable files)
    files: Mapping[str, str] = field(default_factory=dict)
    hash_stated: bool = True
    #: a PEP 825 variant wheel's label: served as ``<filename without .whl>-<label>.whl``
    variant_label: str | None = None

    @property
    def served_name(self) -> str:
        return self.filename if self.variant_label is None else f"{self.filename[:-4]}-{self.variant_label}.whl"

    def metadata(self) -> str:
        name, version, _build, _tags = parse_wheel_filename(self.filename)
        return "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                          *(f"Requires-Dist: {r}" for r in self.requires_dist)]) + "\n"

    def build(self) -> bytes:
        _name, version, _build, _tags = parse_wheel_filename(self.filename)
        dist = self.filename.split("-")[0]
        info = f"{dist}-{version}.dist-info"
        metadata = self.metadata()
        tag = "-".join(self.filename.removesuffix(".whl").split("-")[-3:])
        out = io.BytesIO()
        stamp = (2026, 12, 1, 0, 0, 0)
        with zipfile.ZipFile(out, "w") as wheel:
            for path, text in (self.files or {f"{dist}/__init__.py": ""}).items():
                wheel.writestr(zipfile.ZipInfo(path, stamp), text)
            wheel.writestr(zipfile.ZipInfo(f"{info}/METADATA", stamp), metadata)
            wheel.writestr(zipfile.ZipInfo(f"{info}/WHEEL", stamp),
                           f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
            wheel.writestr(zipfile.ZipInfo(f"{info}/RECORD", stamp), "")
        return out.getvalue()


def fake_torch(version: str, label: str, family: str, runtime: str | None, requires: tuple[str, ...] = ()) -> TinyWheel:
    """A torch wheel whose module answers what `verify-env`'s probe asks (version, build constants)."""
    cuda = repr(runtime) if family == "cuda" else "None"
    hip = repr(runtime) if family == "rocm" else "None"
    files = {
        "torch/__init__.py": f"__version__ = {version + '+' + label!r}\nfrom torch import cuda, version\n",
        "torch/version.py": f"cuda = {cuda}\nhip = {hip}\nxpu = None\n",
        "torch/cuda/__init__.py": "def is_available():\n    return False\n",
    }
    return TinyWheel(f"torch-{version}+{label}-cp311-cp311-manylinux_2_28_x86_64.whl", requires, files)


@dataclass
class _Served:
    #: root ("simple" or "whl/<label>") -> project -> wheels
    roots: dict[str, dict[str, list[TinyWheel]]]
    #: root -> extra files linked on a project's page: (project, filename, bytes)
    extras: dict[str, list[tuple[str, str, bytes]]]
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for projects in self.roots.values():
            for wheels in projects.values():
                for wheel in wheels:
                    self.files[wheel.served_name] = wheel.build()
                    self.files[wheel.served_name + ".metadata"] = wheel.metadata().encode()
        for extras in self.extras.values():
            for _project, filename, body in extras:
                self.files[filename] = body

    def page(self, root: str, project: str) -> bytes | None:
        wheels = self.roots.get(root, {}).get(project)
        if wheels is None:
            return None
        depth = "../" * (root.count("/") + 2)
        files = []
        for wheel in wheels:
            name = wheel.served_name
            entry: dict[str, object] = {"filename": name, "url": f"{depth}files/{name}", "hashes": {}}
            if wheel.hash_stated:
                entry["hashes"] = {"sha256": hashlib.sha256(self.files[name]).hexdigest()}
            # PEP 658/714: the resolver reads METADATA without the wheel
            entry["core-metadata"] = {"sha256": hashlib.sha256(self.files[name + ".metadata"]).hexdigest()}
            files.append(entry)
        for extra_project, filename, body in self.extras.get(root, []):
            if extra_project == project:
                files.append({"filename": filename, "url": f"{depth}files/{filename}",
                              "hashes": {"sha256": hashlib.sha256(body).hexdigest()}})
        return json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files}).encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        served = self.server.served
        path = unquote(self.path.split("?", 1)[0])
        served.requests.append(path)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "files" and parts[1] in served.files:
            body = served.files[parts[1]]
            wanted = self.headers.get("Range", "")
            if wanted.startswith("bytes="):  # one range, as the refresh's range reads ask
                first, _, last = wanted.removeprefix("bytes=").partition("-")
                start = len(body) - int(last) if not first else int(first)
                stop = len(body) - 1 if not first or not last else min(int(last), len(body) - 1)
                start = max(start, 0)
                self.send_response(206)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Range", f"bytes {start}-{stop}/{len(body)}")
                self.send_header("Content-Length", str(stop - start + 1))
                self.end_headers()
                self.wfile.write(body[start : stop + 1])
                return None
            return self._send(200, body, "application/octet-stream")
        if len(parts) >= 2:
            page = served.page("/".join(parts[:-1]), str(canonicalize_name(parts[-1])))
            if page is not None:
                return self._send(200, page, JSON_TYPE)
        self._send(404, b"not found", "text/plain")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, served: _Served) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.served = served


@dataclass
class LockIndex:
    base: str
    requests: list[str]

    @property
    def simple(self) -> str:
        return f"{self.base}/simple/"

    @property
    def torch_template(self) -> str:
        return f"{self.base}/whl/{{label}}/"


@contextmanager
def lock_index(roots: dict[str, dict[str, list[TinyWheel]]],
               extras: dict[str, list[tuple[str, str, bytes]]] | None = None) -> Iterator[LockIndex]:
    served = _Served(roots, extras or {})
    with serving(_Server(served)) as base:
        yield LockIndex(base, served.requests)
