"""The relay of a remote MCP connector whose link speaks the stateless revision (2026-07-28).

The remote of :mod:`tests.e2e.relay_support`, speaking 2026-07-28 too, so
that agentws's link to it does; it asks with ``input_required`` results
under its own keys. A caller of 2026-07-28 gets those questions as they are
(only the ``requestState`` is agentws's, bound to the caller's token, the
tool and its arguments); a caller of a handshake revision is asked through
its callbacks, as when the remote asks with requests; progress and log
messages come through either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientRequestContext

from agentws.domain.models import AuditEntry, Capability
from agentws.tools.admin import set_label
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import MODERN, Running, modern_client, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.relay_support import Remote
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S
from tests.e2e.test_relay_remote import _sample, _text, relayed

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ELICITATION_ONLY = {"elicitation": {"form": {}}}


def _modern_remote() -> Remote:
    return Remote(handshake_only=False)


async def _call(
    server: Running, name: str, params: dict[str, Any], capabilities: dict[str, Any]
) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` of ``name``, on the wire; its JSON-RPC response."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    headers = {
        **server.headers(),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, **params, "_meta": meta},
    }
    async with httpx2.AsyncClient(timeout=TIMEOUT_S) as http:
        response = await http.post(server.url, content=json.dumps(body), headers=headers)
    assert response.status_code in (200, 400), response.text
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line for line in text.splitlines() if line.startswith("data:")][-1][5:]
    answer: dict[str, Any] = json.loads(text)
    return answer


async def test_a_modern_caller_gets_the_remotes_own_questions(tmp_path: Path) -> None:
    state = _modern_remote()
    async with relayed(tmp_path, state) as server:
        with trio.fail_after(TIMEOUT_S):
            first = await _call(server, "third_ask", {"arguments": {"who": "x"}}, ELICITATION_ONLY)
            asked = first["result"]
            [link] = server.runtime.links.states()
            assert link.protocol_version == MODERN
            assert asked["resultType"] == "input_required"
            # The remote's key, the remote's question.
            assert list(asked["inputRequests"]) == ["user_name"]
            assert asked["inputRequests"]["user_name"]["method"] == "elicitation/create"
            # The state is agentws's, wrapping the remote's.
            wrapped = asked["requestState"]
            assert wrapped.startswith("agwr_")
            assert "remote-state" not in wrapped
            # The remote was told what the caller can answer, not what the link can.
            declared = state.capabilities[-1]
            assert declared is not None and declared.elicitation is not None
            assert declared.sampling is None

            answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
            retry = {"arguments": {"who": "x"}, "requestState": wrapped, "inputResponses": answer}

            # Altered, or brought to another call: refused, saying so.
            for name, params in (
                ("third_ask", {**retry, "requestState": wrapped + "-TAMPERED"}),
                ("third_ask", {**retry, "requestState": wrapped[:-4] + "AAAA"}),
                ("third_ask", {**retry, "arguments": {"who": "y"}}),
                ("third_sample", {**retry, "arguments": {}}),
            ):
                refused = await _call(server, name, params, ELICITATION_ONLY)
                assert refused["error"]["code"] == types.INVALID_PARAMS, (name, refused)
                assert "requestState" in refused["error"]["message"]
            assert state.request_states == [None]  # none of these reached the remote

            done = await _call(server, "third_ask", retry, ELICITATION_ONLY)
            assert done["result"]["content"][0]["text"] == "accept: Ada"
            # The remote got its own state back, and the answer under its own key.
            assert state.request_states[-1] == "remote-state-ask"
            assert list(state.input_responses[-1]) == ["user_name"]

            # An answer with the first call (and more than was asked) goes through.
            extra = {**answer, "unknown": {"action": "accept", "content": {}}}
            at_once = await _call(
                server, "third_ask", {"arguments": {}, "inputResponses": extra}, ELICITATION_ONLY
            )
            assert at_once["result"]["content"][0]["text"] == "accept: Ada"
            assert state.request_states[-1] is None

        # Each round went through the gate and was audited (in batches: wait for them).
        entries = await wait_until(
            lambda: server.store.select(AuditEntry, action="tool.call", target="third_ask"),
            lambda entries: len(entries) == 3,
            timeout_s=TIMEOUT_S,
            what="three rounds of third_ask in the audit log",
        )
    rounds = [entry.detail for entry in entries]
    assert [detail.get("input_required") for detail in rounds] == [["user_name"], None, None]
    assert all(detail["decision"] == "run" for detail in rounds)


async def test_a_question_the_caller_did_not_declare_is_refused(tmp_path: Path) -> None:
    async with relayed(tmp_path, _modern_remote()) as server:
        with trio.fail_after(TIMEOUT_S):
            failed = await _call(server, "third_sample", {"arguments": {}}, ELICITATION_ONLY)
    # The remote here asks whatever it wants: agentws holds the line.
    assert failed["error"]["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert failed["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def _elicit(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work/repo", name="repo")])


async def test_the_sdk_client_answers_the_remote_through_agentws(tmp_path: Path) -> None:
    async with (
        relayed(tmp_path, _modern_remote()) as server,
        modern_client(server, elicitation_callback=_elicit, sampling_callback=_sample) as client,
    ):
        with trio.fail_after(TIMEOUT_S):
            assert _text(await client.call_tool("third_ask", {})) == "accept: Ada"
            sampled = await client.call_tool("third_sample", {})
    assert _text(sampled) == "sampled by test-model: hi"


async def test_a_handshake_caller_is_asked_through_its_callbacks(tmp_path: Path) -> None:
    callbacks: dict[str, Any] = {
        "elicitation_callback": _elicit,
        "sampling_callback": _sample,
        "list_roots_callback": _roots,
    }
    async with relayed(tmp_path, _modern_remote()) as server:
        async with sdk_session(server, "streamable", **callbacks) as session:
            with trio.fail_after(TIMEOUT_S):
                asked = _text(await session.call_tool("third_ask", {}))
                sampled = _text(await session.call_tool("third_sample", {}))
                listed = _text(await session.call_tool("third_roots", {}))
        async with sdk_session(server, "sse") as session:
            with trio.fail_after(TIMEOUT_S):
                refused = await session.call_tool("third_sample", {})
    assert asked == "accept: Ada"
    assert sampled == "sampled by test-model: hi"
    assert listed == "roots: file:///work/repo"
    assert refused.is_error
    assert "the calling client does not support sampling" in _text(refused)


async def test_progress_and_logs_come_over_a_modern_link(tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    heard: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append(params.level)

    state = _modern_remote()
    async with relayed(tmp_path, state) as server:
        async with sdk_session(server, "streamable", logging_callback=on_log) as session:
            with trio.fail_after(TIMEOUT_S):
                done = await session.call_tool("third_progress", {}, progress_callback=on_progress)
                assert _text(done) == "done"
                assert _text(await session.call_tool("third_logs", {})) == "logged"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert heard == ["debug", "info", "warning", "error"]
        seen.clear()
        async with modern_client(server) as client:
            with trio.fail_after(TIMEOUT_S):
                done = await client.call_tool("third_progress", {}, progress_callback=on_progress)
        assert _text(done) == "done"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_a_confirmed_call_is_not_asked_again_in_its_later_rounds(tmp_path: Path) -> None:
    asked: list[str] = []

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True, "name": "Ada"})

    state = _modern_remote()
    async with relayed(tmp_path, state) as server:
        await set_label(server.store, "acme", "third_ask", Capability.DESTRUCTIVE, actor="admin")
        lead = await create_token(
            server.store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
        )
        async with modern_client(server, token=lead.secret, elicitation_callback=answer) as client:
            with trio.fail_after(TIMEOUT_S):
                result = await client.call_tool("third_ask", {})
    assert _text(result) == "accept: Ada"
    # agentws's confirmation first, then the remote's own question; no second confirmation.
    assert len(asked) == 2
    assert "third_ask" in asked[0]
    assert asked[1] == "Connector 'third' asks: Your name?"
    # The answer to the confirmation was agentws's: the remote never saw it.
    assert [sorted(responses) for responses in state.input_responses] == [[], ["user_name"]]
