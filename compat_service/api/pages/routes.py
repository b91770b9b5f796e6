"""The HTML pages: `/` (selector), `/matrix` (heatmap and a cell's evidence), `/torch/{version}`, `/reports/{id}`.

Each route gathers what the API already answers (see `compat_service/api/pages/`) and renders a Jinja2
template; static files live under ``/static``. Pages are not part of the OpenAPI document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from compat_service.api import service_reads
from compat_service.api.deps import bearer_secret, get_matrix, state_of, token_holds_scope, token_with_scope
from compat_service.api.pages import heatmap, selector
from compat_service.api.pages.reads import ApiAnswer, answered, read_service, refusal
from compat_service.api.resolve_cache import LruCache
from compat_service.db.evidence.matrix_cells import MatrixRow
from compat_service.db.evidence.queries import MatrixFilter
from compat_service.db.matrix.snapshot_follower import MatrixSnapshot
from compat_service.domain.backends import PLATFORMS
from compat_service.domain.errors import AccelenvError, NotFoundError
from compat_service.domain.evidence.perf import describe as describe_perf_figure
from compat_service.domain.evidence.status import BAD_STATUSES, is_bad
from compat_service.domain.hardware_rules import DriverRule, driver_rule
from compat_service.domain.visible_text import visible

PAGES = Path(__file__).resolve().parents[1] / "pages"
templates = Jinja2Templates(directory=str(PAGES / "templates"))
templates.env.filters["perf_figure"] = describe_perf_figure  # "matmul.float32 1.2 TFLOP/s (cpu ..., 4% of peak)"
templates.env.globals["status_letter"] = heatmap.LETTER  # the legend's letters, for the status_badge macro


def _finalize(value: Any) -> Any:
    """Every ``{{ }}`` value: report text is data, its control and bidi characters shown as escapes
    (markup the templates build themselves, ``Markup``, is left as it is)."""
    return visible(value) if type(value) is str else value


templates.env.finalize = _finalize
static_files = StaticFiles(directory=str(PAGES / "static"))

router = APIRouter(include_in_schema=False)
#: pages are rendered per request; a proxy may keep them only after asking again (the ETag answers that)
_HEADERS = {"Cache-Control": "no-cache"}
#: most evidence cells of one square read in full on the matrix page
MAX_EVIDENCE_CELLS = 12
#: most report-less cells of one square listed by name (a square has Python × platform of them)
MAX_DECLARED_SHOWN = 200
_PASTE_LIMIT = 200_000
PAGE_CACHE_SIZE = 64
#: ... and at most this many bytes of page models (Heatmap.weight) per worker
PAGE_CACHE_BYTES = 32 * 1024 * 1024


def _page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context, status_code=status, headers=_HEADERS)


def _page_cache(request: Request) -> LruCache[Any]:
    """This worker's cache of page models (heatmaps): a few dozen filter combinations cover the traffic."""
    return state_of(request.app).page_cache


def page_weight(model: Any) -> int:
    """A page model's weight in bytes for the page cache (``Heatmap.weight``)."""
    return model.weight() if hasattr(model, "weight") else 1_000


def _error_page(request: Request, title: str, found: ApiAnswer) -> HTMLResponse:
    """The API's refusal, as a page with the same status (404 stays 404, a 401 says a token is needed)."""
    heading = {404: "Not found", 401: "A token is needed", 403: "Not allowed"}.get(found.status, "Error")
    context = {"title": title, "error": found.error, "heading": heading, "matrix_version": None}
    return _page(request, "error.html", context, found.status)


@router.get("/", response_class=HTMLResponse)
async def selector_page(request: Request) -> Response:
    state = selector.state_of(request)
    if not selector.is_canonical(request, state):
        # a plain form submit sends every field, empty ones too: the canonical URL is the shareable one
        return RedirectResponse(selector.url_for_state(state), status_code=303)
    matrix = await get_matrix(request)
    answer = await selector.answer(request, state)
    return _page(
        request,
        "selector.html",
        {
            "matrix_version": matrix.version,
            "state": state,
            "choices": selector.choices(matrix.data),
            "fields": selector.FIELD_LABELS,
            "answer": answer,
            "variant_lines": selector.variant_lines(matrix.matrix, answer.resolution, state),
            "formats": selector.FORMATS,
            "chosen_format": state.get("format", "pip"),
            "notice": selector.NOTICES.get(state.get("notice", "")),
            "nvidia_smi_query": selector.NVIDIA_SMI_QUERY,
            "url_for_state": selector.url_for_state,
            "with_parts": selector.with_parts(state.get("with")),
            "api_url": "/v1/resolve" + _resolve_query(state),
        },
    )


def _resolve_query(state: dict[str, str]) -> str:
    url = selector.url_for_state({k: v for k, v in state.items() if k not in selector.PAGE_PARAMS})
    return url[1:]


@router.post("/nvidia-smi")
async def paste_nvidia_smi(request: Request) -> Response:
    """Read the driver and GPU from pasted `nvidia-smi` output and go to the selector with them filled in."""
    raw = await request.body()
    form = parse_qs(raw[:_PASTE_LIMIT].decode("utf-8", errors="replace"), keep_blank_values=True)
    text = (form.get("output") or [""])[0]
    state = {k: v[0] for k, v in form.items() if k in selector.STATE_PARAMS and v and v[0].strip()}
    return RedirectResponse(selector.from_nvidia_smi(text, state), status_code=303)


def _matrix_filters(
    request: Request, families: Sequence[str], pythons: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    """The URL's filters that name something the page offers, and a problem for each one that does not
    (ignored): the page model is cached by these validated values only, so made-up values cannot each
    build and keep a heatmap."""
    allowed: dict[str, Sequence[str]] = {
        "family": families, "platform": PLATFORMS, "python": pythons, "status": heatmap.STATUSES,
    }
    q = request.query_params
    filters: dict[str, str] = {}
    problems = []
    for name in heatmap.FILTERS:
        value = q.get(name, "").strip()
        if not value:
            continue
        if value in allowed[name]:
            filters[name] = value
        else:
            shown = value if len(value) <= 40 else value[:40] + "…"
            problems.append(f"unknown {name} {shown!r}: choose one of {', '.join(allowed[name])}")
    return filters, problems


def _row_filter(filters: dict[str, str]) -> MatrixFilter:
    """The rows a page's validated filters keep (its platform is an os-arch pair)."""
    platform = filters.get("platform")
    return MatrixFilter(
        python=filters.get("python"),
        os=platform.split("-", 1)[0] if platform else None,
        arch=platform.split("-", 1)[1] if platform else None,
        status=filters.get("status"),
    )


def _missing_square(heat: Any, torch: str | None, build: str | None) -> NotFoundError | None:
    """The error for a selected torch or build the heatmap has no square for; None when it has."""
    if (torch and not any(v == torch for v, _ in heat.rows)) or (build and build not in heat.columns):
        what = " ".join(f"{n} {v[:40]!r}" for n, v in (("torch", torch), ("build", build)) if v)
        return NotFoundError(
            f"the matrix page has no square for {what}",
            hint="open a square of the heatmap; GET /v1/matrix lists every cell, observed ones included",
        )
    return None


async def _cached_heatmap(
    request: Request, matrix: MatrixSnapshot, filters: dict[str, str], read_rows: Callable[[], list[MatrixRow]]
) -> Any:
    labels = [v.label for v in matrix.data.build_variants.variants]
    # a heatmap is a pure function of the load, the stored evidence and the validated filters: cached per
    # worker (bounded by entries and by bytes)
    stamp = service_reads.evidence_stamp(request.app)
    key = ("matrix-page", matrix.content_hash, stamp, tuple(sorted(filters.items())))
    cache = _page_cache(request)
    heat = cache.get(key)
    if heat is None:
        cells = await run_in_threadpool(read_rows)
        heat = heatmap.build_heatmap(cells, labels, filters)
        cache.put(key, heat)
    return heat


def _page_state(filters: dict[str, str], torch: str | None, build: str | None) -> dict[str, str]:
    """The page's query state: its filters and the selected square."""
    return {**filters, **({"torch": torch} if torch else {}), **({"build": build} if build else {})}


async def _square_cells(
    read: Callable[[MatrixFilter], list[MatrixRow]], flt: MatrixFilter, state: dict[str, str], torch: str | None,
    build: str | None
) -> list[MatrixRow]:
    """The cells of the selected square (a torch and a build), under the page's filters; none unselected."""
    if not (torch and build):
        return []
    square = MatrixFilter(torch=torch, build=None if build == "unknown" else build, python=flt.python,
                          os=flt.os, arch=flt.arch, status=flt.status)
    return heatmap.square_cells(await run_in_threadpool(read, square), state)


@router.get("/matrix", response_class=HTMLResponse)
async def matrix_page(request: Request) -> Response:
    matrix = await get_matrix(request)
    data = matrix.data
    pythons = selector.choices(data)["pythons"]
    families = sorted({v.family for v in data.build_variants.variants})
    filters, problems = _matrix_filters(request, families, pythons)
    flt = _row_filter(filters)

    def read(flt: MatrixFilter) -> list[MatrixRow]:
        # the rows GET /v1/matrix keeps for this load and evidence (assembled once per worker; the list is
        # shared, read only): the heatmap counts them, the selected square lists its own
        with Session(state_of(request.app).engine) as session:
            return service_reads.current_rows(request.app, session, matrix).select(flt)

    heat = await _cached_heatmap(request, matrix, filters, partial(read, flt))
    q = request.query_params
    torch, build = q.get("torch", "").strip() or None, q.get("build", "").strip() or None
    missing = _missing_square(heat, torch, build)
    if missing is not None:
        return _error_page(request, "Matrix", refusal(missing))
    state = _page_state(filters, torch, build)
    selected = await _square_cells(read, flt, state, torch, build)
    with_reports = [c for c in selected if c.reports][:MAX_EVIDENCE_CELLS]
    token = bearer_secret(request.headers.get("authorization"))
    evidence = await run_in_threadpool(_evidence, request.app, token, matrix, with_reports)
    return _page(
        request,
        "matrix.html",
        {
            "matrix_version": matrix.version,
            "state": state,
            "heat": heat,
            "selected_key": (torch, build),
            "evidence": evidence,
            "declared_only": [c for c in selected if not c.reports][:MAX_DECLARED_SHOWN],
            "legend": heatmap.LEGEND,
            "families": families,
            "platforms": PLATFORMS,
            "pythons": pythons,
            "statuses": heatmap.STATUSES,
            "problems": problems,
            "matrix_url": heatmap.matrix_url,
        },
    )


def _evidence(app: Any, token: str | None, matrix: MatrixSnapshot, cells: list[Any]) -> list[tuple[Any, ApiAnswer]]:
    """``GET /v1/evidence``'s answer for each cell (its full key), as the visitor's token lets them see it."""
    with Session(state_of(app).engine) as session:
        return _evidence_in(app, session, token, matrix, cells)


def _evidence_in(
    app: Any, session: Session, token: str | None, matrix: MatrixSnapshot, cells: list[Any]
) -> list[tuple[Any, ApiAnswer]]:
    try:
        reader = token_holds_scope(app, session, token, "read")
    except AccelenvError as exc:  # an unknown or revoked token: the API refuses every cell
        return [(cell, refusal(exc)) for cell in cells]

    def one(cell: Any) -> Any:
        key = service_reads.cell_key(**heatmap.evidence_params(cell))
        found, _stored = service_reads.cell_evidence(app, session, matrix, key, reader=reader)
        return found.model_dump(mode="json", by_alias=True)

    return [(cell, answered(partial(one, cell))) for cell in cells]


@router.get("/torch/{version}", response_class=HTMLResponse)
async def release_page(request: Request, version: str) -> Response:
    newest = await _newest_patch(request, version)
    if newest is not None:
        # /torch/2.5 and /torch/latest name no patch: the newest one (of that minor, of the released ones)
        return RedirectResponse(f"/torch/{newest}", status_code=302)
    def release(session: Session, _token: str | None) -> Any:
        service_reads.check_release_version(version)
        current = state_of(request.app).matrix_repository.current(check_now=True)
        return service_reads.torch_release(session, current, version).model_dump(mode="json", by_alias=True)

    found = await read_service(request, release)
    if not found.ok:
        return _error_page(request, f"torch {version}", found)
    body = found.body
    matrix = await get_matrix(request)
    by_platform: dict[str, list[str]] = {}
    for entry in body["release"]["python"]:
        for platform in entry["platforms"]:
            by_platform.setdefault(platform, []).append(entry["version"])
    floors = _driver_floors(matrix, body["release"]["variants"])
    patch = next((p for p in body["minor"]["patches"] if p["version"] == version), None)
    sources = {s["key"]: s for s in body["sources"]}
    return _page(
        request,
        "release.html",
        {
            "matrix_version": body["matrix_version"],
            "version": version,
            "body": body,
            "patch": patch,
            "python_by_platform": sorted(by_platform.items()),
            "floors": floors,
            "sources": sources,
            "api_url": f"/v1/torch/{version}",
        },
    )


def _driver_floors(matrix: MatrixSnapshot, wheels: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(label, runtime, os, driver floor, the toolkit's own floor, sources) of each CUDA build and OS."""
    variants = {v.label: v for v in matrix.data.build_variants.variants}
    floors = []
    for wheel in wheels:
        row = variants.get(wheel["label"])
        if row is None or row.family != "cuda":
            continue
        for os_name in sorted({p.split("-", 1)[0] for p in wheel["platforms"]}):
            floor = driver_rule(matrix.matrix, row.runtime, row.runtime_full, os_name, "kernels")
            floors.append((wheel["label"], row.runtime, os_name, floor.version, floor.toolkit_floor, _cited(floor)))
    return floors


def _cited(floor: DriverRule) -> list[str]:
    """The sources of a driver rule: the toolkit row's, then the minor-version-compatibility row's."""
    cited = list(floor.toolkit.source) if floor.toolkit is not None else []
    return cited + [k for k in (floor.major_row.source if floor.major_row is not None else ()) if k not in cited]


async def _newest_patch(request: Request, version: str) -> str | None:
    """The newest patch a minor (2.5) or 'latest' stands for; None for anything else (an exact version)."""
    if version != "latest" and re.fullmatch(r"\d+\.\d+", version) is None:
        return None
    matrix = (await get_matrix(request)).matrix
    for minor in matrix.torch_minors():  # newest first
        if (version == "latest" and minor.status == "released") or minor.minor == version:
            patches = matrix.torch_patches(minor)
            return patches[0].version if patches else None
    return None


def _grouped_checks(checks: list[dict[str, Any]]) -> list[tuple[str, dict[str, int], list[dict[str, Any]]]]:
    """(group, status counts, checks worst first) per check group, the groups with most bad checks first."""
    order = {**dict.fromkeys(BAD_STATUSES, 0), "unsupported": 1, "skipped": 2, "passed": 3}
    groups: dict[str, list[dict[str, Any]]] = {}
    for check in checks:
        groups.setdefault(check["group"], []).append(check)
    grouped = []
    for group, items in groups.items():
        items.sort(key=lambda c: (order.get(c["status"], 4), c["id"]))
        counts: dict[str, int] = {}
        for c in items:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        grouped.append((group, counts, items))
    grouped.sort(key=lambda g: (-sum(n for s, n in g[1].items() if s in BAD_STATUSES), g[0]))
    return grouped


@router.get("/reports/{report_id}", response_class=HTMLResponse)
async def report_page(request: Request, report_id: str) -> Response:
    def read_report(session: Session, token: str | None) -> Any:
        rid = service_reads.report_id_of(report_id)
        token_with_scope(request.app, session, token, "read")  # raw reports are for `read` token holders
        return json.loads(service_reads.report_json(session, rid))

    found = await read_service(request, read_report)
    if not found.ok:
        return _error_page(request, f"Probe report {report_id}", found)
    report = found.body
    checks = report.get("checks", [])
    bad = BAD_STATUSES
    failing_ids = {c["id"] for c in checks if is_bad(c["group"], c["status"])}  # unsupported in smoke/models too
    grouped = _grouped_checks(checks)
    failing = [c for c in checks if c["id"] in failing_ids]
    return _page(
        request,
        "report.html",
        {
            "matrix_version": None,
            "report": report,
            "env": report.get("environment", {}),
            "failing": failing,
            "grouped": grouped,
            "bad": bad,
            "perf": (report.get("perf") or {}).get("figures") or [],
            "raw_json": json.dumps(report.get("summary", {}), indent=1),
            "api_url": f"/v1/reports/{report_id}",
        },
    )
