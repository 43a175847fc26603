"""The relay of a remote MCP connector for clients of the stateless revision (2026-07-28).

The remote of :mod:`tests.e2e.relay_support` attached to a running agentws;
the SDK's client pinned to 2026-07-28 calls its tools through agentws:
every content type intact, progress under the client's token on the
request's stream, log messages only when the request opted in, and the
remote's elicitation and sampling requests as ``input_required`` rounds the
client answers (its callbacks run; the remote gets the answers); a question
the client did not declare the capability for fails the call with -32021.
A call's answer is JSON when it comes within the SDK's wait, else an SSE
stream pinged until it ends with the answer; a client that hangs up has its
call cancelled at the remote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPError

from agentws.doors.mcp.dispatch import modern
from tests.e2e.mcp_support import MODERN, Running, modern_client
from tests.e2e.relay_support import PNG, Remote
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S
from tests.e2e.test_relay_remote import _text, relayed

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)


async def test_results_progress_and_logs_reach_a_modern_client(tmp_path: Path) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logged: list[types.LoggingMessageNotificationParams] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    state = Remote()
    async with relayed(tmp_path, state) as server:
        async with modern_client(server, logging_callback=on_log) as client:
            with trio.fail_after(TIMEOUT_S):
                rich = await client.call_tool("third_rich", {})
                assert rich.structured_content == {"total": 2, "items": ["a", "b"]}
                image = rich.content[1]
                assert isinstance(image, types.ImageContent) and image.data == PNG

                done = await client.call_tool("third_progress", {}, progress_callback=on_progress)
                assert _text(done) == "done"
                assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
                assert state.progress_tokens[0] is not None

                # No opt-in, no log messages (the revision's rule).
                assert _text(await client.call_tool("third_logs", {})) == "logged"
                assert logged == []
        async with modern_client(server, logging_callback=on_log, log_level="warning") as client:
            with trio.fail_after(TIMEOUT_S):
                await client.call_tool("third_logs", {})
            assert [p.level for p in logged] == ["warning", "error"]


async def test_elicitation_and_sampling_become_input_required_rounds(tmp_path: Path) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi"), model="m1"
        )

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/repo")])

    async with (
        relayed(tmp_path, Remote()) as server,
        modern_client(
            server, elicitation_callback=elicit, sampling_callback=sample, list_roots_callback=roots
        ) as client,
    ):
        with trio.fail_after(TIMEOUT_S):
            answered = await client.call_tool("third_ask", {"who": "me"})
            assert _text(answered) == "accept: Ada"
            assert asked == ["Connector 'third' asks: Your name? (me)"]
            sampled = await client.call_tool("third_sample", {})
            assert _text(sampled) == "sampled by m1: hi"
            listed = await client.call_tool("third_roots", {})
            assert _text(listed) == "roots: file:///work/repo"
        assert len(server.runtime.sessions) == 0


async def test_the_wire_of_a_round_and_what_another_token_cannot_do(tmp_path: Path) -> None:
    async with relayed(tmp_path, Remote()) as server:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }

        async def call(params: dict[str, Any], token: str | None = None) -> httpx2.Response:
            headers = {
                **server.headers(token),
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "third_ask",
            }
            body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
            async with httpx2.AsyncClient(timeout=TIMEOUT_S) as http:
                return await http.post(server.url, content=json.dumps(body), headers=headers)

        first = await call({"name": "third_ask", "arguments": {"who": "x"}, "_meta": meta})
        assert first.status_code == 200, first.text
        result = first.json()["result"]
        assert result["resultType"] == "input_required"
        [(key, question)] = result["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        state = result["requestState"]

        answer = {key: {"action": "decline"}}
        retry = {"name": "third_ask", "_meta": meta, "requestState": state}
        stranger = await call({**retry, "inputResponses": answer}, token=server.other_token)
        assert stranger.status_code in (401, 403)  # another group's token is not let in
        done = await call({**retry, "inputResponses": answer})
        assert done.status_code == 200, done.text
        assert done.json()["result"]["content"][0]["text"] == "decline: None"
        # The call is over: its state continues nothing.
        again = await call({**retry, "inputResponses": answer})
        assert again.json()["error"]["code"] == types.INVALID_PARAMS


async def test_a_question_the_client_cannot_take_fails_with_missing_capability(
    tmp_path: Path,
) -> None:
    async with relayed(tmp_path, Remote()) as server, modern_client(server) as client:
        with trio.fail_after(TIMEOUT_S):
            with pytest.raises(MCPError) as failed:
                await client.call_tool("third_sample", {})
        error = failed.value.error
        assert error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert error.data == {"requiredCapabilities": {"sampling": {}}}


def _stateless_call(server: Running, tool: str) -> tuple[dict[str, str], bytes]:
    """The headers and body of a stateless ``tools/call`` of ``tool``, without progress or logs."""
    headers = {
        **server.headers(),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": {}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
    return headers, json.dumps(body).encode()


@pytest.mark.parametrize("link", ["handshake", MODERN])
async def test_a_stateless_caller_that_hangs_up_has_its_call_cancelled_at_the_remote(
    tmp_path: Path, link: str
) -> None:
    state = Remote(handshake_only=link == "handshake")
    async with relayed(tmp_path, state) as server:
        headers, body = _stateless_call(server, "third_slow")
        with trio.fail_after(TIMEOUT_S):
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    async with httpx2.AsyncClient(timeout=TIMEOUT_S) as http:
                        await http.post(server.url, content=body, headers=headers)

                nursery.start_soon(call)
                await state.slow_started.wait()
                nursery.cancel_scope.cancel()  # the client closes its connection
            await state.slow_cancelled.wait()


async def test_a_stateless_call_still_running_after_the_wait_is_answered_as_a_pinged_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = Remote()
    async with relayed(tmp_path, state) as server:
        async with httpx2.AsyncClient(timeout=TIMEOUT_S) as http:
            headers, body = _stateless_call(server, "third_logs")
            quick = await http.post(server.url, content=body, headers=headers)
            assert quick.headers["content-type"] == "application/json", quick.text
            assert quick.json()["result"]["content"][0]["text"] == "logged"

            # The SDK's handler waits 15 s before it commits to SSE; a shorter wait here.
            monkeypatch.setattr(modern, "SSE_REPLY_PING_S", 0.2)
            headers, body = _stateless_call(server, "third_slow")
            with trio.fail_after(TIMEOUT_S):
                request = http.build_request("POST", server.url, content=body, headers=headers)
                response = await http.send(request, stream=True)
                assert response.status_code == 200
                assert response.headers["content-type"] == "text/event-stream"
                lines = response.aiter_lines()
                assert await anext(lines) == ": ping"
                state.slow_release.set()
                rest = [line async for line in lines]
                await response.aclose()
        events = [
            json.loads(line.removeprefix("data: ")) for line in rest if line.startswith("data: ")
        ]
        assert events[-1]["id"] == 5
        assert events[-1]["result"]["content"][0]["text"] == "slow, done"
        assert not state.slow_cancelled.is_set()
