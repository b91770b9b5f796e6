"""Host classes and their locks: which answer each described host gets, one lock per distinct answer, and which
lock a host takes (`accelenv lock --for`, `accelenv install --locks`).

A host class is a description with `resolve`'s inputs (``torch``, ``python``, ``os``, ``arch``, ``backend``,
``driver``, ``gpu_arch``, ``gpu``, ``runtime``, ``with``), or a cell of ``GET /v1/ci-matrix`` (its ``build``
and ``platform`` read as ``backend`` and ``os``/``arch``). Two hosts share a lock when accelenv's resolver
gives them the same answer: torch release, build label, platform, Python and the stack's pins. The lock
directory's index (``locks.json``) maps every answer to its lock file and the host classes that led there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from compat_service.domain.errors import Cause, InvalidRequestError, NoLockForHostError
from compat_service.domain.json_types import JsonMapping, JsonObject
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import Resolution

if TYPE_CHECKING:
    from pathlib import Path

    from compat_service.domain.matrix.interface import Matrix

INDEX_FILE = "locks.json"
INDEX_SCHEMA = "accelenv-locks/v1"
_REQUEST_KEYS = ("torch", "python", "os", "arch", "backend", "driver", "gpu_arch", "gpu", "runtime", "with")


def request_for(description: JsonMapping) -> ResolveRequest:
    """The resolve request of one host class (a description or a CI-matrix cell)."""
    values = _request_fields(dict(description))
    _known_keys(values)
    kwargs: JsonObject = {("with_" if k == "with" else k): (str(v) if v is not None else None)
                              for k, v in values.items() if k in _REQUEST_KEYS}
    return ResolveRequest.from_strings(**kwargs)


def _request_fields(values: JsonObject) -> JsonObject:
    """A description's fields as resolve's: a CI-matrix cell's request, ``build`` as the backend, ``platform``
    as os and arch."""
    if "build" in values and "pins" in values:  # a GET /v1/ci-matrix cell: its answer's fields beside
        values = _cell_request(values)
    if "build" in values and "backend" not in values:
        values["backend"] = values.pop("build")
    platform = values.pop("platform", None)
    if platform and "os" not in values:
        values["os"], _, values["arch"] = str(platform).partition("-")
    return values


def _known_keys(values: JsonObject) -> None:
    unknown = sorted(set(values) - set(_REQUEST_KEYS) - {"name"})
    if unknown:
        raise InvalidRequestError(f"a host class has keys accelenv does not read: {', '.join(unknown)}",
                                  hint=f"use resolve's inputs: {', '.join(_REQUEST_KEYS)}")


def _cell_request(cell: JsonObject) -> JsonObject:
    """A CI-matrix cell's request fields (its runtime dropped for a CUDA build: that is the build's CUDA version,
    not a vendor runtime)."""
    values = {k: v for k, v in cell.items() if k in (*_REQUEST_KEYS, "build", "platform")}
    if values.get("runtime") and str(values.get("build", "")).startswith("cu"):
        del values["runtime"]
    return values


def answer_of(resolution: Resolution) -> dict[str, str]:
    """What makes two hosts share a lock."""
    answer = {"torch": resolution.torch_version, "build": resolution.backend, "platform": resolution.platform,
              "python": resolution.python}
    if resolution.stack:
        answer["stack"] = ",".join(f"{p.name}=={p.version}" for p in resolution.stack)
    return answer


def lock_file_name(answer: Mapping[str, str]) -> str:
    """``pylock.<name>.toml`` (PEP 751: the name has no dots)."""
    parts = [f"torch{answer['torch']}", answer["build"], answer["platform"], f"py{answer['python']}"]
    if answer.get("stack"):
        parts.append(re.sub(r"[^A-Za-z0-9]+", "-", answer["stack"]))
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", "-".join(parts))
    return f"pylock.{name}.toml"


def lock_index(entries: Sequence[tuple[Mapping[str, str], str, Sequence[JsonMapping]]]) -> JsonObject:
    """The directory's ``locks.json``: (answer, lock file, host classes) per lock."""
    return {
        "schema": INDEX_SCHEMA,
        "locks": [{"lock": lock, "answer": dict(answer), "host_classes": [dict(h) for h in hosts]}
                  for answer, lock, hosts in entries],
    }


def pick_lock(index: JsonMapping, resolution: Resolution) -> tuple[JsonObject, str]:
    """The index entry whose answer is this host's, and the sentence saying why."""
    if index.get("schema") != INDEX_SCHEMA:
        raise InvalidRequestError(f"{INDEX_FILE} is not an accelenv lock index (schema {index.get('schema')!r})",
                                  hint="write the directory with `accelenv lock --for FILE --out DIR`")
    answer = answer_of(resolution)
    for entry in index.get("locks", []):
        if entry.get("answer") == answer:
            why = (f"this host resolves to torch {answer['torch']} ({answer['build']}) on {answer['platform']}, "
                   f"Python {answer['python']}"
                   + (f" with {answer['stack']}" if answer.get("stack") else "")
                   + f": the answer of {len(entry.get('host_classes', []))} host class(es) locked in {entry['lock']}")
            return entry, why
    raise NoLockForHostError(
        f"no lock in the directory is for this host: it resolves to torch {answer['torch']} ({answer['build']}) "
        f"on {answer['platform']}, Python {answer['python']}",
        causes=[Cause(constraint=f"{e['lock']}: {e['answer']}", origin=INDEX_FILE) for e in index.get("locks", [])],
        hint="add this host to the --for file and run `accelenv lock --for` again",
    )


def resolve_request(
    request: ResolveRequest, data_dir: Path | None = None, matrix: Matrix | None = None
) -> Resolution:
    """accelenv's answer for one host class (the stack resolver when it names ecosystem packages), against
    ``matrix`` (the service's) or the matrix in ``data_dir`` (default: the bundled one)."""
    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
    from compat_service.domain.resolver.stages import resolve

    matrix = matrix if matrix is not None else load_matrix_cached(data_dir)
    if request.stack:
        from compat_service.domain.stacks.catalog import load_catalog
        from compat_service.domain.stacks.resolve import resolve_stack

        return resolve_stack(request, matrix, None, load_catalog(data_dir))
    return resolve(request, matrix)


def group_by_answer(
    descriptions: Sequence[JsonMapping], data_dir: Path | None = None
) -> list[tuple[dict[str, str], Resolution, list[JsonObject]]]:
    """One (answer, resolution, host classes) per distinct answer, in the order the descriptions first reach it."""
    groups: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], Resolution, list[JsonObject]]] = {}
    for description in descriptions:
        resolution = resolve_request(request_for(description), data_dir)
        answer = answer_of(resolution)
        key = tuple(sorted(answer.items()))
        groups.setdefault(key, (answer, resolution, []))[2].append(dict(description))
    return list(groups.values())
