"""`accelenv token create|revoke|withdraw|list`: the service's API tokens, on the database `accelenv db` names."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cli.db_cmd import DatabaseUrl, JsonFlag, database
from cli.error_render import dump_json, guarded
from cli.terminal_text import say

token_app = typer.Typer(
    name="token", help="API tokens: report (submit), read (raw reports), admin.", no_args_is_help=True
)
TokenId = Annotated[int, typer.Argument(help="the id `accelenv token list` shows")]


@token_app.command("create")
def token_create(
    scope: Annotated[
        str, typer.Option("--scope", help="report (submit probe reports), read (raw reports) or admin (everything)")
    ],
    note: Annotated[str | None, typer.Option("--note", help="who or what the token is for")] = None,
    owner: Annotated[
        str | None,
        typer.Option("--owner", help="the person or organisation holding it: a cell is verified by reports of "
                     "distinct owners, so give all tokens of one owner the same --owner (default: its own)"),
    ] = None,
    database_url: DatabaseUrl = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a token and print it once (only its hash is stored); --json prints it with its record."""
    with guarded(as_json=as_json):
        from compat_service.db.tokens import create_token, token_request

        request = token_request(scope, note, owner)  # before touching the database: a bad note changes nothing
        with database(database_url, at_head=True) as engine:
            public, secret = create_token(engine, request)
        if as_json:
            dump_json({**public.model_dump(mode="json"), "token": secret})
            return
        sys.stdout.write(secret + "\n")
        say(f"token {public.id} (scope {public.scope}, owner {public.owner}) created; it is shown only now, "
             "store it safely")


@token_app.command("revoke")
def token_revoke(
    token_id: TokenId,
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a token: requests with it get 401 once running workers forget it (ACCELENV_TOKEN_CACHE_S, 5 s)."""
    with guarded():
        from compat_service.db.tokens import revoke_token

        with database(database_url, at_head=True) as engine:
            public = revoke_token(engine, token_id)
        say(f"token {public.id} (scope {public.scope}) revoked at {public.revoked_at:%Y-%m-%d %H:%M:%S} UTC; "
             "running services refuse it within their ACCELENV_TOKEN_CACHE_S (5 s by default)")


@token_app.command("withdraw")
def token_withdraw(
    token_id: TokenId,
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a token and withdraw every report it submitted from the evidence (docs/service.md, trust model)."""
    with guarded():
        from compat_service.db.evidence.withdraw import withdraw_submitter

        with database(database_url, at_head=True) as engine:
            result = withdraw_submitter(engine, token_id)
        say(f"token {token_id} revoked; {result.reports_withdrawn} report(s) withdrawn from "
             f"{result.cells} evidence cell(s)")


@token_app.command("list")
def token_list(database_url: DatabaseUrl = None, as_json: JsonFlag = False) -> None:
    """List tokens (ids, scopes, notes, dates; never secrets)."""
    with guarded(as_json=as_json):
        from compat_service.db.tokens import list_tokens

        with database(database_url, at_head=True) as engine:
            tokens = list_tokens(engine)
        if as_json:
            dump_json([t.model_dump(mode="json") for t in tokens])
            return
        for t in tokens:
            state = f"revoked {t.revoked_at:%Y-%m-%d}" if t.revoked_at else "active"
            say(f"{t.id}\t{t.scope}\t{state}\t{t.created_at:%Y-%m-%d}\t{t.owner or ''}\t{t.note or ''}", sys.stdout)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.add_typer(token_app)
