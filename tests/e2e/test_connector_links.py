"""Connector links: the service's live, shared sessions with remote MCP servers.

A real agentws serves on loopback; the remote is the SDK's own MCP server
(:mod:`tests.e2e.remote_support`). These tests look at what a user and an
operator see: the tool cache following the remote (on connect, on
``notifications/tools/list_changed``, on the periodic round), calls sharing
one session, a remote that goes away and comes back, and shutdown closing
every connection.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import pytest
import trio

from agentws.connectors.admin import attach_connector
from agentws.connectors.remote_mcp import RemoteError
from agentws.domain.models import AuditEntry, CachedTool, Capability, Connector
from agentws.settings.secret_box import SecretBox, ensure_key_file
from agentws.store.union import Store
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.polling import wait_for
from tests.e2e.remote_support import (
    MODERN_LINK,
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    ThirdParty,
    add_remote,
    third_party_server,
    tool,
)

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ENV = {
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    # Far above what any test waits: a call that fails must fail because the
    # remote is down, not because this deadline ran out.
    "AGENTWS_TOOL_TIMEOUT_S": "60",
    "AGENTWS_CONNECTOR_REFRESH_S": "0",
}


async def _connect(store: Store, url: str, protocol: str = "auto") -> Connector:
    connector = await add_remote(store, url, protocol=protocol)
    await attach_connector(store, "acme", "ops", "third", actor="t")
    return connector


def _link_protocol(handshake_only: bool) -> str:
    # The fixture speaks both eras unless handshake_only: pinned, its link speaks 2026-07-28.
    return "auto" if handshake_only else MODERN_LINK


async def _cached(store: Store, connector: Connector) -> set[str]:
    return {t.name for t in await store.select(CachedTool, connector_id=connector.id)}


async def _until_cached(store: Store, connector: Connector, names: set[str]) -> None:
    with trio.fail_after(TIMEOUT_S):
        while await _cached(store, connector) != names:  # noqa: ASYNC110 - state is in the store
            await trio.sleep(0.02)


async def _label(store: Store, connector: Connector, name: str, label: Capability) -> None:
    cached = await store.find(CachedTool, connector_id=connector.id, name=name)
    assert cached is not None
    await store.update(attrs.evolve(cached, label=label))  # as an admin would


@pytest.mark.parametrize("handshake_only", [True, False], ids=["handshake", "modern"])
async def test_a_link_fills_the_cache_and_follows_list_changed(
    tmp_path: Path, handshake_only: bool
) -> None:
    # A remote of 2026-07-28 sends the notification on the listen stream the
    # link keeps open; an older one on the session's GET stream.
    state = ThirdParty(
        [tool("search", "Search", read_only_hint=True)], handshake_only=handshake_only
    )
    async with running(tmp_path, with_library=False, **ENV) as server:
        links = server.runtime.links
        async with third_party_server(state) as url:
            connector = await _connect(server.store, url, _link_protocol(handshake_only))
            await links.reconcile()  # what the service does every 30 s
            await _until_cached(server.store, connector, {"search"})
            [link] = links.states()
            assert link.connected
            assert link.transport == "streamable_http"
            assert link.protocol_version == ("2025-11-25" if handshake_only else "2026-07-28")

            # The periodic refresh is off: only the remote's notification can
            # bring the new tool. The notification travels on the session's GET
            # stream (or the listen stream), which the client opens just after
            # it connects; until it is open the remote drops notifications, so
            # announce until heard.
            state.tools = [*state.tools, tool("fetch", "Fetch", read_only_hint=True)]
            with trio.fail_after(TIMEOUT_S):
                while await _cached(server.store, connector) != {"search", "fetch"}:
                    await state.announce_list_changed()
                    with trio.move_on_after(0.5):
                        await _until_cached(server.store, connector, {"search", "fetch"})
            assert links.states()[0].list_changed >= 1
            assert state.distinct_sessions == 1  # every listing went over the one link

            # The new tool is at the endpoint at once, unlabeled (write).
            async with sdk_session(server, "streamable") as session:
                with trio.fail_after(TIMEOUT_S):
                    listed = {t.name: t for t in (await session.list_tools()).tools}
            assert set(listed) == {"third_search", "third_fetch", "get_approval"}
            assert listed["third_fetch"].description.startswith("[capability: write]")
        assert await server.store.select(AuditEntry, action="tool.definition_changed") == []


async def test_calls_share_one_session_and_outlive_a_remote_restart(tmp_path: Path) -> None:
    # Sessions are the handshake's: the remote here has no other.
    state = ThirdParty([tool("search", "Search", read_only_hint=True)], handshake_only=True)
    async with running(tmp_path, with_library=False, **ENV) as server:
        async with third_party_server(state) as url:
            connector = await _connect(server.store, url)
            await server.runtime.links.refresh(connector)
            await _label(server.store, connector, "search", Capability.READ)

            async def call(session: object, n: int) -> None:
                result = await session.call_tool("third_search", {"q": f"q{n}"})  # type: ignore[attr-defined]
                assert not result.is_error, result
                answers.add(result.content[0].text)

            answers: set[str] = set()
            async with (
                sdk_session(server, "streamable") as one,
                sdk_session(server, "sse") as other,
            ):
                with trio.fail_after(TIMEOUT_S):
                    async with trio.open_nursery() as nursery:
                        for n in range(8):
                            nursery.start_soon(call, one if n % 2 else other, n)
            assert answers == {f"third-party found: q{n}" for n in range(8)}
            # Two clients, eight calls and a refresh: one session with the remote.
            assert state.distinct_sessions == 1

        # The remote is gone: a clear tool error, long before the 60 s deadline.
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                down = await session.call_tool("third_search", {"q": "x"})
                assert down.is_error
                text = down.content[0].text  # type: ignore[union-attr]
                assert text.startswith("third_search failed: connector 'third'")
                assert url.removesuffix("/mcp") in text
                # tools/list never asks the remote.
                assert len((await session.list_tools()).tools) == 2  # with get_approval

            # It comes back on the same address, knowing nothing of our session.
            async with third_party_server(state):
                with trio.fail_after(TIMEOUT_S):
                    back = await session.call_tool("third_search", {"q": "again"})
                assert not back.is_error, back
                assert back.content[0].text == "third-party found: again"  # type: ignore[union-attr]
                assert state.distinct_sessions == 2


async def test_a_restarted_remote_gets_a_new_session_for_a_read_call(tmp_path: Path) -> None:
    # The remote restarts between two calls, faster than the link notices: the
    # call meets "session terminated" and goes again over a new session.
    state = ThirdParty([tool("search", "Search", read_only_hint=True)], handshake_only=True)
    async with running(tmp_path, with_library=False, **ENV) as server:
        links = server.runtime.links
        async with third_party_server(state) as url:
            connector = await _connect(server.store, url)
            await links.refresh(connector)
        async with third_party_server(state):
            with trio.fail_after(TIMEOUT_S):
                result = await links.call_tool(connector, "search", {"q": "hi"}, retry_safe=True)
            assert not result.is_error, result
            assert state.calls == ["search"]
            assert state.distinct_sessions == 2


@pytest.mark.parametrize("handshake_only", [True, False], ids=["handshake", "modern"])
async def test_shutdown_closes_every_remote_connection(
    tmp_path: Path, handshake_only: bool
) -> None:
    state = ThirdParty([tool("search", "Search")], handshake_only=handshake_only)
    # The link holds a stream open for notifications: the session's GET
    # stream, or (2026-07-28) the response to its subscriptions/listen.
    held = "GET" if handshake_only else "POST"
    async with third_party_server(state) as url:
        server: Running
        async with running(tmp_path, with_library=False, **ENV) as server:
            connector = await _connect(server.store, url, _link_protocol(handshake_only))
            await server.runtime.links.reconcile()
            await _until_cached(server.store, connector, {"search"})
            await wait_for(
                lambda: state.open_requests.get(held) == 1, timeout_s=TIMEOUT_S, what="a stream"
            )
        assert server.runtime.links.states() == []
        await wait_for(
            lambda: state.open_requests.get(held) == 0,
            timeout_s=TIMEOUT_S,
            what="the remote to see our stream closed",
        )


async def test_the_periodic_round_refreshes_and_a_down_remote_is_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = ThirdParty([tool("search", "Search", read_only_hint=True)])
    env = {**ENV, "AGENTWS_CONNECTOR_REFRESH_S": "0.2"}
    async with running(tmp_path, with_library=False, **env) as server:
        async with third_party_server(state) as url:
            # Added behind the service's back, as `agentws connector add` does:
            # the refresh round finds it.
            connector = await _connect(server.store, url)
            await _until_cached(server.store, connector, {"search"})
            state.tools = [*state.tools, tool("fetch", "Fetch", read_only_hint=True)]
            await _until_cached(server.store, connector, {"search", "fetch"})
        # Down: the link says so in the log and keeps trying; the cache keeps what it had.
        await wait_for(
            lambda: any("cannot connect to" in r.getMessage() for r in caplog.records),
            timeout_s=TIMEOUT_S,
            what="the link's warning",
        )
        assert not server.runtime.links.states()[0].connected
        assert await _cached(server.store, connector) == {"search", "fetch"}
        assert await server.store.select(AuditEntry, action="tool.definition_changed") == []


async def test_a_link_refuses_an_address_the_guard_refuses(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search", read_only_hint=True)])
    env = {**ENV, "AGENTWS_CONNECTOR_ALLOWLIST": ""}
    async with running(tmp_path, with_library=False, **env) as server:
        async with third_party_server(state) as url:
            connector = await _connect(server.store, url)
            with trio.fail_after(TIMEOUT_S), pytest.raises(Exception, match="not a public address"):
                await server.runtime.links.call_tool(connector, "search", {}, retry_safe=True)
        assert state.sessions == []  # nothing reached the remote


async def test_a_links_secret_reaches_the_remote_and_no_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the SDK's and httpx2's own debug lines too
    secret = "remote-secret-never-logged-4242"
    state = ThirdParty([tool("search", "Search", read_only_hint=True)])
    ensure_key_file(tmp_path)
    env = {**ENV, "AGENTWS_DATA_DIR": str(tmp_path)}
    async with running(tmp_path, with_library=False, **env) as server:
        box = SecretBox.from_settings(server.runtime.settings)
        async with third_party_server(state) as url:
            connector = await add_remote(server.store, url, secret=secret, box=box)
            await attach_connector(server.store, "acme", "ops", "third", actor="t")
            await server.runtime.links.refresh(connector)
            await _label(server.store, connector, "search", Capability.READ)
            async with sdk_session(server, "streamable") as session:
                with trio.fail_after(TIMEOUT_S):
                    assert not (await session.call_tool("third_search", {"q": "x"})).is_error
        # ... and once more with the remote gone, so the failure paths log too.
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                assert (await session.call_tool("third_search", {"q": "x"})).is_error
    assert set(state.authorizations) == {f"Bearer {secret}"}
    assert caplog.records
    assert not [r for r in caplog.records if secret in r.getMessage()]


async def test_a_stateless_link_outlives_its_remote_going_away(tmp_path: Path) -> None:
    # Over 2026-07-28 the link sends calls itself: a connection the remote
    # dropped is the link's to mend, as over a session; a read call goes again.
    state = ThirdParty([tool("search", "Search", read_only_hint=True)])
    async with running(tmp_path, with_library=False, **ENV) as server:
        links = server.runtime.links
        async with third_party_server(state) as url:
            connector = await _connect(server.store, url)
            await links.refresh(connector)
            with trio.fail_after(TIMEOUT_S):
                first = await links.call_tool(connector, "search", {"q": "a"}, retry_safe=True)
            assert not first.is_error, first
        # Gone: the link's error naming the connector, not the HTTP client's.
        with trio.fail_after(TIMEOUT_S), pytest.raises(RemoteError, match="connector 'third'"):
            await links.call_tool(connector, "search", {"q": "b"}, retry_safe=True)
        # Back on the same address: the next read call gets through.
        async with third_party_server(state):
            with trio.fail_after(TIMEOUT_S):
                back = await links.call_tool(connector, "search", {"q": "c"}, retry_safe=True)
            assert not back.is_error, back
        assert state.calls == ["search", "search"]
