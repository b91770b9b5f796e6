"""The uvicorn internals compat_service/api/server/http_protocol.py's subclasses touch still exist (uvicorn is
pinned to a minor range in pyproject.toml; a new minor must pass this before the range moves): the methods
they override and call through ``super()``, the attributes they read, and h11's buffer they measure."""

from __future__ import annotations

import asyncio
import inspect

import h11
import pytest
from uvicorn.config import Config
from uvicorn.protocols.http import h11_impl, httptools_impl
from uvicorn.server import ServerState

from compat_service.api.server.http_protocol import JsonErrorsH11Protocol, JsonErrorsHttpToolsProtocol

#: what the subclasses override and call through super(), per protocol
METHODS: dict[type, tuple[str, ...]] = {
    h11_impl.H11Protocol: ("connection_made", "connection_lost", "data_received", "on_response_complete",
                           "send_400_response"),
    httptools_impl.HttpToolsProtocol: ("connection_made", "connection_lost", "data_received",
                                       "on_response_complete", "send_400_response", "on_headers_complete",
                                       "on_message_complete"),
}


@pytest.mark.parametrize("base", list(METHODS), ids=lambda c: c.__name__)
def test_the_overridden_methods_exist_with_their_signatures(base: type) -> None:
    for name in METHODS[base]:
        method = getattr(base, name, None)
        assert callable(method), f"{base.__name__}.{name} is gone"
        params = list(inspect.signature(method).parameters)
        subclass = JsonErrorsHttpToolsProtocol if base is httptools_impl.HttpToolsProtocol else JsonErrorsH11Protocol
        ours = list(inspect.signature(getattr(subclass, name)).parameters)
        assert params == ours, f"{base.__name__}.{name}{params} != ours {ours}"


@pytest.mark.parametrize("protocol", [JsonErrorsH11Protocol, JsonErrorsHttpToolsProtocol], ids=lambda c: c.__name__)
def test_the_attributes_the_subclasses_read_are_set(protocol: type) -> None:
    loop = asyncio.new_event_loop()
    try:
        config = Config(app=lambda *_: None, http=protocol)
        config.load()
        server_state = ServerState()
        proto = protocol(config=config, server_state=server_state, app_state={}, _loop=loop)
        assert proto.loop is loop
        assert proto.server_state is server_state and isinstance(server_state.default_headers, list)
        assert proto.cycle is None  # a RequestResponseCycle once a request starts
        if isinstance(proto, h11_impl.H11Protocol):
            assert isinstance(proto.conn, h11.Connection)
            assert isinstance(proto.conn.trailing_data[0], (bytes, bytearray))
            assert proto.conn.their_state is h11.IDLE
    finally:
        loop.close()


@pytest.mark.parametrize("module", [h11_impl, httptools_impl], ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_a_cycle_says_when_its_response_is_complete(module: object) -> None:
    cycle = module.RequestResponseCycle  # type: ignore[attr-defined]
    assert "self.response_complete = False" in inspect.getsource(cycle.__init__)
