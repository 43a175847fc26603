"""The relay with a real third party: Node's ``server-everything`` as a remote connector.

Its long-running operation reports progress, its sampling and elicitation
tools ask the client: through agentws, an SDK client gets every progress
notification and is asked itself, over Streamable HTTP and over legacy
HTTP+SSE (one stream for everything: the request goes to the sole call in
flight). The package is installed by ``scripts/test``; without it these
tests fail, never skip.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientRequestContext

from agentws.domain.models import Capability
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.node_support import NODE_DIR, free_port, require_node
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, attach_remote
from tests.support import clean_env

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

PACKAGE = "@modelcontextprotocol/server-everything"
ENTRY = NODE_DIR / "node_modules" / PACKAGE / "dist" / "index.js"
# Mode (the server's argv) -> the path its MCP endpoint is served on.
MODES = {"streamableHttp": "/mcp", "sse": "/sse"}
# Node starts in well under a second; a loaded CI machine gets slack.
STARTUP_S = 15.0
TIMEOUT_S = 15.0
RELAYED = (
    "trigger-long-running-operation",
    "trigger-sampling-request",
    "trigger-elicitation-request",
)


@pytest.fixture
def node() -> str:
    return require_node(PACKAGE)


@pytest.fixture(params=sorted(MODES))
async def everything_url(request: pytest.FixtureRequest, node: str) -> AsyncIterator[str]:
    """server-everything in the requested mode on a free loopback port; killed afterwards."""
    mode: str = request.param
    port = free_port()
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                [node, str(ENTRY), mode],
                env=clean_env(PORT=str(port)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        )
        try:
            with trio.fail_after(STARTUP_S):
                while True:
                    try:
                        stream = await trio.open_tcp_stream("127.0.0.1", port)
                    except OSError:  # not listening yet
                        await trio.sleep(0.02)
                        continue
                    await stream.aclose()
                    break
            yield f"http://127.0.0.1:{port}{MODES[mode]}"
        finally:
            process.kill()
            with trio.move_on_after(TIMEOUT_S, shield=True):
                await process.wait()
            nursery.cancel_scope.cancel()


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi"), model="relay-model"
    )


async def _elicit(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "ada"})


async def test_progress_sampling_and_elicitation_from_server_everything(
    tmp_path: Path, everything_url: str
) -> None:
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "30"}
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with running(tmp_path, with_library=False, **env) as server:
        labels = {f"third_{name}": Capability.READ for name in RELAYED}
        await attach_remote(server.store, everything_url, labels)
        async with sdk_session(
            server, "streamable", sampling_callback=_sample, elicitation_callback=_elicit
        ) as session:
            with trio.fail_after(TIMEOUT_S):
                done = await session.call_tool(
                    "third_trigger-long-running-operation",
                    {"duration": 0.2, "steps": 4},
                    progress_callback=on_progress,
                )
                sampled = await session.call_tool(
                    "third_trigger-sampling-request", {"prompt": "hello"}
                )
                elicited = await session.call_tool("third_trigger-elicitation-request", {})
    assert not done.is_error, done
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert not sampled.is_error, sampled
    assert "relay-model" in sampled.content[0].text  # type: ignore[union-attr]
    texts = "\n".join(c.text for c in elicited.content if isinstance(c, types.TextContent))
    assert "User provided the requested information" in texts, texts
    assert '"name": "ada"' in texts
