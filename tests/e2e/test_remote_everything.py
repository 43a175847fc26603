"""A real third-party MCP server as a remote connector: Node's ``server-everything``.

``@modelcontextprotocol/server-everything`` (pinned in ``tests/node/package-lock.json``)
runs as its own process, once over Streamable HTTP (``/mcp``) and once over the
legacy HTTP+SSE transport (``/sse``, posting to ``/message``). agentws adds it
as connector ``everything`` of group ``ops`` as ``agentws connector add`` does
(fetch the tools, persist them in the tool cache), then an SDK client of the
group endpoint checks what a caller sees: every remote tool is ``write`` until
an admin labels it, whatever the server annotates; a write tool is refused; a
tool an admin labeled ``read`` is forwarded to the real server; and once the
server is gone, ``tools/list`` still answers from the cache while a call is a
prompt, readable tool error.

The package is installed by ``scripts/test`` (``npm ci`` in tests/node). Without
node or the package these tests fail, never skip: an interop check that
quietly does not run is worse than none.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio

from agentws.connectors.admin import attach_connector
from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
from agentws.domain.models import CachedTool, Capability
from agentws.tools.cache_sync import sync_tool_cache
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.node_support import NODE_DIR, free_port, require_node
from tests.e2e.polling import wait_for
from tests.e2e.remote_support import LOOPBACK, SDK_CLIENT_WARNINGS, add_remote
from tests.support import clean_env

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

PACKAGE = "@modelcontextprotocol/server-everything"
ENTRY = NODE_DIR / "node_modules" / PACKAGE / "dist" / "index.js"

# Node starts in well under a second; a loaded CI machine gets slack.
STARTUP_S = 15.0
# Every remote round trip here is local and immediate; this bounds a hang.
TIMEOUT_S = 10.0
# The cache answers tools/list: a dead remote must not slow it down.
CACHED_LIST_S = 5.0

# Mode (the server's argv) -> the path its MCP endpoint is served on.
MODES = {"streamableHttp": "/mcp", "sse": "/sse"}

# What server-everything 2026.8.31 registers when it creates a session ...
STATIC_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
# ... and in `oninitialized`, after the handshake: these need the client
# capabilities agentws declares (elicitation, sampling and roots, relayed to
# the calling client).
AFTER_INITIALIZED_TOOLS = {
    "get-roots-list",
    "simulate-research-query",
    "trigger-elicitation-request",
    "trigger-sampling-request",
    "trigger-url-elicitation",
}
ALL_TOOLS = STATIC_TOOLS | AFTER_INITIALIZED_TOOLS
# The ones whose annotations say readOnlyHint: true (the rest say false).
READ_ONLY_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-roots-list",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "trigger-long-running-operation",
}


@attrs.define
class Everything:
    """The running server: its MCP URL, its process, and where its output goes."""

    mode: str
    url: str
    process: trio.Process
    log: Path

    def output(self) -> str:
        """The server's last output lines, for failure messages."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])

    async def stop(self) -> None:
        """Kill the server and wait until it is gone (it no longer answers anything)."""
        self.process.kill()
        with trio.fail_after(TIMEOUT_S):
            await self.process.wait()


async def _wait_listening(server: Everything, port: int) -> None:
    # Connect until it works: Node prints its "listening" line on different
    # streams per mode, and a connection is what the test needs anyway.
    with trio.move_on_after(STARTUP_S):
        while True:
            if server.process.returncode is not None:
                pytest.fail(
                    f"server-everything ({server.mode}) exited with {server.process.returncode} "
                    f"while starting:\n{server.output()}",
                    pytrace=False,
                )
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:  # not listening yet
                await trio.sleep(0.02)
                continue
            await stream.aclose()
            return
    pytest.fail(
        f"server-everything ({server.mode}) did not listen on port {port} within "
        f"{STARTUP_S} s:\n{server.output()}",
        pytrace=False,
    )


@pytest.fixture
def node() -> str:
    # A sync fixture, so a missing install fails with its message alone, not
    # wrapped in the exception group of the async fixture's nursery.
    return require_node(PACKAGE)


@pytest.fixture(params=sorted(MODES))
async def everything(
    request: pytest.FixtureRequest, node: str, tmp_path: Path
) -> AsyncIterator[Everything]:
    """server-everything in the requested mode on a free loopback port; killed afterwards."""
    mode: str = request.param
    port = free_port()
    log = tmp_path / f"everything-{mode}.log"
    async with trio.open_nursery() as nursery:
        with log.open("wb") as out:
            # check=False: the test kills it, and a kill is not a failure.
            process: trio.Process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    [node, str(ENTRY), mode],
                    env=clean_env(PORT=str(port)),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    check=False,
                )
            )
        server = Everything(mode, f"http://127.0.0.1:{port}{MODES[mode]}", process, log)
        try:
            await _wait_listening(server, port)
            yield server
        finally:
            # Also when the test failed: no Node process may outlive its test.
            process.kill()
            with trio.move_on_after(TIMEOUT_S, shield=True):
                await process.wait()
            nursery.cancel_scope.cancel()


async def test_everything_as_a_remote_connector(tmp_path: Path, everything: Everything) -> None:
    # A tool deadline far above TIMEOUT_S: a call to the dead server must fail
    # because it is dead, not because the deadline ran out.
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "60"}
    async with running(tmp_path, with_library=False, **env) as server:
        store = server.store
        # What `agentws connector add` does: save, fetch the tools, cache them.
        connector = await add_remote(store, everything.url, name="everything")
        with trio.fail_after(TIMEOUT_S):
            with remote_deadline(connector, TIMEOUT_S):
                tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
        report = await sync_tool_cache(store, connector, tools, actor="t")
        assert set(report.added) == ALL_TOOLS, everything.output()
        await attach_connector(store, "acme", "ops", "everything", actor="t")

        # The server's read-only claims are kept as suggestions; nothing is labeled.
        cached = {t.name: t for t in await store.select(CachedTool, connector_id=connector.id)}
        claims_read = {n for n, t in cached.items() if t.annotations.get("readOnlyHint") is True}
        assert claims_read == READ_ONLY_TOOLS
        assert {n for n, t in cached.items() if t.suggested_label is Capability.READ} == (
            READ_ONLY_TOOLS
        )
        assert all(t.label is None and t.capability is Capability.WRITE for t in cached.values())

        exposed = {f"everything_{name}" for name in ALL_TOOLS} | {"get_approval"}
        for transport in ("streamable", "sse"):
            async with sdk_session(server, transport) as session:
                with trio.fail_after(TIMEOUT_S):
                    listed = {t.name: t for t in (await session.list_tools()).tools}
                assert set(listed) == exposed, transport
                for tool in (t for name, t in listed.items() if name != "get_approval"):
                    # Even echo and get-sum, which the server calls read-only.
                    assert (tool.description or "").startswith("[capability: write] "), tool
                    assert tool.annotations is not None
                    assert tool.annotations.read_only_hint is False, tool
                assert listed["everything_echo"].description == (
                    "[capability: write] Echoes back the input string"
                )
                # Unlabeled, so write: queued for an admin's approval, not run.
                with trio.fail_after(TIMEOUT_S):
                    queued = await session.call_tool("everything_echo", {"message": "hello"})
                assert not queued.is_error
                assert (queued.structured_content or {})["status"] == "queued"

        # The service's link to the server: over the transport the server speaks,
        # hearing its notifications. In SSE mode the server announces
        # tools/list_changed as it registers its post-handshake tool, on the
        # stream the link already holds (over Streamable HTTP it sends that
        # before the link's GET stream exists, so it is not asserted there).
        links = server.runtime.links
        await links.reconcile()
        await wait_for(lambda: links.states()[0].connected, timeout_s=TIMEOUT_S, what="link")
        link = links.states()[0]
        assert link.transport == ("sse" if everything.mode == "sse" else "streamable_http")
        if everything.mode == "sse":
            await wait_for(
                lambda: links.states()[0].list_changed >= 1,
                timeout_s=TIMEOUT_S,
                what="notifications/tools/list_changed",
            )

        # An admin labels echo read: now it runs, on the real server.
        await store.update(attrs.evolve(cached["echo"], label=Capability.READ))
        for transport in ("streamable", "sse"):
            async with sdk_session(server, transport) as session:
                with trio.fail_after(TIMEOUT_S):
                    result = await session.call_tool("everything_echo", {"message": "hello"})
                assert not result.is_error, result
                assert result.content[0].text == "Echo: hello"  # type: ignore[union-attr]
                with trio.fail_after(TIMEOUT_S):
                    queued = await session.call_tool("everything_get-sum", {"a": 1, "b": 2})
                assert (queued.structured_content or {})["status"] == "queued"

        # The server dies under an open session: the cache still answers
        # tools/list at once, and a call is a tool error, not a hang.
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                listed_before = (await session.list_tools()).tools
            await everything.stop()
            with trio.fail_after(CACHED_LIST_S):
                listed_after = (await session.list_tools()).tools
            assert listed_after == listed_before
            assert {t.name for t in listed_after} == exposed
            echo = next(t for t in listed_after if t.name == "everything_echo")
            assert (echo.description or "").startswith("[capability: read] ")
            # A refused connection fails at once, long before the 60 s deadline.
            with trio.fail_after(TIMEOUT_S):
                down = await session.call_tool("everything_echo", {"message": "hello"})
            assert down.is_error, down
            message = down.content[0].text  # type: ignore[union-attr]
            assert message.startswith("everything_echo failed: "), message
            assert "connector 'everything'" in message, message
            assert everything.url in message, message
