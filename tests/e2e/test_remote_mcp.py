"""Remote MCP connectors against a real third-party MCP server on loopback.

The third party is the ``mcp`` SDK's own server (see
:mod:`tests.e2e.remote_support`); agentws fetches its tools through the URL
guard, keeps them in the tool cache and forwards calls to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import mcp_types as types
import pytest
import trio

from agentws.connectors.admin import attach_connector
from agentws.connectors.remote_mcp import RemoteError, fetch_tools, remote_deadline
from agentws.core.errors import UnsafeUrlError
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import AuditEntry, CachedTool, Capability, Connector
from agentws.store.union import Store
from agentws.tools.cache_sync import sync_tool_cache
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.remote_support import (
    LOOPBACK,
    MODERN_LINK,
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    ThirdParty,
    add_remote,
    store_and_box,
    third_party_server,
    tool,
)
from tests.support import run_agentws

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

SECRET = "remote-bearer-token-123"


async def test_tools_are_fetched_cached_and_reset_when_their_definition_changes(
    tmp_path: Path,
) -> None:
    state = ThirdParty(
        [
            tool("search", "Search things", read_only_hint=True),
            tool("drop", "Drop everything", destructive_hint=True),
            tool("send", "Send a message"),
        ]
    )
    async with store_and_box(tmp_path) as (store, box), third_party_server(state) as url:
        connector = await add_remote(store, url, secret=SECRET, box=box)
        with trio.fail_after(TIMEOUT_S):
            with remote_deadline(connector, TIMEOUT_S):
                tools = await fetch_tools(connector, box=box, allowlist=LOOPBACK)
        report = await sync_tool_cache(store, connector, tools, actor="t")
        assert sorted(report.added) == ["drop", "search", "send"]
        assert state.authorizations[-1] == f"Bearer {SECRET}"
        cached = {t.name: t for t in await store.select(CachedTool, connector_id=connector.id)}
        # Whatever the remote claims, nothing is labeled: all are `write` until an admin says.
        assert {n: t.capability for n, t in cached.items()} == dict.fromkeys(
            cached, Capability.WRITE
        )
        assert cached["search"].suggested_label is Capability.READ
        assert cached["drop"].suggested_label is Capability.DESTRUCTIVE
        assert cached["send"].suggested_label is Capability.WRITE
        assert cached["search"].annotations == {"readOnlyHint": True}

        # An admin labels `search` read; then the remote changes what `search` is.
        await store.update(attrs.evolve(cached["search"], label=Capability.READ))
        state.tools = [
            tool("search", "Search and DELETE things", read_only_hint=True),
            state.tools[1],
        ]
        with trio.fail_after(TIMEOUT_S):
            with remote_deadline(connector, TIMEOUT_S):
                tools = await fetch_tools(connector, box=box, allowlist=LOOPBACK)
        report = await sync_tool_cache(store, connector, tools, actor="t")
        assert report.changed == ("search",)
        assert report.removed == ("send",)
        assert report.unchanged == 1
        cached = {t.name: t for t in await store.select(CachedTool, connector_id=connector.id)}
        assert set(cached) == {"search", "drop"}
        assert cached["search"].label is None
        assert cached["search"].description == "Search and DELETE things"
        audit = await store.select(AuditEntry, action="tool.definition_changed")
        assert [(a.target, a.detail["previous_label"]) for a in audit] == [("third_search", "read")]


async def test_a_remote_that_is_down_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search")])
    async with store_and_box(tmp_path) as (store, box):
        async with third_party_server(state) as url:
            connector = await add_remote(store, url)
        # The server is gone now.
        with (
            pytest.raises(RemoteError, match="cannot list tools"),
            remote_deadline(connector, TIMEOUT_S),
        ):
            await fetch_tools(connector, box=box, allowlist=LOOPBACK)


async def test_a_loopback_remote_needs_the_allowlist(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search")])
    async with store_and_box(tmp_path) as (store, box), third_party_server(state) as url:
        with pytest.raises(UnsafeUrlError, match="not a public"):
            await add_remote(store, url, allowlist=Allowlist())  # refused when saved...
        # ... and on connecting, if saved while the allowlist named it.
        connector = await add_remote(store, url)
        with (
            pytest.raises(UnsafeUrlError, match="not a public"),
            remote_deadline(connector, TIMEOUT_S),
        ):
            await fetch_tools(connector, box=box, allowlist=Allowlist())
        assert state.authorizations == []  # nothing reached the server


async def _cli(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str]:
    database = f"sqlite:///{tmp_path / 'cli.db'}"
    return await run_agentws(
        tmp_path, database, *args, AGENTWS_CONNECTOR_ALLOWLIST="127.0.0.1/32", **env
    )


async def test_connector_add_fetches_the_tools_and_refresh_updates_them(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search", read_only_hint=True), tool("send", "Send")])
    for command in (["init"], ["workspace", "create", "acme"]):
        assert (await _cli(tmp_path, *command))[0] == 0
    async with third_party_server(state) as url:
        code, out, err = await _cli(
            tmp_path,
            "connector",
            "add",
            "acme",
            "third",
            "--kind",
            "remote_mcp",
            "--url",
            url,
            "--secret-env",
            "T",
            T=SECRET,
        )
        assert code == 0, err
        assert "Tools of 'third': 2 new" in out
        assert state.authorizations == [f"Bearer {SECRET}"]
        # show: every cached tool is write, the remote's read-only claim a suggestion.
        code, out, err = await _cli(tmp_path, "connector", "show", "acme", "third", "--json")
        assert code == 0, err
        shown = json.loads(out)
        assert shown["secret"] == "Authorization"
        rows = [(t["name"], t["capability"], t["label"], t["suggested"]) for t in shown["tools"]]
        assert rows == [
            ("third_search", "write", None, "read"),
            ("third_send", "write", None, "write"),
        ]
        code, out, err = await _cli(tmp_path, "connector", "show", "acme", "third")
        assert code == 0, err
        assert "in header Authorization, stored encrypted" in out
        assert "Tools (2, from the cache; 2 unlabeled, so write until an admin labels them):" in out
        # test: the handshake and the list, with the credential; the cache is untouched.
        listed = len(state.authorizations)
        code, out, err = await _cli(tmp_path, "connector", "test", "acme", "third", "--json")
        assert code == 0, err
        probe = json.loads(out)
        assert (probe["ok"], probe["transport"], probe["tools"]) == (True, "streamable_http", 2)
        assert probe["server"]["name"] == "third-party"
        assert state.authorizations[listed:] == [f"Bearer {SECRET}"]
        # The remote gives no version (the SDK's default): nothing is left of it in the text.
        assert probe["server"]["version"] == ""
        code, out, err = await _cli(tmp_path, "connector", "test", "acme", "third")
        assert code == 0, err
        assert "works: third-party over streamable_http (protocol " in out, out
        costly = types.Tool(
            name="costly",
            description="Lookaround",
            input_schema={
                "type": "object",
                "properties": {"q": {"type": "string", "pattern": "^(?!x)"}},
            },
        )
        state.tools = [tool("search", "Search, differently", read_only_hint=True), costly]
        code, out, err = await _cli(tmp_path, "connector", "refresh", "acme", "third")
        assert code == 0, err
        assert "1 new, 1 changed, 1 removed" in out
        assert SECRET not in out + err
        # A schema costly to check is flagged to the admin.
        code, out, err = await _cli(tmp_path, "connector", "show", "acme", "third", "--json")
        hazards = {t["name"]: t["schema_hazards"] for t in json.loads(out)["tools"]}
        assert hazards["third_search"] == []
        assert hazards["third_costly"] == [
            "patterns that need backtracking (lookaround, backreferences): '^(?!x)'"
        ]
        code, out, err = await _cli(tmp_path, "connector", "show", "acme", "third")
        assert "Schema costly to check (third_costly: its calls are checked in a worker" in out
    # The remote is down: refresh and test fail clearly; add still saves the connector.
    code, _, err = await _cli(tmp_path, "connector", "refresh", "acme", "third")
    assert code == 1
    assert "cannot list tools" in err
    code, out, err = await _cli(tmp_path, "connector", "test", "acme", "third")
    assert (code, out) == (1, "")
    assert f"agentws: error: connector 'third': cannot connect at {url}" in err
    code, out, err = await _cli(
        tmp_path, "connector", "add", "acme", "later", "--kind", "remote_mcp", "--url", url
    )
    assert code == 0, err
    assert "Warning: connector 'later': cannot list tools" in out
    assert "agentws connector refresh acme later" in out
    # Every refresh is audited, as the dashboard's and the API's are: what changed, or why not.
    code, out, err = await _cli(
        tmp_path, "audit", "tail", "--action", "connector.refresh", "--json"
    )
    assert code == 0, err
    refreshes = sorted(json.loads(out), key=lambda e: e["at"])
    assert [e["target"] for e in refreshes] == ["acme/third"] * 3 + ["acme/later"]
    assert all(e["actor"].startswith("cli:") for e in refreshes)
    counts = [{k: e["detail"].get(k) for k in ("added", "changed", "removed")} for e in refreshes]
    assert counts[:2] == [
        {"added": 2, "changed": 0, "removed": 0},
        {"added": 1, "changed": 1, "removed": 1},
    ]
    code, out, err = await _cli(
        tmp_path, "audit", "tail", "--action", "tool.schema_flagged", "--json"
    )
    (flagged,) = json.loads(out)
    assert flagged["target"] == "third_costly"
    assert "lookaround" in flagged["detail"]["hazards"][0]
    assert "cannot list tools" in refreshes[2]["detail"]["error"]
    assert "cannot list tools" in refreshes[3]["detail"]["error"]


async def _attach_read_search(store: Store, url: str, protocol: str = "auto") -> Connector:
    """Add ``url`` as connector ``third`` of acme/ops, its ``search`` labelled read."""
    connector = await add_remote(store, url, protocol=protocol)
    with remote_deadline(connector, TIMEOUT_S):
        tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
    await sync_tool_cache(store, connector, tools, actor="t")
    await attach_connector(store, "acme", "ops", "third", actor="t")
    search = await store.find(CachedTool, connector_id=connector.id, name="search")
    assert search is not None
    await store.update(attrs.evolve(search, label=Capability.READ))  # an admin's label
    return connector


async def test_read_tools_of_a_remote_are_forwarded_and_writes_are_queued(tmp_path: Path) -> None:
    state = ThirdParty([tool("search", "Search", read_only_hint=True), tool("send", "Send")])
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "5"}
    async with running(tmp_path, with_library=False, **env) as server:
        store = server.store
        async with third_party_server(state) as url:
            await _attach_read_search(store, url)

            async with sdk_session(server, "streamable") as session:
                with trio.fail_after(TIMEOUT_S):
                    listed = {t.name for t in (await session.list_tools()).tools}
                    assert listed == {"third_search", "third_send", "get_approval"}
                    result = await session.call_tool("third_search", {"q": "refunds"})
                    assert not result.is_error
                    assert result.content[0].text == "third-party found: refunds"  # type: ignore[union-attr]
                    # Unlabeled, so write: queued for an admin, not run.
                    queued = await session.call_tool("third_send", {"q": "hi"})
                    assert not queued.is_error
                    assert (queued.structured_content or {})["status"] == "queued"
                    assert state.calls == ["search"]  # `send` never reached the remote
        # The remote is down: a clear tool error, in time, and tools/list still answers.
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                down = await session.call_tool("third_search", {"q": "x"})
                assert down.is_error
                assert "third_search failed" in down.content[0].text  # type: ignore[union-attr]
                assert len((await session.list_tools()).tools) == 3


async def test_a_call_after_the_connector_moved_goes_to_its_new_address(tmp_path: Path) -> None:
    # Calls reuse the connector's record while the catalog stands still; an
    # admin's change moves the catalog, so the next call must see it.
    first = ThirdParty([tool("search", "Search", read_only_hint=True)])
    second = ThirdParty([tool("search", "Search", read_only_hint=True)])
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "5"}
    async with (
        running(tmp_path, with_library=False, **env) as server,
        third_party_server(first) as first_url,
        third_party_server(second) as second_url,
    ):
        store = server.store
        connector = await _attach_read_search(store, first_url)
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                assert not (await session.call_tool("third_search", {"q": "a"})).is_error
                assert (first.calls, second.calls) == (["search"], [])
                moved = await store.get(type(connector), connector.id)
                await store.update(attrs.evolve(moved, url=second_url))
                assert not (await session.call_tool("third_search", {"q": "b"})).is_error
                assert (first.calls, second.calls) == (["search"], ["search"])


async def test_calls_to_a_busy_remote_share_the_links_connections(tmp_path: Path) -> None:
    # AGENTWS_CONNECTOR_CONNECTIONS caps the connections a link opens: calls
    # beyond them wait for one, then all run; none fails for want of one.
    state = ThirdParty([tool("search", "Search", read_only_hint=True)], hold=trio.Event())
    env = {
        "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
        "AGENTWS_TOOL_TIMEOUT_S": "10",
        "AGENTWS_CONNECTOR_CONNECTIONS": "3",
    }
    async with (
        running(tmp_path, with_library=False, **env) as server,
        third_party_server(state) as url,
    ):
        store = server.store
        await _attach_read_search(store, url, MODERN_LINK)  # its listen stream is a POST
        answers: list[str] = []
        async with sdk_session(server, "streamable") as session:

            async def call(n: int) -> None:
                result = await session.call_tool("third_search", {"q": str(n)})
                assert not result.is_error
                answers.append(result.content[0].text)  # type: ignore[union-attr]

            with trio.fail_after(TIMEOUT_S):
                async with trio.open_nursery() as nursery:
                    for n in range(6):
                        nursery.start_soon(call, n)
                    # Three requests reach the remote (two calls, and the
                    # stream the link keeps); the other four wait for a connection.
                    posts = state.open_requests
                    while state.calls_now < 2 or posts.get("POST", 0) < 3:  # noqa: ASYNC110
                        await trio.sleep(0.01)
                    assert posts["POST"] == 3
                    assert state.hold is not None
                    state.hold.set()
        assert sorted(answers) == [f"third-party found: {n}" for n in range(6)]
        assert state.most_calls_at_once <= 3


@pytest.mark.parametrize("handshake_only", [False, True], ids=["stateless", "handshake"])
async def test_a_stateless_links_calls_are_sent_directly(
    tmp_path: Path, handshake_only: bool
) -> None:
    # Over 2026-07-28 a call is one POST the link sends itself (ids from
    # 2**40 on), not through the SDK's session machinery; over a handshake
    # revision the session sends it. Either way the caller gets the answer.
    state = ThirdParty(
        [tool("search", "Search", read_only_hint=True)], handshake_only=handshake_only
    )
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "5"}
    async with (
        running(tmp_path, with_library=False, **env) as server,
        third_party_server(state) as url,
    ):
        store = server.store
        await _attach_read_search(store, url, "auto" if handshake_only else MODERN_LINK)
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                result = await session.call_tool("third_search", {"q": "refunds"})
        assert result.content[0].text == "third-party found: refunds"  # type: ignore[union-attr]
        (call_id,) = state.call_ids
        assert (int(call_id) >= 2**40) is not handshake_only
