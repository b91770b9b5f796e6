"""Settings for the service and the database commands (pydantic-settings, prefix ACCELENV_).

Built by whoever needs them (the app factory, a CLI command), never at import time, so tests inject their
own. Flag > environment variable > default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from compat_service.domain.errors import Cause, InvalidRequestError


def default_database_url() -> str:
    """An SQLite file in the user's data directory: the embedded default, no server to set up."""
    from platformdirs import user_data_dir

    path = Path(user_data_dir("accelenv", appauthor=False)) / "accelenv.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


class ConnectionLimits(BaseSettings):
    """The limits uvicorn's protocol applies before a request reaches the app
    (compat_service/api/server/http_protocol.py); part of `Settings`, read on their own by each worker."""

    model_config = SettingsConfigDict(env_prefix="ACCELENV_", extra="ignore")

    #: largest request line + headers, in bytes (431 past it, connection closed)
    max_header_bytes: int = Field(default=65_536, ge=1024, le=16_777_216)
    #: seconds a request's headers may take to arrive, from the connection's opening or the previous
    #: response's end (408, connection closed); bytes trickling in do not extend it
    header_read_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    #: seconds a client may take to send a request body, from its headers' end (408 after, connection
    #: closed, whether or not the app reads the body); a slow or stalled upload must not hold a connection
    #: and a worker's memory for ever
    body_read_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    #: least average rate (bytes a second) of a body after its first ``BODY_RATE_GRACE_S`` seconds (408 and
    #: closed below it); 0 = only the deadline
    body_min_rate_bps: int = Field(default=1024, ge=0)
    #: most open connections per worker; one more is answered 503 `too-many-connections` and closed (each
    #: connection is a file descriptor: keep it under the process's `ulimit -n`); 0 = no cap
    max_connections: int = Field(default=4096, ge=0)


class Settings(ConnectionLimits):
    model_config = SettingsConfigDict(env_prefix="ACCELENV_", extra="ignore")

    database_url: str = Field(default_factory=default_database_url)
    #: directory holding matrix_data; null = the bundled copy
    matrix_path: Path | None = None
    #: largest request body the API accepts, in bytes
    max_body_bytes: int = Field(default=1_000_000, ge=1)
    #: most reports one `POST /v1/reports/batch` may carry
    max_batch_reports: int = Field(default=100, ge=1, le=10_000)
    #: largest body `POST /v1/reports/batch` accepts, in bytes (a full batch of ~65 KB reports fits)
    max_batch_body_bytes: int = Field(default=16_000_000, ge=1)
    #: most single-report submissions a worker stores in one transaction (compat_service/db/evidence/queue.py)
    ingest_group_max: int = Field(default=64, ge=1, le=1000)
    #: seconds a worker remembers a token it found valid; a revoked token stops working within this time
    #: (0 = look every token up on every request); see compat_service/db/tokens.py
    token_cache_s: float = Field(default=5.0, ge=0, le=300)
    #: distinct hosts whose passing reports make a matrix cell "verified"
    verified_min_hosts: int = Field(default=2, ge=1)
    #: ... and distinct submitters among them, counted by token owner (two tokens of one owner are one): a
    #: host fingerprint is the client's word, a token and its owner are set by an admin (docs/service.md)
    verified_min_submitters: int = Field(default=2, ge=1)
    #: per worker, requests a minute one client address may send (429 `quota-exceeded` + Retry-After past it;
    #: compat_service/api/middleware/quota.py); 0 = no quota (the default: a fleet behind one NAT address,
    #: or a benchmark on loopback, is one address; docs/service.md suggests values for a public service)
    quota_requests_per_min: int = Field(default=0, ge=0)
    #: ... and with one token (counted by its secret's hash, valid or not); 0 = no quota
    quota_token_requests_per_min: int = Field(default=0, ge=0)
    #: ... and bytes of request bodies one address may send a minute (counted as they arrive); 0 = none
    quota_bytes_per_min: int = Field(default=0, ge=0)
    #: bytes of report data (stored bodies) one token may store in all, ever (403 `report-storage-quota`
    #: past it; counted in the table token_storage by the ingest); 0 = no quota (the default)
    quota_token_report_bytes: int = Field(default=0, ge=0)
    #: Cache-Control max-age for GET responses
    cache_max_age_s: int = Field(default=60, ge=0)
    #: load the bundled matrix into an empty database when the service starts
    load_matrix_on_start: bool = True
    #: run migrations (and load the matrix) when the app starts. null = yes on SQLite (the embedded default
    #: needs no set-up), no on PostgreSQL (run `accelenv db upgrade` once, not from every worker)
    auto_migrate: bool | None = None
    #: how often (seconds) a worker checks whether a newer matrix was loaded into the database
    matrix_refresh_s: float = Field(default=5.0, ge=0)
    #: freeze start-up objects and raise the garbage collector's thresholds when a worker starts, and turn off
    #: the logging module's thread/process record fields our formatters never print (see
    #: compat_service/api/server/gc_tuning.py); off for an app embedded in a process that tunes its own GC
    tune_gc: bool = True
    #: resolutions kept per worker (keyed by the normalized request and the matrix version); a full cache
    #: costs ~6-7 KB of memory an entry (answer, key, memoized request: benchmarks/bench_memory_soak.md)
    resolve_cache_size: int = Field(default=1024, ge=0)
    #: and at most this many bytes of cached answers, so that large answers cannot grow a worker instead
    resolve_cache_bytes: int = Field(default=4 * 1024 * 1024, ge=0)
    #: most entries of each of the resolver's three request-keyed error-path tables per worker (whether a request
    #: the alternatives search builds resolves, the nearest torch that fits, a failing request's nearby
    #: alternatives: MemoStore.request_limit); 0 = none kept, every failing request searched afresh
    resolver_memo_size: int = Field(default=4096, ge=0)
    #: one line per request (method, path, status, duration, request id) on stderr; off for benchmarks
    access_log: bool = True
    #: FastAPI's native OpenTelemetry (spans, metrics and logs through the globally configured providers);
    #: off by default: the service has its own metrics and access log, and the check for configured
    #: providers reads the environment on every request (~12 % of a cached resolve)
    opentelemetry: bool = False
    #: "plain" text lines or one JSON object per line, for the access log and the service's own lines
    log_format: Literal["plain", "json"] = "plain"
    #: set by `accelenv serve` for its workers: the URL its socket listens on (named in the start-up line)
    listen_url: str | None = None
    #: `GET /v1/lock`: the default index the closure is resolved against (None: the endpoint answers 503)
    lock_index_url: str | None = None
    #: `GET /v1/lock`: a mirror of the torch indexes, ``{label}`` standing for the build label (None: the
    #: matrix's own index URLs)
    lock_torch_index: str | None = None

    def migrates_on_start(self) -> bool:
        if self.auto_migrate is not None:
            return self.auto_migrate
        return self.database_url.startswith("sqlite")


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and ``overrides``); a bad ACCELENV_* value is an InvalidRequestError
    naming each variable and what is wrong with it, not a validation traceback."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        names = [f"ACCELENV_{'_'.join(str(p) for p in err['loc']).upper()}" for err in errors]
        raise InvalidRequestError(
            f"invalid service setting(s): {', '.join(names)}",
            hint="fix or unset these environment variables; docs/service.md (Settings) lists every setting",
            causes=[
                Cause(constraint=str(err["msg"]), origin=f"{name}={err.get('input')!r}"[:200])
                for name, err in zip(names, errors)
            ],
        ) from None
