"""Remote MCP connectors against a real third-party MCP server on loopback.

The third party is the ``mcp`` SDK's own server (``streamable_http_app``)
served by Hypercorn; agentws fetches its tools through the URL guard and
keeps them in the tool cache.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import hypercorn.trio
import mcp_types as types
import pytest
import trio
from hypercorn.config import Config
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from agentws.config import Settings
from agentws.connectors.registry import ConnectorSecret, add_connector, attach_connector
from agentws.connectors.remote_mcp import RemoteError, fetch_tools, sync_tool_cache
from agentws.connectors.url_guard import Allowlist
from agentws.domain.models import AuditEntry, CachedTool, Capability, ConnectorKind
from agentws.errors import UnsafeUrlError
from agentws.mcp.handlers import PERMISSION_DENIED
from agentws.registry import create_workspace
from agentws.secret_box import SecretBox, ensure_key_file
from agentws.store import Store, open_store
from tests.e2e.mcp_support import running, sdk_session
from tests.support import clean_env

# The SDK's Streamable HTTP client leaves its GET-stream generator to the
# garbage collector when it is closed while the remote still holds the stream;
# trio then warns. That is the SDK client's own cleanup, not ours.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator 'httpx2.*was garbage collected:ResourceWarning",
    "ignore:Async generator 'httpcore2.*was garbage collected:ResourceWarning",
)

LOOPBACK = Allowlist.parse("127.0.0.1/32")
TIMEOUT_S = 10.0
SECRET = "remote-bearer-token-123"


@attrs.define
class ThirdParty:
    """The remote's tools (tests change them) and the Authorization headers it saw."""

    tools: list[types.Tool]
    authorizations: list[str | None] = attrs.field(factory=list)
    calls: list[str] = attrs.field(factory=list)


def _tool(name: str, description: str, **hints: bool) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        annotations=types.ToolAnnotations(**hints) if hints else None,
    )


@asynccontextmanager
async def third_party_server(state: ThirdParty) -> AsyncIterator[str]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        request = ctx.request
        state.authorizations.append(request.headers.get("authorization") if request else None)
        return types.ListToolsResult(tools=state.tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        state.calls.append(params.name)
        query = (params.arguments or {}).get("q")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"third-party found: {query}")]
        )

    server: Server[Any] = Server("third-party", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(streamable_http_path="/mcp")
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        yield f"{binds[0]}/mcp"
        stop.set()


@asynccontextmanager
async def store_and_box(tmp_path: Path) -> AsyncIterator[tuple[Store, SecretBox]]:
    ensure_key_file(tmp_path)
    box = SecretBox.from_settings(Settings.from_env({"AGENTWS_DATA_DIR": str(tmp_path)}))
    async with open_store(f"sqlite:///{tmp_path / 'remote.db'}") as store:
        await create_workspace(store, "acme", name=None, actor="t")
        yield store, box


async def test_tools_are_fetched_cached_and_reset_when_their_definition_changes(
    tmp_path: Path,
) -> None:
    state = ThirdParty(
        [
            _tool("search", "Search things", read_only_hint=True),
            _tool("drop", "Drop everything", destructive_hint=True),
            _tool("send", "Send a message"),
        ]
    )
    async with store_and_box(tmp_path) as (store, box), third_party_server(state) as url:
        connector = await add_connector(
            store,
            "acme",
            "third",
            kind=ConnectorKind.REMOTE_MCP,
            url=url,
            headers={},
            secret=ConnectorSecret(SECRET),
            box=box,
            allowlist=LOOPBACK,
            actor="t",
        )
        with trio.fail_after(TIMEOUT_S):
            tools = await fetch_tools(connector, box=box, allowlist=LOOPBACK, timeout_s=TIMEOUT_S)
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
            _tool("search", "Search and DELETE things", read_only_hint=True),
            state.tools[1],
        ]
        with trio.fail_after(TIMEOUT_S):
            tools = await fetch_tools(connector, box=box, allowlist=LOOPBACK, timeout_s=TIMEOUT_S)
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
    state = ThirdParty([_tool("search", "Search")])
    async with store_and_box(tmp_path) as (store, box):
        async with third_party_server(state) as url:
            connector = await add_connector(
                store,
                "acme",
                "third",
                kind=ConnectorKind.REMOTE_MCP,
                url=url,
                headers={},
                secret=None,
                box=None,
                allowlist=LOOPBACK,
                actor="t",
            )
        # The server is gone now.
        with trio.fail_after(TIMEOUT_S), pytest.raises(RemoteError, match="cannot list tools"):
            await fetch_tools(connector, box=box, allowlist=LOOPBACK, timeout_s=TIMEOUT_S)


async def test_a_loopback_remote_needs_the_allowlist(tmp_path: Path) -> None:
    state = ThirdParty([_tool("search", "Search")])
    async with store_and_box(tmp_path) as (store, box), third_party_server(state) as url:
        connector = await add_connector(
            store,
            "acme",
            "third",
            kind=ConnectorKind.REMOTE_MCP,
            url=url,
            headers={},
            secret=None,
            box=None,
            allowlist=Allowlist(),
            actor="t",
        )
        with trio.fail_after(TIMEOUT_S), pytest.raises(UnsafeUrlError, match="not a public"):
            await fetch_tools(connector, box=box, allowlist=Allowlist(), timeout_s=TIMEOUT_S)
        assert state.authorizations == []  # nothing reached the server


async def _cli(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str]:
    result = await trio.run_process(
        [sys.executable, "-m", "agentws", *args, "--database", f"sqlite:///{tmp_path / 'cli.db'}"],
        cwd=tmp_path,
        env=clean_env(AGENTWS_CONNECTOR_ALLOWLIST="127.0.0.1/32", **env),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    stdout, stderr = result.stdout.decode(), result.stderr.decode()
    assert "Traceback" not in stdout + stderr, stderr
    return result.returncode, stdout, stderr


async def test_connector_add_fetches_the_tools_and_refresh_updates_them(tmp_path: Path) -> None:
    state = ThirdParty([_tool("search", "Search", read_only_hint=True), _tool("send", "Send")])
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
        state.tools = [_tool("search", "Search, differently", read_only_hint=True)]
        code, out, err = await _cli(tmp_path, "connector", "refresh", "acme", "third")
        assert code == 0, err
        assert "1 changed, 1 removed" in out
        assert SECRET not in out + err
    # The remote is down: refresh fails clearly; add still saves the connector.
    code, _, err = await _cli(tmp_path, "connector", "refresh", "acme", "third")
    assert code == 1
    assert "cannot list tools" in err
    code, out, err = await _cli(
        tmp_path, "connector", "add", "acme", "later", "--kind", "remote_mcp", "--url", url
    )
    assert code == 0, err
    assert "Warning: connector 'later': cannot list tools" in out
    assert "agentws connector refresh acme later" in out


async def test_read_tools_of_a_remote_are_forwarded_and_others_are_denied(tmp_path: Path) -> None:
    state = ThirdParty([_tool("search", "Search", read_only_hint=True), _tool("send", "Send")])
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "5"}
    async with running(tmp_path, with_library=False, **env) as server:
        store = server.store
        async with third_party_server(state) as url:
            connector = await add_connector(
                store,
                "acme",
                "third",
                kind=ConnectorKind.REMOTE_MCP,
                url=url,
                headers={},
                secret=None,
                box=None,
                allowlist=LOOPBACK,
                actor="t",
            )
            tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK, timeout_s=TIMEOUT_S)
            await sync_tool_cache(store, connector, tools, actor="t")
            await attach_connector(store, "acme", "ops", "third", actor="t")
            search = await store.find(CachedTool, connector_id=connector.id, name="search")
            assert search is not None
            await store.update(attrs.evolve(search, label=Capability.READ))  # an admin's label

            async with sdk_session(server, "streamable") as session:
                with trio.fail_after(TIMEOUT_S):
                    listed = {t.name for t in (await session.list_tools()).tools}
                    assert listed == {"third_search", "third_send"}
                    result = await session.call_tool("third_search", {"q": "refunds"})
                    assert not result.is_error
                    assert result.content[0].text == "third-party found: refunds"  # type: ignore[union-attr]
                    with pytest.raises(MCPError) as denied:
                        await session.call_tool("third_send", {"q": "hi"})
                    assert denied.value.code == PERMISSION_DENIED
                    assert "permission denied" in denied.value.message
                    assert state.calls == ["search"]  # `send` never reached the remote
        # The remote is down: a clear tool error, in time, and tools/list still answers.
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                down = await session.call_tool("third_search", {"q": "x"})
                assert down.is_error
                assert "third_search failed" in down.content[0].text  # type: ignore[union-attr]
                assert len((await session.list_tools()).tools) == 2


async def test_the_refresher_keeps_the_cache_current_and_survives_a_down_remote(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = ThirdParty([_tool("search", "Search", read_only_hint=True)])
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0.2"}

    async def cached_names(connector_id: str) -> set[str]:
        return {t.name for t in await store.select(CachedTool, connector_id=connector_id)}

    async def until(connector_id: str, names: set[str]) -> None:
        with trio.fail_after(TIMEOUT_S):
            while await cached_names(connector_id) != names:  # noqa: ASYNC110 - state is in the store
                await trio.sleep(0.05)

    async with running(tmp_path, with_library=False, **env) as server:
        store = server.store
        async with third_party_server(state) as url:
            connector = await add_connector(
                store,
                "acme",
                "third",
                kind=ConnectorKind.REMOTE_MCP,
                url=url,
                headers={},
                secret=None,
                box=None,
                allowlist=LOOPBACK,
                actor="t",
            )
            await until(connector.id, {"search"})
            state.tools = [*state.tools, _tool("fetch", "Fetch", read_only_hint=True)]
            await until(connector.id, {"search", "fetch"})
        # Down: the refresher logs and tries again next round; the cache keeps what it had.
        with trio.fail_after(TIMEOUT_S):
            while not any("cannot list tools" in r.getMessage() for r in caplog.records):  # noqa: ASYNC110
                await trio.sleep(0.05)
        assert await cached_names(connector.id) == {"search", "fetch"}
        audit = await store.select(AuditEntry, action="tool.definition_changed")
        assert audit == []
