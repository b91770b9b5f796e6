"""`GET /v1/ci-matrix`: the CI test matrix (GitHub Actions' ``{"include": [...]}``), as `accelenv ci matrix` prints it.

A thin route over `compat_service.domain.ci.job_matrix`: the parameters are parsed by the domain's
`CiMatrixRequest.from_strings`, the answer is `ci_matrix()` over the loaded matrix and the stored evidence.
Answers are kept per worker by (matrix content hash, evidence stamp, request), so a repeated pipeline asks
the resolver nothing; the body carries an ETag like every GET (middleware/http_cache.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

import orjson
from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from compat_service.api.deps import current_matrix, state_of
from compat_service.api.inputs.strict_query import in_api_words
from compat_service.api.service_reads import evidence_for_resolve
from compat_service.domain.ci.job_matrix import CiMatrixRequest, ci_matrix
from compat_service.domain.errors import AccelenvError, ErrorBody

router = APIRouter(tags=["ci"])

_EXAMPLE = {
    "include": [
        {
            "name": "torch 2.3.1 cu121 py3.11 linux-x86_64",
            "torch": "2.3.1",
            "build": "cu121",
            "family": "cuda",
            "runtime": "12.1",
            "python": "3.11",
            "os": "linux",
            "arch": "x86_64",
            "platform": "linux-x86_64",
            "pins": {"torch": "2.3.1", "torchvision": "0.18.1", "torchaudio": "2.3.1"},
            "index_url": "https://example.invalid/whl/cu121",
            "index_option": "--index-url",
            "install": "pip install torch==2.3.1 torchvision==0.18.1 torchaudio==2.3.1 --index-url ...\n",
            "install_argv": [["pip", "install", "torch==2.3.1", "torchvision==0.18.1", "torchaudio==2.3.1",
                              "--index-url", "https://example.invalid/whl/cu121"]],
            "requirements": [{"name": "nvidia-driver", "version": "525.60.13", "detail": "CUDA 12.1.0"}],
            "driver_floor": "525.60.13",
            "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
            "ptx": "sm_90",
            "evidence": "declared",
            "status": "known",
            "role": "oldest",
            "runs_on": None,
            "container": None,
            "check": "accelenv verify-env --expect torch==2.3.1+cu121 --expect torchvision==0.18.1 "
            "--expect torchaudio==2.3.1 --python 3.11",
        }
    ],
    "excluded": [
        {
            "torch": "2.3.1", "os": "linux", "arch": "x86_64", "python": "3.13", "code": "python-unsupported",
            "reason": "no cp313 wheel for torch 2.3.1 on linux-x86_64",
        }
    ],
    "unknown": [
        {
            "torch": "2.15.0", "os": "linux", "arch": "x86_64", "family": "cuda", "code": "variant-unknown",
            "status": "unknown", "reason": "the matrix does not know whether torch 2.15.0 publishes a cuda build "
            "for linux-x86_64: no source lists its builds there",
        }
    ],
    "request": {"torch": ">=2.3", "python": ["3.8", "3.12"], "family": ["cuda"], "build": None,
                "platforms": ["linux-x86_64"], "with": ["torchvision", "torchaudio"], "mode": "full",
                "format": "pip", "max_cells": 256, "shard": None},
    "total": 1,
    "cells_total": 1,
    "limits": {"max_cells": 256, "max_output_bytes": 1000000, "output_bytes": 2410, "shard": "1/1",
               "shards_needed": 1},
}


@router.get(
    "/v1/ci-matrix",
    summary="A CI test matrix: every (torch, build, Python, OS/arch) that exists, with install and check commands",
    description=(
        "Answers GitHub Actions' `strategy.matrix` shape: `include` holds one object per combination the "
        "resolver accepts (pins, index, the install text in `format`, driver floor, GPU arch list, evidence "
        "status, `role` oldest/newest/interior and the `check` command a job runs after installing), and "
        "`excluded` each combination that does not exist with its `code` and `reason`. Feed `include` to "
        "`strategy.matrix` with `fromJSON(...)`. `unknown` lists the combinations the matrix cannot say exist (a "
        "release whose builds no source lists yet), apart from `excluded`. The answer fits GitHub's limits (256 "
        "jobs per matrix, 1 MB per job output) or is a 422 naming them: `shard=I/N` answers one of N parts, "
        "`limits.shards_needed` says how many. `mode=pr` keeps the extremes (oldest and newest torch, each "
        "with its oldest and newest Python) plus one cell per family."
    ),
    responses={
        200: {"description": "the matrix", "content": {"application/json": {"example": _EXAMPLE}}},
        404: {"model": ErrorBody, "description": "the torch range selects no release (torch-not-found)"},
        422: {"model": ErrorBody, "description": "a parameter is malformed or unknown (invalid-request), or the "
              "answer would be over GitHub Actions' limits (matrix-too-large: use shard=I/N)"},
    },
)
async def get_ci_matrix(
    request: Request,
    torch: Annotated[str | None, Query(max_length=64, description="latest (default), 2.3, 2.3.1 or a PEP 440 "
                                       "range such as '>=2.3' or '>=2.2,<2.6'")] = None,
    python: Annotated[str | None, Query(max_length=128, description="supported (default: every Python a "
                                        "selected release has wheels for) or a list: 3.10,3.12")] = None,
    family: Annotated[str | None, Query(max_length=64, description="wheel families: cpu,cuda,rocm,xpu "
                                        "(default: all)")] = None,
    build: Annotated[str | None, Query(max_length=256, description="build labels instead of families: "
                                       "cu121,cu124")] = None,
    os: Annotated[str | None, Query(max_length=64, description="linux (default), windows, macos; a list")] = None,
    arch: Annotated[str | None, Query(max_length=64, description="x86_64 (default), aarch64, arm64; a list")] = None,
    with_: Annotated[str | None, Query(alias="with", max_length=64, description="companions: torchvision,"
                                       "torchaudio (default), a subset, or none")] = None,
    mode: Annotated[Literal["full", "pr"] | None, Query(description="full (default) or pr")] = None,
    format: Annotated[Literal["pip", "requirements", "uv", "conda", "docker", "dockerfile"] | None,
                      Query(description="the cells' install text (default pip)")] = None,
    max_cells: Annotated[str | None, Query(max_length=8, description="the most cells the answer may hold, 1 to "
                                           "256 (default 256: GitHub Actions' jobs per matrix); over it, or "
                                           "over the 1 MB job-output limit, is a 422 matrix-too-large")] = None,
    shard: Annotated[str | None, Query(max_length=16, description="I/N: the I-th of N balanced parts of the "
                                       "matrix (limits.shards_needed says how many it needs)")] = None,
) -> Response:
    try:
        parsed = CiMatrixRequest.from_strings(
            torch=torch, python=python, family=family, build=build, os=os, arch=arch, with_=with_, mode=mode,
            format=format, max_cells=max_cells, shard=shard,
        )
    except AccelenvError as err:
        raise in_api_words(err) from None
    app = request.app
    snapshot = await current_matrix(app)
    evidence, stamp = evidence_for_resolve(app, None)
    cache = state_of(app).ci_matrix_cache
    key = (snapshot.content_hash, stamp, parsed)
    body = cache.get(key)
    if body is None:
        # a full matrix is hundreds of resolutions: off the event loop
        try:
            body = await run_in_threadpool(lambda: orjson.dumps(ci_matrix(parsed, snapshot.matrix, evidence)))
        except AccelenvError as err:  # over GitHub's limits (matrix-too-large), a shard past the cells
            raise in_api_words(err) from None
        cache.put(key, body)
    return Response(content=body, media_type="application/json")
