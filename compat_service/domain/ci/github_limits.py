"""GitHub Actions' limits on a job matrix, and splitting a CI matrix into shards that each fit them.

Two limits bind a matrix that one job computes and the next job expands (``fromJSON(needs.x.outputs.matrix)``):

- a matrix generates at most **256 jobs** per workflow run (docs.github.com/en/actions/reference/limits,
  "Job Matrix: 256 jobs / workflow run");
- a job's outputs are at most **1 MB**, the size "approximated based on UTF-16 encoding" (GitHub's docs,
  "Passing information between jobs", clarified in github/docs#36846). The output is the ``{"include": [...]}``
  JSON that `include_json` writes (compact, as the Action writes it), measured by `output_size` as UTF-16
  bytes; 1 MB is taken as 1,000,000 bytes, the stricter reading.

`fit_github_limits(cells, max_cells, shard)` keeps the cells of shard ``I/N`` (N contiguous, balanced parts of
the matrix's order; a shard past the last cell is empty, so a workflow's fixed shard count survives a smaller
matrix) and refuses, naming both limits and the ways out, an answer that is still over either
one. Its ``limits`` object says how many shards the whole matrix needs (`shards_needed`).
"""

from __future__ import annotations

import json

from compat_service.domain.errors import Cause, MatrixTooLargeError
from compat_service.domain.json_types import JsonObject

#: GitHub Actions: jobs one matrix may generate per workflow run
GITHUB_MAX_JOBS = 256
#: GitHub Actions: bytes of one job's outputs (UTF-16), "1 MB" read strictly
GITHUB_MAX_OUTPUT_BYTES = 1_000_000
_WRAPPER = '{"include":[]}'


def include_json(cells: list[JsonObject]) -> str:
    """The job output the Action writes: ``{"include": cells}``, compact."""
    return json.dumps({"include": cells}, separators=(",", ":"), ensure_ascii=False)


def output_size(text: str) -> int:
    """The size GitHub counts for an output value: its UTF-16 bytes."""
    return len(text.encode("utf-16-le"))


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"I/N"`` (1 <= I <= N) -> (I, N); None for no shard. Raises InvalidRequestError naming ``shard``."""
    if text is None or not text.strip():
        return None
    index, slash, count = text.strip().partition("/")
    if slash and index.strip().isdigit() and count.strip().isdigit():
        i, n = int(index), int(count)
        if 1 <= i <= n <= GITHUB_MAX_JOBS:
            return i, n
    from compat_service.domain.resolver.request import invalid_request

    raise invalid_request(
        f"shard {text!r} is not I/N with 1 <= I <= N <= {GITHUB_MAX_JOBS}",
        "write the shard as I/N, e.g. shard=1/3 for the first of three parts",
        "shard",
        text,
    )


def parse_max_cells(text: str | int | None) -> int:
    """The most cells one matrix (one shard) may hold: 1..256, default 256 (GitHub's limit)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return GITHUB_MAX_JOBS
    value = str(text).strip()
    if value.isdigit() and 1 <= int(value) <= GITHUB_MAX_JOBS:
        return int(value)
    from compat_service.domain.resolver.request import invalid_request

    raise invalid_request(
        f"max_cells {value!r} is not a whole number from 1 to {GITHUB_MAX_JOBS} (GitHub's jobs per matrix)",
        f"give max_cells between 1 and {GITHUB_MAX_JOBS}, or leave it out for {GITHUB_MAX_JOBS}",
        "max_cells",
        value,
    )


def _bounds(total: int, count: int) -> list[tuple[int, int]]:
    """N contiguous parts of ``total`` items whose sizes differ by at most one."""
    size, extra = divmod(total, count)
    out, start = [], 0
    for part in range(count):
        end = start + size + (1 if part < extra else 0)
        out.append((start, end))
        start = end
    return out


def _part_bytes(sizes: list[int], start: int, end: int) -> int:
    # {"include":[a,b]}: the wrapper, the cells, a comma between two cells (UTF-16: two bytes a character)
    return output_size(_WRAPPER) + sum(sizes[start:end]) + 2 * max(end - start - 1, 0)


def shards_needed(sizes: list[int], max_cells: int) -> int:
    """The fewest balanced shards whose every part holds at most ``max_cells`` cells and fits the output limit."""
    total = len(sizes)
    count = max(1, -(-total // max_cells))
    while count < max(total, 1):
        if all(_part_bytes(sizes, a, b) <= GITHUB_MAX_OUTPUT_BYTES for a, b in _bounds(total, count)):
            return count
        count += 1
    return count


def fit_github_limits(
    cells: list[JsonObject], max_cells: int, shard: tuple[int, int] | None
) -> tuple[list[JsonObject], JsonObject]:
    """The cells of ``shard`` (all of them without one) and the ``limits`` object the answer carries;
    raises MatrixTooLargeError when what would be answered is over either limit."""
    sizes = [output_size(json.dumps(c, separators=(",", ":"), ensure_ascii=False)) for c in cells]
    needed = shards_needed(sizes, max_cells)
    index, count = shard or (1, 1)
    start, end = _bounds(len(cells), count)[index - 1]
    part = cells[start:end]
    part_bytes = _part_bytes(sizes, start, end)
    limits = {
        "max_cells": max_cells,
        "max_output_bytes": GITHUB_MAX_OUTPUT_BYTES,
        "output_bytes": part_bytes,
        "shard": f"{index}/{count}",
        "shards_needed": needed,
    }
    if len(part) > max_cells or part_bytes > GITHUB_MAX_OUTPUT_BYTES:
        what = "the matrix" if shard is None else f"shard {index}/{count}"
        raise MatrixTooLargeError(
            f"{what} holds {len(part)} cells and its include JSON is {part_bytes:,} bytes (UTF-16, as GitHub "
            f"counts a job output): over max_cells {max_cells} (GitHub Actions runs at most {GITHUB_MAX_JOBS} "
            f"jobs per matrix) or GitHub's {GITHUB_MAX_OUTPUT_BYTES:,}-byte job-output limit",
            hint=(
                f"split it into {needed} shards: shard=1/{needed} ... shard={needed}/{needed} (CLI --shard, the "
                "Action's shard input), one matrix job each; or narrow the request (a torch range, family, "
                "python list, or mode=pr)"
            ),
            causes=[
                Cause(constraint=f"{len(part)} cells <= max_cells {max_cells}", origin="request: max_cells"),
                Cause(constraint=f"{part_bytes:,} bytes <= {GITHUB_MAX_OUTPUT_BYTES:,}",
                      origin="GitHub Actions: 1 MB per job's outputs"),
            ],
        )
    return part, limits
