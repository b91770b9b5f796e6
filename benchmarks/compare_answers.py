"""Answers byte for byte before and after a change: a digest of every answer on each path, over the same
deterministic requests, written to a JSON file; ``--against`` compares with a file written by the other tree.

Paths (``--count`` requests each, default 10 000): ``cli`` (`accelenv resolve --format json`, in process),
``api-cold`` (GET /v1/resolve, the per-worker cache and the resolver's memos off), ``api-cached`` (the same
requests with the cache on, each answer the second of two), ``formats`` (format= rotating over the text
formats), ``stacks`` (``with=`` ecosystem packages), ``errors`` (requests that fail, most with causes and
nearest alternatives). An answer is its status, content type and body, ``request_id`` blanked (it differs
per request by design). The requests mix releases, Pythons, backends, drivers and GPU architectures, so
they include invalid, unsatisfiable and resolvable ones on every path.

Reproduce (the tree before the change in a second worktree, say /tmp/before):

    (cd /tmp/before && PYTHONPATH=. $REPO/.venv/bin/python $REPO/benchmarks/compare_answers.py --out /tmp/before.json)
    .venv/bin/python benchmarks/compare_answers.py --out /tmp/after.json --against /tmp/before.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import itertools
import json
import os
import random
import re
import sys
import tempfile
from collections.abc import Iterator
from urllib.parse import urlencode

_REQUEST_ID = re.compile(rb'"request_id":"[0-9a-f]+"')
FORMATS = ["pip", "requirements", "uv", "conda", "docker", "text", "json"]
STACK_PACKAGES = ["vllm", "xformers", "bitsandbytes", "torchao", "flash-attn", "vllm-ascend"]


def _queries(seed: int, count: int, *, stacks: bool = False) -> list[dict[str, str]]:
    from compat_service.domain.matrix.interface import InMemoryMatrix
    from compat_service.domain.matrix.loading.loader import load_matrix_rows

    matrix = InMemoryMatrix(load_matrix_rows())
    torches = [p.version for m in matrix.torch_minors() for p in matrix.torch_patches(m)]
    torches += [m.minor for m in matrix.torch_minors()] + ["latest", "9.9", ""]
    pythons = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", ""]
    backends = ["cpu", "cuda", "cu118", "cu121", "cu126", "cu128", "rocm", "rocm6.0", "xpu", "mps", ""]
    targets = [
        {}, {"driver": "450.80.02"}, {"driver": "570.86.10", "gpu_arch": "sm_120"}, {"os": "windows"},
        {"os": "macos", "arch": "arm64"}, {"gpu_arch": "sm_80"}, {"with": "torchvision,torchaudio"},
    ]
    if stacks:
        targets = [{"with": p} for p in STACK_PACKAGES] + [{"with": f"{p},torchvision"} for p in STACK_PACKAGES]
    product = list(itertools.product(torches, pythons, backends, range(len(targets))))
    random.Random(seed).shuffle(product)
    out = []
    for torch, python, backend, t in itertools.islice(itertools.cycle(product), count):
        query = {"torch": torch, "python": python, "backend": backend, **targets[t]}
        out.append({k: v for k, v in query.items() if v})
    return out


def _failing(count: int) -> list[dict[str, str]]:
    """``count`` requests the resolver refuses as unsatisfiable (most with nearest alternatives)."""
    from compat_service.domain.errors import UnsatisfiableError
    from compat_service.domain.matrix.interface import InMemoryMatrix
    from compat_service.domain.matrix.loading.loader import load_matrix_rows
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.resolver.stages import resolve

    matrix = InMemoryMatrix(load_matrix_rows())
    out: list[dict[str, str]] = []
    for query in _queries(29, count * 8):
        try:
            resolve(ResolveRequest.from_query(dict(query)), matrix)
        except UnsatisfiableError:
            out.append(query)
        except Exception:  # invalid: not this path's
            continue
        if len(out) == count:
            break
    return out


#: where ``--dump`` writes every answer (to find what differs)
_DUMP: list[io.BufferedWriter] = []


def _digest(answers: Iterator[bytes]) -> tuple[str, int, dict[int, int]]:
    sha = hashlib.sha256()
    n = 0
    statuses: dict[int, int] = {}
    for answer in answers:
        status = int(answer[:3])
        statuses[status] = statuses.get(status, 0) + 1
        sha.update(len(answer).to_bytes(8, "big") + answer)
        for dump in _DUMP:
            dump.write(answer + b"\n\x1e\n")
        n += 1
    return sha.hexdigest(), n, dict(sorted(statuses.items()))


def _api_answers(client, queries: list[dict[str, str]], repeat: int = 1) -> Iterator[bytes]:
    for query in queries:
        for _ in range(repeat):
            res = client.get("/v1/resolve?" + urlencode(query))
        body = _REQUEST_ID.sub(b'"request_id":""', res.content)
        yield b"%d %s\n" % (res.status_code, res.headers["content-type"].encode()) + body


def _cli_answers(queries: list[dict[str, str]]) -> Iterator[bytes]:
    from cli.resolve_cmd import main

    for query in queries:
        argv = [f"--{k.replace('_', '-')}={v}" for k, v in query.items()] + ["--format", "json"]
        out = io.StringIO()
        err = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse refusing a flag
                code = int(exc.code or 0)
        yield b"%03d\n" % code + out.getvalue().encode() + b"\n" + err.getvalue().encode()


def _app(database: str, cache: int, memo: int):
    from fastapi.testclient import TestClient

    from compat_service.api.app import create_app
    from compat_service.config import Settings

    settings = Settings(
        database_url=f"sqlite:///{database}", auto_migrate=True, resolve_cache_size=cache,
        resolver_memo_size=memo, access_log=False,
    )
    return TestClient(create_app(settings), raise_server_exceptions=False)


def measure(count: int, only: set[str] | None = None) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}

    def record(name: str, answers: Iterator[bytes]) -> None:
        if only and name not in only:
            return
        digest, n, statuses = _digest(answers)
        results[name] = {"sha256": digest, "requests": n, "statuses": statuses}
        print(f"{name}: {n} requests {statuses}", file=sys.stderr)

    plain = _queries(28, count)
    errors = _failing(count)
    with tempfile.TemporaryDirectory() as tmp:
        record("cli", _cli_answers(plain))
        with _app(os.path.join(tmp, "cold.sqlite3"), 0, 0) as cold:
            record("api-cold", _api_answers(cold, plain))
            record("formats", _api_answers(cold, [q | {"format": FORMATS[i % len(FORMATS)]}
                                                  for i, q in enumerate(plain)]))
            record("stacks", _api_answers(cold, _queries(30, count, stacks=True)))
            record("errors", _api_answers(cold, errors))
        with _app(os.path.join(tmp, "cached.sqlite3"), 1 << 16, 4096) as cached:
            record("api-cached", _api_answers(cached, plain, repeat=2))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--against", help="a file written by the other tree: exit 1 unless every digest matches")
    parser.add_argument("--paths", help="only these paths (comma-separated names)")
    parser.add_argument("--dump", help="also write every answer to this file")
    args = parser.parse_args()
    if args.dump:
        _DUMP.append(open(args.dump, "wb"))
    results = measure(args.count, set(args.paths.split(",")) if args.paths else None)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=2)
    if args.against:
        with open(args.against) as fh:
            before = json.load(fh)
        differ = [name for name, r in results.items() if r["sha256"] != before.get(name, {}).get("sha256")]
        print(json.dumps({"identical": not differ, "differ": differ,
                          "requests": {name: r["requests"] for name, r in results.items()}}))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
