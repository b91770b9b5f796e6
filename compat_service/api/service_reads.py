"""What the service answers, as plain Python: the one read interface the API routes and the pages share.

Each function here is what a ``GET /v1/...`` route answers, over the same domain and db functions, without
HTTP: the routes add only parameter parsing (FastAPI's, for OpenAPI) and their headers; the pages
(``compat_service/api/pages``) call these functions directly, so a page never goes through HTTP or a route
function and still says exactly what the API says, under the API's access rules (the token checks of ``deps``:
``token_holds_scope``, ``token_with_scope``). Errors are the domain's AccelenvErrors, as the routes raise them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson
from packaging.specifiers import SpecifierSet
from pydantic import BaseModel
from sqlmodel import Session

from compat_service.api.deps import current_matrix, state_of
from compat_service.api.inputs.resolve_query import read_query
from compat_service.db.evidence.lookup import DatabaseEvidence
from compat_service.db.evidence.matrix_cells import MatrixRows, MatrixRowsBuilder
from compat_service.db.evidence.queries import cell_evidence as stored_cell_evidence
from compat_service.db.evidence.queries import declared_for, get_report_json
from compat_service.db.matrix.releases import TorchReleasePublic, get_release
from compat_service.db.matrix.snapshot_follower import MatrixSnapshot
from compat_service.domain.backends import normalise_arch
from compat_service.domain.errors import (
    AccelenvError,
    Cause,
    DatabaseNotReadyError,
    InvalidRequestError,
    NotFoundError,
)
from compat_service.domain.evidence.cells import CellEvidence, CellKey, CheckCounts, python_minor
from compat_service.domain.matrix.interface import Matrix
from compat_service.domain.matrix.model import rows as matrix_rows
from compat_service.domain.matrix.model.schema import ArchList, Source, TorchMinor
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import Resolution, resolution_to_json
from compat_service.domain.resolver.stages import name_the_gpu
from compat_service.domain.resolver.stages import resolve as resolve_request

# --- GET /v1/resolve (its query string is read by api/inputs/resolve_query.py) ------------------------------

#: longest query string whose parse is memoized (every parameter at its limit fits well within it)
MAX_MEMO_QUERY = 1024

def parse_request(raw: bytes) -> ResolveRequest:
    """The query string as the domain's ResolveRequest (the one parser the CLI uses too)."""
    return read_query(raw)[0]


async def resolution_body(app: Any, raw: bytes) -> bytes:
    """The JSON body answering the query string ``raw``; raises the AccelenvError that refuses it."""
    return (await resolution_answer(app, raw))[0]


async def resolution_answer(
    app: Any, raw: bytes, pairs: Sequence[tuple[str, str]] | None = None
) -> tuple[bytes, str]:
    """The body and its media type answering the query string ``raw`` (``pairs``: its pairs, where the
    framework has read them already); raises the AccelenvError that refuses it (in the API's words)."""
    state = state_of(app)
    cache = state.resolve_cache
    # Only plausible query strings are memoized: a flood of huge ones must not fill memory.
    if cache.enabled and len(raw) <= MAX_MEMO_QUERY:
        parsed, fmt = cache.requests.get_or_compute(raw, lambda: read_query(raw, pairs))
    else:
        parsed, fmt = read_query(raw, pairs)
    repository = state.matrix_repository
    # current_matrix's steady state inline (a clock check); a refresh reads the database off the loop
    snapshot = repository.current() if repository.is_fresh() else await current_matrix(app)
    matrix = snapshot.matrix
    # gpu= names a GPU: its architecture (matrix data) selects the evidence too
    gpu_arch = name_the_gpu(parsed, matrix)[0].gpu_arch if parsed.gpu else parsed.gpu_arch
    # Evidence from the stored probe reports (routes/evidence.py); its stamp keeps the cache current.
    evidence, stamp = evidence_for_resolve(app, gpu_arch, require_verified=parsed.require_verified)
    if fmt != "json":
        text = cache.bodies.get_or_compute(
            (snapshot.content_hash, stamp, parsed, fmt),
            lambda: _in_api_words(lambda: render(_resolution(parsed, matrix, evidence), fmt).encode()),
        )
        return text, TEXT_TYPE
    # (only resolving raises: the JSON form of a resolution cannot fail)
    if not cache.enabled:  # ResolveCache.body's serialisation, without its cache's layers
        resolution = _in_api_words(_resolution, parsed, matrix, evidence)
        return orjson.dumps(resolution_to_json(resolution, for_orjson=True)), JSON_TYPE
    body = cache.body(
        (snapshot.content_hash, stamp, parsed),
        lambda: resolution_to_json(_in_api_words(_resolution, parsed, matrix, evidence), for_orjson=True),
    )
    return body, JSON_TYPE


def _resolution(parsed: ResolveRequest, matrix: Matrix, evidence: DatabaseEvidence | None) -> Resolution:
    """What ``parsed`` resolves to; with=vllm: the stack's releases, then torch for them
    (compat_service/domain/stacks)."""
    if not parsed.stack:
        return resolve_request(parsed, matrix, evidence)
    from compat_service.domain.stacks.catalog import load_catalog
    from compat_service.domain.stacks.resolve import resolve_stack

    return resolve_stack(parsed, matrix, evidence, load_catalog())


_Computed = TypeVar("_Computed")


def _in_api_words(compute: Callable[..., _Computed], *args: Any) -> _Computed:
    """``compute(*args)``; its AccelenvError reworded with the API's parameter names (before it is cached)."""
    try:
        return compute(*args)
    except AccelenvError as err:
        from compat_service.api.inputs.strict_query import in_api_words

        raise in_api_words(err) from None


#: the answers' media types (Starlette's ``Response(media_type=...)``)
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


def evidence_for_resolve(
    app: Any, gpu_arch: str | None, *, require_verified: bool = False
) -> tuple[DatabaseEvidence | None, str]:
    """The resolver's evidence lookup over this app's database, and the stamp the resolve cache key needs.
    While no report is stored the lookup is None (the answer is then exactly the offline CLI's), except with
    ``require_verified``: an empty database verifies nothing, so it answers `not-verified` as
    `resolve --database` does on the same file."""
    state = state_of(app)
    stamp = state.evidence_version.current()
    if not state.evidence_version.has_evidence and not require_verified:
        return None, stamp
    settings = state.settings
    lookup = DatabaseEvidence(
        state.engine, min_hosts=settings.verified_min_hosts, min_submitters=settings.verified_min_submitters,
        gpu_arch=gpu_arch,
    )
    return lookup, stamp


def evidence_stamp(app: Any) -> str:
    """The stored evidence's stamp (it changes when a report is stored or withdrawn), for caches keyed by it."""
    return state_of(app).evidence_version.current()


# --- GET /v1/matrix -----------------------------------------------------------------------------------------


def current_rows(app: Any, session: Session, matrix: MatrixSnapshot) -> MatrixRows:
    """This worker's assembled rows of ``matrix`` and the newest stored evidence (``GET /v1/matrix`` and the
    heatmap page read the same rows)."""
    # the stamp first: rows read after it are at least as new, so they are never cached under an older one
    state = state_of(app)
    stamp = state.evidence_version.current(check_now=True, connection=session.connection())
    settings = state.settings
    builder = state.matrix_rows_cache.builder(
        matrix.content_hash,
        lambda: MatrixRowsBuilder(
            declared_for(matrix.content_hash, matrix.data),
            min_hosts=settings.verified_min_hosts,
            min_submitters=settings.verified_min_submitters,
        ),
    )
    return state.matrix_rows_cache.get((matrix.content_hash, stamp), lambda: builder.build(session))


# --- GET /v1/evidence ---------------------------------------------------------------------------------------


def cell_key(
    *, torch: str, python: str, os: str, arch: str, backend: str, build: str | None = None,
    runtime: str | None = None, driver: str | None = None, device_arch: str | None = None,
) -> CellKey:
    """A cell's key as ``GET /v1/evidence`` reads it (a local tag ignored, the Python minor, the arch's
    canonical name, the backend in lower case)."""
    return CellKey(
        torch_version=torch.partition("+")[0], torch_build=build, python=python_minor(python), os=os,
        arch=normalise_arch(os, arch), backend=backend.lower(), runtime_version=runtime, driver_version=driver,
        device_arch=device_arch,
    )


def cell_evidence(
    app: Any, session: Session, matrix: MatrixSnapshot, key: CellKey, *, reader: bool
) -> tuple[CellEvidence, bool]:
    """The evidence of one cell (``public_view`` of it unless ``reader``) and whether reports are stored for
    it (the answer then depends on the token); a declared cell without reports answers ``declared``;
    NotFoundError for a cell neither stored nor declared."""
    settings = state_of(app).settings
    declared = declared_for(matrix.content_hash, matrix.data)
    found = stored_cell_evidence(
        session, key, declared=declared, min_hosts=settings.verified_min_hosts,
        min_submitters=settings.verified_min_submitters,
    )
    if found is not None:
        return (found if reader else public_view(found)), True
    if declared.declared_cell_of(key) is not None:
        return CellEvidence(
            key=key, declared=True, status="declared", health="none", reports=0, hosts=0, passing_hosts=0,
            first_seen=None, last_seen=None, counts=CheckCounts(), failing_checks=[],
        ), False
    raise NotFoundError(
        "no report was ever stored for this combination, and the matrix does not list it",
        hint="list known cells with GET /v1/matrix; omitted parameters (build, runtime, driver, device_arch) "
        "mean 'unknown', so pass every part the probe reported",
    )


def public_view(found: CellEvidence) -> CellEvidence:
    """A cell's evidence without what only `read` tokens see: the report ids (they open raw reports) and the
    failure texts (a report's own words, which may name paths or devices)."""
    return found.model_copy(update={
        "recent_report_ids": [],
        "checks": [c.model_copy(update={"last_failure": None}) for c in found.checks],
        "failing_checks": [c.model_copy(update={"last_failure": None}) for c in found.failing_checks],
    })


# --- GET /v1/torch/{version} --------------------------------------------------------------------------------

#: an exact release version, as ``GET /v1/torch/{version}`` accepts it
RELEASE_VERSION = r"^\d{1,3}\.\d{1,3}\.\d{1,3}([a-z0-9.]{0,16})$"


class TorchReleaseDetail(BaseModel):
    matrix_version: str
    release: TorchReleasePublic
    #: the minor's entry in matrix_data, as the files hold it (variants, python, default index, patches)
    minor: TorchMinor
    #: the GPU arch lists whose torch range covers this release
    arch_lists: list[ArchList]
    #: arch lists learned from agreeing probe reports, for builds no curated row covers (sources: report ids)
    observed_arch_lists: list[ArchList] = []
    #: every source the release's rows cite
    sources: list[Source]


def check_release_version(version: str) -> None:
    """The route's path validation, for a caller that is not a route: InvalidRequestError as the API says it."""
    if re.match(RELEASE_VERSION, version) is None:
        raise InvalidRequestError(
            "invalid path parameter version",
            hint="fix the named parameters; /docs describes every parameter",
            causes=[Cause(
                constraint=f"String should match pattern '{RELEASE_VERSION}'", origin="path parameter version",
                detail=f"got {_safe_input(version)}",
            )],
        )


def _safe_input(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _minor_of(data: matrix_rows.MatrixTables, name: str) -> matrix_rows.TorchMinor:
    """The snapshot's minor row; DatabaseNotReadyError when a load changed the tables since the snapshot."""
    minor = next((m for m in data.torch_releases.minors if m.minor == name), None)
    if minor is None:  # a load committed between reading the snapshot and the tables
        raise DatabaseNotReadyError(
            "the matrix was reloaded while answering", hint="retry the request", causes=[]
        )
    return minor


def _cited(minor: matrix_rows.TorchMinor, arch_lists: list[matrix_rows.ArchList], version: str) -> set[str]:
    """The source keys a release's rows cite: its minor's, its arch lists' and the patch's own."""
    cited: set[str] = set()
    for row in (*minor.python, *minor.variants, *minor.default_index, *arch_lists):
        cited.update(row.source)
    for patch in minor.patches:
        if patch.version == version:
            cited.update(patch.release_date_source)
            for companion in (patch.torchvision, patch.torchaudio, patch.triton):
                cited.update(companion.source)
    return cited


def torch_release(session: Session, matrix: MatrixSnapshot, version: str) -> TorchReleaseDetail:
    """What the matrix knows about one torch release; NotFoundError when it does not list it."""
    release = get_release(session, version)
    if release is None:
        raise NotFoundError(
            f"torch {version} is not in the matrix",
            hint="GET /v1/torch lists the releases the matrix knows",
        )
    data = matrix.data
    minor = _minor_of(data, release.minor)
    arch_lists = [
        a for a in data.gpu_archs.arch_lists if SpecifierSet(a.torch).contains(version, prereleases=True)
    ]
    cited = _cited(minor, arch_lists, version)
    sources = [s for s in data.sources.sources if s.key in cited]
    return TorchReleaseDetail(
        matrix_version=matrix.version, release=release, minor=_published(TorchMinor, minor),
        arch_lists=[_published(ArchList, a) for a in arch_lists],
        sources=[_published(Source, s) for s in sources],
        observed_arch_lists=[_published(ArchList, a) for a in matrix.matrix.observed_arch_lists(version)],
    )


_Published = TypeVar("_Published", bound=BaseModel)


def _published(model: type[_Published], row: matrix_rows.Frozen) -> _Published:
    """A matrix row as the schema model the API publishes it with (the response's OpenAPI is the schema's)."""
    return model.model_validate(matrix_rows.as_json(row))


# --- GET /v1/reports/{id} -----------------------------------------------------------------------------------


def report_id_of(text: str) -> uuid.UUID:
    """A report id as the route's path accepts it; anything else names no endpoint (404, as the API says)."""
    try:
        return uuid.UUID(text)
    except ValueError:
        raise NotFoundError("no such endpoint", hint="see /docs for the endpoints of this API") from None


def report_json(session: Session, report_id: uuid.UUID) -> str | bytes:
    """A stored report's JSON (for `read` token holders: the caller checks the token first)."""
    body = get_report_json(session, str(report_id))
    if body is None:
        raise NotFoundError(
            f"no report with id {report_id} is stored",
            hint="submit it with `accelenv report submit`, or check the id returned when it was submitted",
        )
    return body
