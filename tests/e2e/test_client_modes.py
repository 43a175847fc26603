"""One walk through a group endpoint in each protocol mode the `mcp` SDK's clients speak.

The same steps with the SDK's client pinned to 2026-07-28 (stateless), with
a 2025-11-25 session over Streamable HTTP and with a 2024-11-05 session over
legacy SSE: tools listed and called, resources and templates listed and
read (a line range too), a prompt with arguments, a destructive call
confirmed (elicitation on a session; ``input_required`` on 2026-07-28; a
confirm token on 2024-11-05, which has no elicitation), a queued write
call's outcome reaching the client (a log message on a session; a listen
stream's resource update on 2026-07-28), and a remote tool's progress.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.client.session
import mcp_types as types
import pytest
import trio
from mcp.shared.subscriptions import ResourceUpdated

from agentws.approvals.decisions import approve
from agentws.domain.models import Capability
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import MODERN, modern_client, running, sdk_session
from tests.e2e.polling import wait_for
from tests.e2e.relay_support import Remote, remote_server
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S, Outcomes, attach_remote
from tests.e2e.test_skill_arguments import add_review_skill

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

MODES = [MODERN, "2025-11-25", "2024-11-05"]
ENV = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_TOOL_TIMEOUT_S": "10"}
LABELS = {
    "third_progress": Capability.READ,
    "third_rich": Capability.DESTRUCTIVE,
    "third_failing": Capability.WRITE,
}


@asynccontextmanager
async def client_in(
    mode: str, server: Any, token: str, outcomes: Outcomes, **callbacks: Any
) -> AsyncIterator[Any]:
    """The SDK's client of the endpoint in ``mode``, with ``callbacks``."""
    if mode == MODERN:
        async with modern_client(server, token=token, **callbacks) as client:
            yield client
        return
    transport = "sse" if mode == "2024-11-05" else "streamable"
    old = mcp.client.session.LATEST_HANDSHAKE_VERSION
    mcp.client.session.LATEST_HANDSHAKE_VERSION = mode
    try:
        async with sdk_session(
            server, transport, token=token, logging_callback=outcomes, **callbacks
        ) as session:
            assert session.protocol_version == mode  # type: ignore[attr-defined]
            yield session
    finally:
        mcp.client.session.LATEST_HANDSHAKE_VERSION = old


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_one_walk_through_the_endpoint(tmp_path: Path, mode: str) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    outcomes = Outcomes()
    async with running(tmp_path, **ENV) as server, remote_server(Remote()) as url:
        await add_review_skill(server.store, tmp_path)
        await attach_remote(server.store, url, LABELS)
        lead = await create_token(
            server.store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
        )
        async with client_in(
            mode, server, lead.secret, outcomes, elicitation_callback=elicit
        ) as client:
            with trio.fail_after(TIMEOUT_S):
                # Tools, and a built-in's call.
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"search_context", "third_progress", "third_rich"} <= names
                found = await client.call_tool("search_context", {"query": "refund"})
                assert "Refund policy" in _text(found)

                # Resources and templates.
                uris = {str(r.uri) for r in (await client.list_resources()).resources}
                assert "agentws://handbook/refunds" in uris
                templates = (await client.list_resource_templates()).resource_templates
                assert {t.uri_template for t in templates} >= {"agentws://{library}/{document}"}
                first_line = await client.read_resource("agentws://handbook/refunds?lines=1")
                content = first_line.contents[0]
                assert isinstance(content, types.TextResourceContents)
                assert content.text.strip() == "# Refund policy"

                # A prompt with arguments.
                prompt = await client.get_prompt("review", {"language": "python"})
                message = prompt.messages[0].content
                assert isinstance(message, types.TextContent)
                assert "Review this python change." in message.text

                # Progress from a remote tool, under this client's token.
                done = await client.call_tool("third_progress", {}, progress_callback=on_progress)
                assert _text(done) == "done"
                assert progress == [1, 2, 3]

                # A destructive call, confirmed the way this mode can.
                ran = await client.call_tool("third_rich", {})
                if mode == "2024-11-05":
                    data = ran.structured_content or {}
                    assert data["status"] == "confirmation_required"
                    ran = await client.call_tool(
                        "third_rich", {data["confirm_argument"]: data["confirm_token"]}
                    )
                else:
                    assert len(asked) == 1 and "third_rich" in asked[0]
                assert ran.structured_content == {"total": 2, "items": ["a", "b"]}

                # A queued write call, and its outcome reaching this client.
                queued = await client.call_tool("third_failing", {})
                approval_id = (queued.structured_content or {})["approval_id"]
            if mode == MODERN:
                uri = f"agentws://approvals/{approval_id}"
                async with client.listen(resource_subscriptions=[uri]) as subscription:
                    await approve(server.store, approval_id, actor="admin", reason=None)
                    with trio.fail_after(TIMEOUT_S):
                        event = await subscription.__anext__()
                    assert event == ResourceUpdated(uri=uri)
                read = await client.read_resource(uri)
                told = json.loads(read.contents[0].text)
            else:
                await approve(server.store, approval_id, actor="admin", reason=None)
                told = await outcomes.wait(approval_id)
            # The remote's tool reported an error: the call ran, and failed.
            assert told["status"] in ("executed", "failed"), told
        # A session ends with its client (a legacy one once its stream is seen closed).
        await wait_for(lambda: len(server.runtime.sessions) == 0, what="no session left")
