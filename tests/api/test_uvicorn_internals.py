"""The uvicorn internals compat_service/api/server/http_protocol.py's subclass touches still exist (uvicorn is
pinned to a minor range in pyproject.toml; a new minor must pass this before the range moves): the methods
it overrides and calls through ``super()``, and the attributes it reads."""

from __future__ import annotations

import asyncio
import inspect

from uvicorn.config import Config
from uvicorn.protocols.http import httptools_impl
from uvicorn.server import ServerState

from compat_service.api.server.http_protocol import HTTP_PROTOCOL, JsonErrorsHttpToolsProtocol

#: what the subclass overrides and calls through super()
METHODS = ("connection_made", "connection_lost", "data_received", "on_response_complete", "send_400_response",
           "on_headers_complete", "on_message_complete", "_start_asgi_task")


def test_the_overridden_methods_exist_with_their_signatures() -> None:
    base = httptools_impl.HttpToolsProtocol
    for name in METHODS:
        method = getattr(base, name, None)
        assert callable(method), f"HttpToolsProtocol.{name} is gone"
        params = list(inspect.signature(method).parameters)
        ours = list(inspect.signature(getattr(JsonErrorsHttpToolsProtocol, name)).parameters)
        assert params == ours, f"HttpToolsProtocol.{name}{params} != ours {ours}"


def test_the_attributes_the_subclass_reads_are_set() -> None:
    loop = asyncio.new_event_loop()
    try:
        config = Config(app=lambda *_: None, http=JsonErrorsHttpToolsProtocol)
        config.load()
        server_state = ServerState()
        proto = JsonErrorsHttpToolsProtocol(config=config, server_state=server_state, app_state={}, _loop=loop)
        assert proto.loop is loop
        assert proto.server_state is server_state and isinstance(server_state.default_headers, list)
        assert proto.cycle is None  # a RequestResponseCycle once a request starts
        assert isinstance(proto.pipeline, type(proto.pipeline)) and len(proto.pipeline) == 0
        assert hasattr(proto, "flow") and hasattr(proto, "connections")
    finally:
        loop.close()


def test_a_cycle_says_when_its_response_is_complete() -> None:
    cycle = httptools_impl.RequestResponseCycle
    assert "self.response_complete = False" in inspect.getsource(cycle.__init__)


def test_serve_uses_the_one_bounded_protocol() -> None:
    """No h11 fallback: it would parse pipelined requests unbounded and has no body deadline."""
    module, name = HTTP_PROTOCOL.split(":")
    assert getattr(__import__(module, fromlist=[name]), name) is JsonErrorsHttpToolsProtocol
