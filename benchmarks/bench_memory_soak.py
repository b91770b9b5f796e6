"""Memory soak of one service worker under what anyone (or one report token) can send (issue 24).

Reproduce (from the repository root):

    .venv/bin/python benchmarks/bench_memory_soak.py                      # the full soak
    .venv/bin/python benchmarks/bench_memory_soak.py --resolve 4000 --matrix 4000 --observed 2000   # smaller

Starts a real uvicorn (one worker, GC tuning on as deployed, the matrix loaded) on a fresh SQLite file on
loopback, warms it (a few of each request), then reads the worker's RSS (``/proc/PID/status`` VmRSS) before
and after each phase:

1. ``--observed`` observed cells from ONE report token: reports for made-up torch versions and builds, sent
   in NDJSON-free JSON batches of 100 (``POST /v1/reports/batch``), then ``/matrix`` loaded;
2. ``--resolve`` distinct ``GET /v1/resolve`` queries (a quarter of them unsatisfiable: 409s, whose cached
   errors used to leave reference cycles behind);
3. ``--matrix`` distinct ``/matrix`` URLs (made-up ``torch``/``build`` squares, made-up filters, and the
   real filter combinations).

Then the attacks of issue 34, each a phase with the worker's RSS after it and a well-behaved client
polling ``GET /healthz`` throughout (its non-200 answers are counted):

4. ``--batch-bodies`` JSON arrays of ``{}`` at the batch route's limit (16 MB) with a valid token;
5. as many NDJSON bodies of one-character lines at the limit;
6. ``--pipeline-conns`` connections each sending ``--pipeline-mb`` MB of pipelined ``GET /healthz``
   without reading an answer;
7. ``--slow-bodies`` connections declaring a 1 GB body and sending one byte (a tenth of them with a valid
   token: those are cut by the body's minimum rate, the rest answered 401 and closed);
8. ``--ci-sets`` distinct ``GET /v1/ci-matrix`` parameter sets;
9. ``--stacks`` distinct ``GET /v1/resolve?with=`` stacks.

``--only-attacks`` skips phases 1-3.

Prints one JSON object: RSS in MB before and after each phase, the growth over the whole soak (after
warm-up) and whether it is within the goal (≤ 50 MB per worker). Every request goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tests.evidence.live_server import live_server
from tests.synthetic_reports import synthetic_report

GOAL_MB = 50.0
THREADS = 4


def _worker_pid(server_pid: int) -> int:
    """The uvicorn worker (a child of the supervisor), or the server itself when it runs in-process."""
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children")
    try:
        kids = [int(p) for p in children.read_text().split()]
    except OSError:
        kids = []
    return kids[0] if kids else server_pid


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _run(base: str, paths: list[str], statuses: dict[int, int]) -> None:
    def chunk(part: list[str]) -> dict[int, int]:
        seen: dict[int, int] = {}
        with httpx.Client(base_url=base, timeout=60) as client:
            for path in part:
                status = client.get(path).status_code
                seen[status] = seen.get(status, 0) + 1
        return seen

    parts = [paths[i::THREADS] for i in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        for seen in pool.map(chunk, parts):
            for status, count in seen.items():
                statuses[status] = statuses.get(status, 0) + count


def resolve_paths(count: int) -> list[str]:
    out = []
    for n in range(count):
        if n % 4 == 3:  # unsatisfiable: a Python no release supports (409, cached as an error)
            out.append(f"/v1/resolve?torch=2.13&python=3.{20 + n % 60}&driver={400 + n // 60}.{n % 60}")
        else:
            out.append(f"/v1/resolve?torch=2.13&backend=cuda&driver={525 + n % 200}.{n // 200}.{n % 7}&python=3.12")
    return out


def matrix_paths(count: int) -> list[str]:
    real = ["", "?family=cuda", "?platform=linux-x86_64", "?python=3.12", "?status=declared",
            "?family=cuda&platform=linux-aarch64&python=3.11"]
    out = []
    for n in range(count):
        kind = n % 4
        if kind == 0:
            out.append(f"/matrix?torch=junk{n}&build=cpu")
        elif kind == 1:
            out.append(f"/matrix?torch=2.13.0&build=junk{n}")
        elif kind == 2:
            out.append(f"/matrix?python=3.{100 + n}&family=fam{n}")
        else:
            out.append("/matrix" + real[n % len(real)])
    return out


class WellBehaved:
    """A client polling GET /healthz every 0.1 s on a fresh connection; counts what was not a 200."""

    def __init__(self, base: str) -> None:
        self.base, self.stop, self.answers = base, threading.Event(), {"ok": 0, "refused": 0}
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.stop.is_set():
            try:
                ok = httpx.get(self.base + "/healthz", timeout=10).status_code == 200
            except httpx.HTTPError:
                ok = False
            self.answers["ok" if ok else "refused"] += 1
            self.stop.wait(0.1)

    def __enter__(self) -> WellBehaved:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _address(base: str) -> tuple[str, int]:
    host, port = base.removeprefix("http://").split(":")
    return host, int(port)


def _post_raw(base: str, token: str, body: bytes, content_type: str) -> int:
    with socket.create_connection(_address(base), timeout=60) as sock:
        head = (f"POST /v1/reports/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        try:
            sock.sendall(head + body)
        except OSError:
            pass  # answered (413) and closed before the whole body went
        answer = sock.recv(65536)
    return int(answer.split()[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def attack_batches(base: str, token: str, count: int, limit: int) -> dict[str, int]:
    array = b"[" + b"{}," * ((limit - 2) // 3 - 1) + b"{}]"
    ndjson = b"x\n" * (limit // 2)
    seen: dict[str, int] = {}
    for body, kind in ((array, "application/json"), (ndjson, "application/x-ndjson")):
        for _ in range(count):
            key = f"{kind.split('/')[1]}:{_post_raw(base, token, body, kind)}"
            seen[key] = seen.get(key, 0) + 1
    return seen


def attack_pipelining(base: str, conns: int, megabytes: int) -> dict[str, int]:
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    payload = request * (megabytes * 1_000_000 // len(request))

    def one(_: int) -> int:
        sent = 0
        with socket.create_connection(_address(base), timeout=3) as sock:
            try:
                while sent < len(payload):
                    sent += sock.send(payload[sent:sent + 1_000_000])
            except OSError:
                pass
        return sent

    with ThreadPoolExecutor(min(conns, 20)) as pool:
        sent = list(pool.map(one, range(conns)))
    return {"connections": conns, "bytes_offered": conns * len(payload), "bytes_taken": sum(sent)}


def attack_slow_bodies(base: str, token: str, count: int) -> dict[str, int]:
    socks = []
    for n in range(count):
        auth = f"Authorization: Bearer {token}\r\n" if n % 10 == 0 else ""
        try:
            sock = socket.create_connection(_address(base), timeout=10)
            sock.sendall(f"POST /v1/reports HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n"
                         "Content-Length: 1000000000\r\n\r\n{".encode())
            socks.append(sock)
        except OSError:
            pass
    time.sleep(8)  # past the minimum rate's grace: the token-holding ones are cut too
    closed = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            data = sock.recv(65536)
            while data:
                data = sock.recv(65536)
            closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        sock.close()
    return {"opened": len(socks), "closed_by_the_server_within_8s": closed}


def ci_paths(count: int) -> list[str]:
    combos = [(py, os_, arch, mode, fmt) for py in ("3.9", "3.10", "3.11", "3.12", "3.13")
              for os_ in ("linux", "windows", "macos") for arch in ("x86_64", "aarch64")
              for mode in ("full", "pr") for fmt in ("pip", "uv", "conda", "requirements", "docker", "dockerfile")]
    return [f"/v1/ci-matrix?python={py}&os={os_}&arch={arch}&mode={mode}&format={fmt}"
            for py, os_, arch, mode, fmt in combos[:count]]


def stack_paths(count: int) -> list[str]:
    packages = ("xformers", "vllm")
    return [f"/v1/resolve?backend=cuda&with={packages[n % 2]}%3E%3D0.{n % 20}.{n}" for n in range(count)]


def attacks(server: object, base: str, token: str, pid: int, args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {}
    phases = [
        ("batch_bodies", lambda: attack_batches(base, token, args.batch_bodies, 16_000_000)),
        ("pipelining", lambda: attack_pipelining(base, args.pipeline_conns, args.pipeline_mb)),
        ("slow_bodies", lambda: attack_slow_bodies(base, token, args.slow_bodies)),
        ("ci_matrix_sets", lambda: _statuses(base, ci_paths(args.ci_sets))),
        ("stacks", lambda: _statuses(base, stack_paths(args.stacks))),
    ]
    for name, attack in phases:
        before = rss_mb(pid)
        started = time.monotonic()
        with WellBehaved(base) as polite:
            detail = attack()
        after = rss_mb(pid)
        out[name] = {"rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
                     "growth_mb": round(after - before, 1), "within_goal": after - before <= GOAL_MB,
                     "seconds": round(time.monotonic() - started, 1), "well_behaved_client": polite.answers,
                     "detail": detail}
    return out


def _statuses(base: str, paths: list[str]) -> dict[int, int]:
    seen: dict[int, int] = {}
    _run(base, paths, seen)
    return dict(sorted(seen.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolve", type=int, default=20_000)
    parser.add_argument("--matrix", type=int, default=20_000)
    parser.add_argument("--observed", type=int, default=10_000)
    parser.add_argument("--batch-bodies", type=int, default=3, help="of each form (JSON array, NDJSON)")
    parser.add_argument("--pipeline-conns", type=int, default=20)
    parser.add_argument("--pipeline-mb", type=int, default=8)
    parser.add_argument("--slow-bodies", type=int, default=10_000)
    parser.add_argument("--ci-sets", type=int, default=200)
    parser.add_argument("--stacks", type=int, default=1000)
    parser.add_argument("--only-attacks", action="store_true", help="skip the observed/resolve/matrix phases")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'soak.sqlite3'}"
        env = {"ACCELENV_ACCESS_LOG": "false", "ACCELENV_MATRIX_REFRESH_S": "0"}
        with live_server(url, workers=1, load_matrix=True, env=env) as server:
            pid = _worker_pid(server.process.pid)  # type: ignore[union-attr]
            statuses: dict[int, int] = {}
            _run(server.base_url, resolve_paths(200) + matrix_paths(200), statuses)  # warm-up
            figures: dict[str, object] = {"worker_pid": pid, "rss_mb": {"after_warm_up": round(rss_mb(pid), 1)}}
            rss = figures["rss_mb"]
            started = time.monotonic()
            if args.only_attacks:
                figures["attacks"] = attacks(server, server.base_url, server.token, pid, args)
                figures["goal_mb"] = GOAL_MB
                print(json.dumps(figures, indent=2))
                return
            with httpx.Client(base_url=server.base_url, timeout=120, headers=server.auth) as client:
                for start in range(0, args.observed, 100):
                    batch = [synthetic_report(host=str(n), torch=f"7.{n}.0+junk", build=f"junk{n % 97}")
                             for n in range(start, min(start + 100, args.observed))]
                    res = client.post("/v1/reports/batch", json=batch)
                    res.raise_for_status()
                client.get("/matrix").raise_for_status()
            rss["after_observed"] = round(rss_mb(pid), 1)  # type: ignore[index]
            _run(server.base_url, resolve_paths(args.resolve), statuses)
            rss["after_resolve"] = round(rss_mb(pid), 1)  # type: ignore[index]
            _run(server.base_url, matrix_paths(args.matrix), statuses)
            rss["after_matrix"] = round(rss_mb(pid), 1)  # type: ignore[index]
            figures["attacks"] = attacks(server, server.base_url, server.token, pid, args)
            growth = rss["after_matrix"] - rss["after_warm_up"]  # type: ignore[index]
            figures.update({
                "requests": {"observed_cells": args.observed, "resolve": args.resolve, "matrix": args.matrix},
                "statuses": dict(sorted(statuses.items())),
                "seconds": round(time.monotonic() - started, 1),
                "growth_mb": round(growth, 1),
                "goal_mb": GOAL_MB,
                "within_goal": growth <= GOAL_MB,
            })
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
