"""Tool permissions as Node's ``@modelcontextprotocol/sdk`` client gets them.

agentws serves in-process (``_served`` of :mod:`tests.e2e.test_permissions`):
its group's connector is a real third-party MCP server whose ``third_search``
is labeled read, ``third_send`` is write and ``third_drop`` destructive.
``tests/node/permissions.mjs`` calls the three with the TypeScript SDK client,
over legacy HTTP+SSE and over Streamable HTTP, with a token scoped up to
destructive:

- the read runs at once;
- the write is queued, reaches the upstream only when an admin approves it
  (``agentws approval approve`` in another process), and the still open
  session is told the outcome (``notifications/message``, logger
  ``agentws.approvals``);
- the destructive call runs once, after a confirmation: through
  elicitation when the client declares it, else through the one-time
  ``_confirm_token``, which never reaches the upstream.

The TS SDK offers its newest protocol version (2025-11-25) on both
transports, and agentws negotiates what the client offers, so elicitation is
possible on both: the mode is the client's choice (declaring the capability
or not), not the transport's.

The script prints one JSON line once its calls are done, waits for the
approval's outcome while the test approves, then prints a second line with
the notification. Without Node or the pinned SDK these tests fail, never
skip (see :mod:`tests.e2e.node_support`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from agentws.domain.models import Approval
from tests.e2e.node_support import NODE_DIR, Lines, require_node
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS
from tests.e2e.test_permissions import _admin, _destructive_token, _served
from tests.support import clean_env

# agentws's own client of the third party (the ``mcp`` SDK's) leaves these to the
# garbage collector; see :data:`tests.e2e.remote_support.SDK_CLIENT_WARNINGS`.
pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

SCRIPT = NODE_DIR / "permissions.mjs"
SDK = "@modelcontextprotocol/sdk"

# permissions.mjs's own hard limit for the whole run, approval wait included.
NODE_LIMIT_MS = 30_000
# Node's start-up, connecting and four or five calls.
CALLS_S = 20.0
# One ``agentws`` CLI run: interpreter start, store open, one command.
CLI_S = 60.0
# From the approval to the notification, and from the last line to the exit.
OUTCOME_S = 10.0
# Elicitation exists from this protocol version on (docs/permissions.md).
ELICITATION_SINCE = "2025-06-18"


def _version_has_elicitation(version: str) -> bool:
    known = list(KNOWN_PROTOCOL_VERSIONS)
    return version in known and known.index(version) >= known.index(ELICITATION_SINCE)


@pytest.mark.parametrize("mode", ["elicit", "token"])
@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_the_ts_client_gets_read_write_and_destructive_permissions(
    tmp_path: Path, transport: str, mode: str
) -> None:
    node = require_node(SDK)
    async with _served(tmp_path) as (server, state):
        token = await _destructive_token(server, "node")
        stderr_path = tmp_path / "node.stderr"
        with stderr_path.open("wb") as stderr:
            process = await trio.lowlevel.open_process(
                [
                    *(node, str(SCRIPT), "--transport", transport, "--url", server.url),
                    *("--mode", mode, "--timeout-ms", str(NODE_LIMIT_MS)),
                ],
                cwd=NODE_DIR,
                env=clean_env(AGENTWS_TOKEN=token),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        try:
            assert process.stdout is not None
            lines = Lines(process.stdout)

            async def document(what: str) -> dict[str, Any]:
                line = await lines.next()
                assert line, f"permissions.mjs ended before {what}:\n{stderr_path.read_text()}"
                parsed: dict[str, Any] = json.loads(line)
                return parsed

            with trio.fail_after(CALLS_S):
                out = await document("its calls were done")
            _check_calls(out, transport, mode, token)
            assert state.calls == ["search", "drop"]  # "send" waits for an admin
            assert state.arguments == [{"q": "x"}, {"q": "users"}]  # no _confirm_token
            approval_id = out["approvalId"]
            stored = await server.store.get(Approval, approval_id)
            assert (stored.status.value, stored.tool_name) == ("pending", "third_send")
            assert stored.arguments == {"q": "hello"}

            with trio.fail_after(CLI_S):
                code, said, err = await _admin(server, tmp_path, "approval", "approve", approval_id)
            assert code == 0, err
            assert "third_send ran" in said
            assert state.calls == ["search", "drop", "send"]
            assert state.arguments[-1] == {"q": "hello"}

            with trio.fail_after(OUTCOME_S):
                told = (await document("the approval's outcome arrived"))["notification"]
            assert told["logger"] == "agentws.approvals"
            assert told["level"] == "notice"
            data = told["data"]
            assert (data["approval_id"], data["tool"], data["status"]) == (
                approval_id,
                "third_send",
                "executed",
            )
            assert "third-party found: hello" in json.dumps(data["result"])

            with trio.fail_after(OUTCOME_S):
                assert await lines.next() is None
                returncode = await process.wait()
            assert returncode == 0, stderr_path.read_text()
            assert stderr_path.read_text() == ""
        finally:
            if process.returncode is None:
                process.kill()
                with trio.move_on_after(OUTCOME_S, shield=True):
                    await process.wait()
            if process.stdout is not None:
                await process.stdout.aclose()
        # Nothing ran twice, and the drop ran exactly once.
        assert state.calls == ["search", "drop", "send"]
        assert state.calls.count("drop") == 1
        assert state.arguments[state.calls.index("drop")] == {"q": "users"}


def _check_calls(out: dict[str, Any], transport: str, mode: str, token: str) -> None:
    """The first document: what each call returned to the TS client."""
    assert (out["transport"], out["mode"]) == (transport, mode)
    # Offered by the client, accepted by agentws on both transports.
    assert _version_has_elicitation(out["protocolVersion"]), out["protocolVersion"]
    assert "logging" in out["serverCapabilities"]
    assert token not in json.dumps(out)

    tools = {tool["name"]: tool for tool in out["tools"]}
    assert {"third_search", "third_send", "third_drop", "get_approval"} <= set(tools)
    assert "_confirm_token" in tools["third_drop"]["inputSchema"]["properties"]
    assert "_confirm_token" not in tools["third_send"]["inputSchema"]["properties"]

    search = out["search"]
    assert search["isError"] is False, search
    assert search["text"] == "third-party found: x"

    send = out["send"]
    assert send["isError"] is False, send  # queued is not an error
    assert send["structuredContent"]["status"] == "queued"
    approval_id = send["structuredContent"]["approval_id"]
    assert approval_id == out["approvalId"]
    assert approval_id.startswith("apr_")
    assert approval_id in send["text"]
    assert "Queued for admin approval" in send["text"]
    assert out["notificationsBeforeApproval"] == []

    drop = out["drop"]
    if mode == "elicit":
        # Asked within the call, once; accepted with the box ticked, it ran.
        (asked,) = out["elicitations"]
        assert "third_drop" in asked["message"]
        assert '"users"' in asked["message"]
        assert "confirm" in asked["requestedSchema"]["properties"]
        assert drop["isError"] is False, drop
        assert drop["text"] == "third-party found: users"
        assert out["dropConfirmed"] is None
    else:
        # No elicitation declared: a one-time token, then the call again with it.
        assert out["elicitations"] == []
        assert drop["isError"] is False, drop
        assert drop["structuredContent"]["status"] == "confirmation_required"
        confirm_token = drop["structuredContent"]["confirm_token"]
        assert confirm_token.startswith("agwcf_")
        assert confirm_token in drop["text"]
        assert "has NOT run" in drop["text"]
        confirmed = out["dropConfirmed"]
        assert confirmed["isError"] is False, confirmed
        assert confirmed["text"] == "third-party found: users"
