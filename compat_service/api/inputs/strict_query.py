"""Strict query strings: a parameter a route does not take is a 422 naming it and the nearest one it takes;
a value no route could mean (`VALUE_CHECKS`: a build that is not a build label, an unknown arch) is a 422
naming the parameter, never an empty 200.

A typo in a pipeline (``pyton=3.11``) must fail the job, not answer for the default. `strict_query`
`strict_query`, a dependency of the whole app, checks the query parameter names of every route of the
published API (the routes in the OpenAPI document) against the ones the route declares (FastAPI's dependant,
sub-dependencies included);
the raw ``GET /v1/resolve`` endpoint checks its own names while reading its query string
(routes/resolve.py) with `unknown_parameter`. The check runs as a dependency, so its error leaves through
the app's one error handler like any other.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from compat_service.domain.errors import Cause, InvalidRequestError


def unknown_parameter(name: str, known: Iterable[str], path: str) -> InvalidRequestError:
    """The error for query parameter ``name`` that ``path`` does not take, naming the nearest known one."""
    names = sorted(known)
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    shown = name if len(name) <= 64 else name[:64] + "…"
    message = f"unknown query parameter {shown!r} for {path}"
    if near:
        message += f"; did you mean {near[0]!r}?"
    listed = ", ".join(names) if names else "none"
    return InvalidRequestError(
        message,
        hint=f"{path} takes these query parameters: {listed} (/docs describes each)",
        causes=[Cause(constraint=f"query parameter {shown}", origin="request",
                      detail=f"nearest known: {near[0]}" if near else None)],
    )


def query_names(raw: bytes) -> list[str]:
    """The parameter names of a raw query string, decoded as Starlette decodes them."""
    from urllib.parse import unquote

    names = []
    for part in raw.decode("latin-1").split("&"):
        if not part:
            continue
        name = part.partition("=")[0]
        if "%" in name or "+" in name:
            name = unquote(name.replace("+", " "), errors="replace")
        names.append(name)
    return names


def declared_query_names(route: APIRoute) -> frozenset[str]:
    """The query parameter names ``route`` takes (aliases as the client spells them)."""
    names: set[str] = set()

    def walk(dependant: Dependant) -> None:
        names.update(p.alias for p in dependant.query_params)
        for sub in dependant.dependencies:
            walk(sub)

    walk(route.dependant)
    extra = (route.openapi_extra or {}).get("parameters", [])
    names.update(p["name"] for p in extra if p.get("in") == "query")
    return frozenset(names)


def _build_labels(value: str) -> str | None:
    from compat_service.domain.backends import is_build_label

    bad = [part for part in (p.strip().lower() for p in value.split(",")) if part and not is_build_label(part)]
    return f"{', '.join(bad)}: not a build label (cpu, cu121, rocm6.0, xpu)" if bad else None


def _arches(value: str) -> str | None:
    from compat_service.domain.backends import ARCHES, normalise_arch

    bad = [part for part in (p.strip().lower() for p in value.split(","))
           if part and normalise_arch("linux", part) not in ARCHES and part not in ARCHES]
    return f"{', '.join(bad)}: not an architecture ({', '.join(ARCHES)})" if bad else None


#: query parameter name -> its check (None, or what is wrong with the value), on the routes whose parameter
#: filters the matrix (GET /v1/evidence's build and arch are a stored report's key, whatever the probe saw)
VALUE_CHECKS = {"build": _build_labels, "arch": _arches}
CHECKED_PATHS = frozenset({"/v1/matrix", "/v1/ci-matrix"})


def invalid_value(name: str, value: str, path: str) -> InvalidRequestError | None:
    """The error for ``name=value`` when `VALUE_CHECKS` refuses it, naming the parameter."""
    check = VALUE_CHECKS.get(name)
    problem = check(value) if check is not None else None
    if problem is None:
        return None
    shown = value if len(value) <= 64 else value[:64] + "…"
    return InvalidRequestError(
        f"{name} {shown!r}: {problem}",
        hint=f"{path}: give {name} a value of the kind named, or leave it out (/docs describes each parameter)",
        causes=[Cause(constraint=f"query parameter {name}={shown}", origin="request")],
    )


async def strict_query(request: Request) -> None:
    """The app-wide dependency (``FastAPI(dependencies=[Depends(strict_query)])``): refuse a query parameter
    the matched route does not declare. The pages (not in the OpenAPI document) keep their own rules."""
    raw = request.scope.get("query_string")
    if not raw:
        return
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.include_in_schema:
        return
    known = _known_names(route)
    for name in query_names(raw):
        if name not in known:
            raise unknown_parameter(name, known, route.path)
    if route.path in CHECKED_PATHS:
        _check_values(request, route.path)


def _known_names(route: APIRoute) -> frozenset[str]:
    """The query parameters the route declares (worked out once per route, kept on it)."""
    known = getattr(route, "_accelenv_query_names", None)
    if known is None:
        known = declared_query_names(route)
        route._accelenv_query_names = known  # type: ignore[attr-defined]
    return known


def _check_values(request: Request, path: str) -> None:
    """Refuse a value of the kind a checked parameter cannot take."""
    for name, value in request.query_params.multi_items():
        if name in VALUE_CHECKS:
            error = invalid_value(name, value, path)
            if error is not None:
                raise error


def in_api_words(err: InvalidRequestError | Exception) -> Exception:
    """An AccelenvError raised by the domain (which speaks the CLI's flags) reworded for the API: every flag of
    the parameter table said as its query parameter (`request.api_wording`), in the message, hint, causes and
    alternatives. Anything else is returned as is."""
    from compat_service.domain.errors import AccelenvError
    from compat_service.domain.resolver.request import api_wording

    if not isinstance(err, AccelenvError):
        return err
    err.message = api_wording(err.message)
    err.args = (err.message,)
    err.hint = api_wording(err.hint) if err.hint else err.hint
    # reworded in place (the error is fresh: the domain raised it for this request); no validation to repeat,
    # and only a text that names a flag is set again (setting a model's field costs more than reading it)
    for c in err.causes:
        if "--" in c.constraint:
            c.constraint = api_wording(c.constraint)
        if "--" in c.origin:
            c.origin = api_wording(c.origin)
        if c.detail and "--" in c.detail:
            c.detail = api_wording(c.detail)
    for a in err.alternatives:
        if "--" in a.description:
            a.description = api_wording(a.description)
    return err
