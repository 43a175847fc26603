"""Every private name of the ``mcp`` SDK that agentws reaches
(:mod:`agentws.bridges.mcp_sdk_bridge`).

An SDK upgrade that moves one of them fails here, with a message naming it,
before anything else notices: each name of ``BRIDGED`` is looked up on its
module, its class, or an instance of its class built here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage

from agentws.bridges import mcp_sdk_bridge
from agentws.bridges.mcp_sdk_bridge import BRIDGED, Bridged


@contextlib.contextmanager
def _instance(owner: str) -> Iterator[Any]:
    """An instance of the class ``owner`` names, built as cheaply as it can be."""
    send, receive = anyio.create_memory_object_stream[SessionMessage](1)
    with send, receive:
        if owner == "mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher":
            yield JSONRPCDispatcher(receive, send)
        elif owner == "mcp.client.session.ClientSession":
            yield ClientSession(receive, send)
        elif owner == "contextlib.AsyncExitStack":
            yield contextlib.AsyncExitStack()
        else:
            raise AssertionError(f"no way to build a {owner} for the bridge test: add one")


@pytest.mark.parametrize("reach", BRIDGED, ids=str)
def test_every_bridged_name_is_where_the_bridge_reaches_it(reach: Bridged) -> None:
    if reach.kind == "instance":
        with _instance(reach.owner) as instance:
            present = hasattr(instance, reach.name)
    else:
        present = not mcp_sdk_bridge.missing((reach,))
    assert present, (
        f"mcp {mcp_sdk_bridge.installed_version()} has no {reach} ({reach.kind} name), which "
        "agentws/bridges/mcp_sdk_bridge.py reaches: it moved or was removed; see 'Upgrading mcp or "
        "hypercorn' in docs/architecture.md"
    )


def test_the_installed_sdk_is_a_tested_release() -> None:
    version = mcp_sdk_bridge.installed_version()
    assert version in mcp_sdk_bridge.TESTED_VERSIONS, (
        f"mcp {version} is installed but agentws/bridges/mcp_sdk_bridge.py was tested with "
        f"{sorted(mcp_sdk_bridge.TESTED_VERSIONS)}: follow the upgrade checklist in "
        "docs/architecture.md"
    )


def test_a_missing_name_is_named() -> None:
    gone = Bridged("mcp.server.runner", "_no_such_name", "module")
    moved_module = Bridged("mcp.server._no_such_module", "anything", "module")
    assert mcp_sdk_bridge.missing((gone, moved_module, *BRIDGED)) == [gone, moved_module]


def test_the_envelope_check_is_the_runners() -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    assert mcp_sdk_bridge.has_modern_envelope({"_meta": meta})
    assert not mcp_sdk_bridge.has_modern_envelope({"_meta": {"progressToken": 1}})
    assert not mcp_sdk_bridge.has_modern_envelope(None)


def test_a_fresh_session_can_stamp_and_parse() -> None:
    with _instance("mcp.client.session.ClientSession") as session:
        assert mcp_sdk_bridge.can_stamp_requests(session)
        data: dict[str, Any] = {"method": "tools/call", "params": {"name": "t", "arguments": {}}}
        mcp_sdk_bridge.stamp_request(session, data, {})
        raw = {"content": [{"type": "text", "text": "hi"}]}
        result = mcp_sdk_bridge.parse_call_tool_result(session, raw)
    assert isinstance(result, types.CallToolResult)


async def test_a_driven_dispatcher_is_running_until_shut() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](1)
    with send, receive:
        dispatcher = mcp_sdk_bridge.DrivenDispatcher(
            receive, send, inline_methods=frozenset(), task_group=object()
        )
        assert not dispatcher.closed
        dispatcher.shut()
        assert dispatcher.closed


async def test_an_exit_stack_with_nothing_on_it_has_no_callbacks() -> None:
    class _Connection:
        exit_stack = contextlib.AsyncExitStack()

    connection: Any = _Connection()
    assert not mcp_sdk_bridge.exit_stack_has_callbacks(connection)
    connection.exit_stack.callback(lambda: None)
    assert mcp_sdk_bridge.exit_stack_has_callbacks(connection)
    await connection.exit_stack.aclose()
