"""Native actions' path arguments cannot change the endpoint (issue 21, path traversal).

Every native action that puts an argument into a request's path is called
with hostile values (dot segments, slashes, query and fragment marks,
percent-escapes, backslashes, Unicode look-alikes, control characters) and
with legal ones, at a recording server that keeps each raw request line:
the line must be exactly the intended endpoint, or there is no request at
all and the caller gets a tool error naming the argument. The refusal is
made by the permission gate, before a write is queued for approval or a
destructive call asks for confirmation, so the MCP door and webhook runs
get it there; the action itself refuses again (approved calls run from
there).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types
import pytest
import trio

from agentws.approvals.decisions import approve
from agentws.connectors.admin import ConnectorSecret, add_connector, attach_connector
from agentws.connectors.native import ACTIONS, run_action
from agentws.domain.allowlist import Allowlist
from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    Capability,
    ChatMessage,
    Connector,
    ConnectorKind,
    EventAttempt,
    EventStatus,
    Group,
    McpToken,
)
from agentws.settings.secret_box import SecretBox, ensure_key_file
from agentws.tools.approval_queue import QueueLimits, queue_call
from agentws.tools.caller import ToolCaller
from agentws.tools.catalog import group_tool
from agentws.workspaces.admin import create_token
from tests.e2e.fake_anthropic import Reply, Turn
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.run_support import deliver, finished, hook, served

LOOPBACK = Allowlist.parse("127.0.0.1/32")
TIMEOUT_S = 10.0
TOKEN = "ghp_fake_token_0123456789"
GITHUB, SLACK, STRIPE = ConnectorKind.GITHUB, ConnectorKind.SLACK, ConnectorKind.STRIPE
# Where each kind's fake lives under the recording server (GitHub Enterprise has a path too).
PREFIX = {GITHUB: "/github", SLACK: "/slack/api", STRIPE: "/stripe"}


@attrs.define
class Recorder:
    """Request lines exactly as they arrived (``GET /x?y HTTP/1.1``)."""

    lines: list[str] = attrs.field(factory=list)


@asynccontextmanager
async def recording_server() -> AsyncIterator[tuple[str, Recorder]]:
    """A bare HTTP/1.1 server on loopback that records each raw request line, answers 200 ``{}``.

    No HTTP library on this side: nothing decodes or normalises the target
    before it is recorded.
    """
    recorder = Recorder()

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            line, *fields = head.split(b"\r\n")
            recorder.lines.append(line.decode("latin-1"))
            length = 0
            for field in fields:
                name, _, value = field.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length:
                body += await stream.receive_some(65536)
            answer = b'{"ok": true}'
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(answer), answer)
            )

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}", recorder
        nursery.cancel_scope.cancel()


def _connector(kind: ConnectorKind, base: str) -> Connector:
    return Connector(workspace_id="ws_x", name=kind.value, kind=kind, url=base + PREFIX[kind])


async def _call(
    base: str, kind: ConnectorKind, action: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    with trio.fail_after(TIMEOUT_S):
        return await run_action(
            _connector(kind, base),
            ACTIONS[kind][action],
            arguments,
            headers={},
            allowlist=LOOPBACK,
        )


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


# Every argument of a native action that reaches a path (or, for list_charges,
# names a Stripe object), with legal values for the others.
PATH_ARGUMENTS = [
    (GITHUB, "list_repos", {"org": "acme-org"}, "org"),
    (GITHUB, "create_issue", {"owner": "acme-org", "repo": "prod-repo", "title": "t"}, "owner"),
    (GITHUB, "create_issue", {"owner": "acme-org", "repo": "prod-repo", "title": "t"}, "repo"),
    (GITHUB, "delete_branch", {"owner": "acme-org", "repo": "prod-repo", "branch": "x"}, "owner"),
    (GITHUB, "delete_branch", {"owner": "acme-org", "repo": "prod-repo", "branch": "x"}, "repo"),
    (GITHUB, "delete_branch", {"owner": "acme-org", "repo": "prod-repo", "branch": "x"}, "branch"),
    (STRIPE, "get_customer", {"customer_id": "cus_1"}, "customer_id"),
    (STRIPE, "list_charges", {"customer_id": "cus_1"}, "customer_id"),
]

# Values that must never reach the upstream in any of those arguments.
HOSTILE = [
    "..",
    ".",
    "../../..",
    "../../v1/balance",
    "../../user/emails?",
    "prod-repo/actions/runs/42/approve?",
    "prod-repo/actions/runs/approve#",
    "x/../../..",
    "x?y=1",
    "%2e%2e",
    "%2E%2E%2Fuser",
    "x%2f..%2f..",
    "..%2f..",
    "x%00",
    "..\\..\\user",
    "x\\y",
    "\uff0e\uff0e",  # fullwidth full stops
    "x\uff0fy",  # fullwidth solidus
    "x\u2215y",  # division slash
    "x\u2024\u2024",  # one dot leaders
    "x\u200b",  # zero-width space
    "x y",
    "x\r\nX-Injected: 1",
    "x\ty",
    "x\x00y",
    "",
    "x" * 300,
]
# What each grammar refuses beyond HOSTILE (git's own rules for branches).
MORE_HOSTILE = {
    "org": ["-acme", "acme.org", "x" * 40],
    "owner": ["-acme", "acme.org", "acme org"],
    "repo": ["my repo", "x" * 101, "repo:1"],
    "branch": [
        "a.lock",
        "x/a.lock/y",
        "a@{1}",
        "@",
        "-x",
        "HEAD",
        "a//b",
        "/a",
        "a/",
        "a.",
        "x/.hidden",
        "a~1",
        "a^",
        "a:b",
        "a*",
        "a[b",
        "a\x7f",
    ],
    "customer_id": ["cus", "_x", "cus_x-y", "cus_1.json"],
}
# A legal git branch name: it stays under git/refs/heads (see LEGAL).
LEGAL_ELSEWHERE = {("branch", "prod-repo/actions/runs/approve#")}


@pytest.mark.parametrize(
    ("kind", "action", "arguments", "argument", "value"),
    [
        pytest.param(kind, action, arguments, argument, value, id=f"{action}-{argument}-{i}")
        for kind, action, arguments, argument in PATH_ARGUMENTS
        for i, value in enumerate(HOSTILE + MORE_HOSTILE[argument])
        if (argument, value) not in LEGAL_ELSEWHERE
    ],
)
async def test_a_hostile_path_argument_is_refused_and_nothing_is_sent(
    kind: ConnectorKind, action: str, arguments: dict[str, Any], argument: str, value: str
) -> None:
    async with recording_server() as (base, recorder):
        result = await _call(base, kind, action, {**arguments, argument: value})
    assert recorder.lines == []
    assert result.is_error
    assert f"{kind.value}_{action}: {argument}: " in _text(result)
    assert "nothing was sent" in _text(result)


# Legal values and the exact request line each must produce.
LEGAL = [
    (GITHUB, "list_repos", {"org": "acme-org"}, "GET /github/orgs/acme-org/repos?per_page=20"),
    (GITHUB, "list_repos", {"org": "ada_acme"}, "GET /github/orgs/ada_acme/repos?per_page=20"),
    (GITHUB, "list_repos", {}, "GET /github/user/repos?per_page=20"),
    (
        GITHUB,
        "create_issue",
        {"owner": "acme-org", "repo": "prod-repo", "title": "../../x?#"},
        "POST /github/repos/acme-org/prod-repo/issues",
    ),
    (
        GITHUB,
        "create_issue",
        {"owner": "Acme", "repo": ".github", "title": "t"},
        "POST /github/repos/Acme/.github/issues",
    ),
    (
        GITHUB,
        "create_issue",
        {"owner": "a", "repo": "my.repo_name-2", "title": "t"},
        "POST /github/repos/a/my.repo_name-2/issues",
    ),
    # A branch with slashes: its parts are path segments, as in GitHub's own ref URLs.
    (
        GITHUB,
        "delete_branch",
        {"owner": "acme-org", "repo": "prod-repo", "branch": "feature/x"},
        "DELETE /github/repos/acme-org/prod-repo/git/refs/heads/feature/x",
    ),
    (
        GITHUB,
        "delete_branch",
        {"owner": "acme-org", "repo": "prod-repo", "branch": "release/v1.2.3"},
        "DELETE /github/repos/acme-org/prod-repo/git/refs/heads/release/v1.2.3",
    ),
    # Characters git allows but a path gives meaning to are percent-encoded.
    (
        GITHUB,
        "delete_branch",
        {"owner": "acme-org", "repo": "prod-repo", "branch": "fix#12+a=b"},
        "DELETE /github/repos/acme-org/prod-repo/git/refs/heads/fix%2312%2Ba%3Db",
    ),
    (
        GITHUB,
        "delete_branch",
        {"owner": "acme-org", "repo": "prod-repo", "branch": "prod-repo/actions/runs/approve#"},
        "DELETE /github/repos/acme-org/prod-repo/git/refs/heads/prod-repo/actions/runs/approve%23",
    ),
    (
        STRIPE,
        "get_customer",
        {"customer_id": "cus_NffrFeUfNV2Hib"},
        "GET /stripe/v1/customers/cus_NffrFeUfNV2Hib",
    ),
    (
        STRIPE,
        "list_charges",
        {"customer_id": "cus_1"},
        "GET /stripe/v1/charges?limit=10&customer=cus_1",
    ),
    # Arguments that only travel in a query or a body cannot reach the path.
    (
        GITHUB,
        "search_issues",
        {"query": "../../user/emails?#"},
        "GET /github/search/issues?q=..%2F..%2Fuser%2Femails%3F%23&per_page=20",
    ),
    (
        SLACK,
        "post_message",
        {"channel": "../../admin.users.remove?", "text": "../x", "thread_ts": "../1"},
        "POST /slack/api/chat.postMessage",
    ),
    (SLACK, "list_channels", {"limit": 5}, "GET /slack/api/conversations.list?limit=5"),
]


@pytest.mark.parametrize(
    ("kind", "action", "arguments", "line"),
    [pytest.param(*case, id=f"{case[1]}-{i}") for i, case in enumerate(LEGAL)],
)
async def test_a_legal_argument_reaches_exactly_the_intended_endpoint(
    kind: ConnectorKind, action: str, arguments: dict[str, Any], line: str
) -> None:
    async with recording_server() as (base, recorder):
        result = await _call(base, kind, action, arguments)
    assert not result.is_error, _text(result)
    assert recorder.lines == [f"{line} HTTP/1.1"]


def test_the_tables_cover_every_native_action_and_path_argument() -> None:
    """A new action, or a new path argument, must join the tables above."""
    covered = {(action, argument) for _, action, _, argument in PATH_ARGUMENTS}
    declared = {
        (name, argument)
        for actions in ACTIONS.values()
        for name, action in actions.items()
        for argument in action.path_arguments
    }
    assert declared == covered
    every = {(kind, name) for kind, actions in ACTIONS.items() for name in actions}
    assert {(kind, action) for kind, action, *_ in LEGAL} == every


# Through the real MCP endpoint: refused by the gate, before approval or confirmation.


async def _github(server: Running, base: str) -> None:
    box = SecretBox.from_settings(server.runtime.settings)
    await add_connector(
        server.store,
        "acme",
        "github",
        kind=GITHUB,
        url=base + PREFIX[GITHUB],
        headers={},
        secret=ConnectorSecret(TOKEN),
        box=box,
        allowlist=LOOPBACK,
        actor="t",
    )
    await attach_connector(server.store, "acme", "ops", "github", actor="t")


async def test_the_mcp_door_refuses_before_a_request_an_approval_or_a_confirmation(
    tmp_path: Path,
) -> None:
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_DATA_DIR": str(tmp_path)}
    ensure_key_file(tmp_path)
    async with (
        recording_server() as (base, recorder),
        running(tmp_path, with_library=False, **env) as server,
    ):
        await _github(server, base)
        reader = await create_token(
            server.store, "acme", "ops", name="reader", scope=Capability.READ, actor="t"
        )
        admin = await create_token(
            server.store, "acme", "ops", name="ops", scope=Capability.DESTRUCTIVE, actor="t"
        )
        async with sdk_session(server, "streamable", token=reader.secret) as session:
            with trio.fail_after(TIMEOUT_S):
                emails = await session.call_tool("github_list_repos", {"org": "../../user/emails?"})
        async with sdk_session(server, "sse", token=admin.secret) as session:
            with trio.fail_after(TIMEOUT_S):
                # Destructive: refused at once, never a confirm token for it.
                repo = await session.call_tool(
                    "github_delete_branch",
                    {"owner": "acme-org", "repo": "prod-repo", "branch": "../../.."},
                )
                # Write: refused at once, never queued for an admin to approve.
                approve = await session.call_tool(
                    "github_create_issue",
                    {
                        "owner": "acme-org",
                        "repo": "prod-repo/actions/runs/42/approve?",
                        "title": "x",
                    },
                )
                # A legal branch with a slash still asks for confirmation.
                legal = await session.call_tool(
                    "github_delete_branch",
                    {"owner": "acme-org", "repo": "prod-repo", "branch": "feature/x"},
                )
        approvals = await server.store.select(Approval)
        # Calls are audited in batches: wait until the refusals are there.
        with trio.fail_after(TIMEOUT_S):
            while len(audit := await _refusals_audited(server)) < 3:  # noqa: ASYNC110 - batches land in the store
                await trio.sleep(0.05)

    assert recorder.lines == []
    assert approvals == []
    for result, argument in ((emails, "org"), (repo, "branch"), (approve, "repo")):
        assert result.is_error
        assert f": {argument}: " in _text(result), _text(result)
        assert (result.structured_content or {}).get("confirm_token") is None
    assert _text(emails).startswith("Invalid arguments for github_list_repos: org: ")
    assert not legal.is_error
    assert (legal.structured_content or {}).get("confirm_token")
    assert sorted(audit) == ["github_create_issue", "github_delete_branch", "github_list_repos"]


async def test_an_approved_call_queued_before_the_check_sends_nothing(tmp_path: Path) -> None:
    # A call queued by a server without the check runs from the approval:
    # the action refuses it there.
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_DATA_DIR": str(tmp_path)}
    ensure_key_file(tmp_path)
    arguments = {"owner": "acme-org", "repo": "prod-repo/actions/runs/42/approve?", "title": "x"}
    async with (
        recording_server() as (base, recorder),
        running(tmp_path, with_library=False, **env) as server,
    ):
        await _github(server, base)
        (group,) = await server.store.select(Group, slug="ops")
        tool = await group_tool(server.store, group, "github_create_issue")
        assert tool is not None
        (token,) = await server.store.select(McpToken, name="tests")
        queued = await queue_call(
            server.store,
            ToolCaller.mcp(token.id, token.scope, group, None),
            tool,
            CallArguments.of(tool.name, arguments, tool.input_schema),
            box=None,
            limits=QueueLimits.from_settings(server.runtime.settings),
        )
        await approve(server.store, queued.id, actor="admin", reason=None)
        with trio.fail_after(10):  # the service runs it
            outcome = await server.runtime.approval_runs.outcome(queued.id)

    assert recorder.lines == []
    assert outcome.status is ApprovalStatus.FAILED
    assert outcome.error is not None
    assert outcome.error.startswith("github_create_issue: repo: ")
    assert outcome.error.endswith("nothing was sent")


async def _refusals_audited(server: Running) -> list[str]:
    entries = await server.store.select(AuditEntry, action="tool.call")
    return [e.target for e in entries if e.detail["outcome"] == "invalid_arguments"]


async def test_a_webhook_run_steered_by_its_payload_sends_nothing(tmp_path: Path) -> None:
    # The model falls for the payload: it calls a write tool the webhook may
    # use without approval, with a repository that would climb to another endpoint.
    steered = {"owner": "acme-org", "repo": "prod-repo/actions/runs/42/approve?", "title": "x"}
    replies: list[Reply] = [
        Turn("Filing it.", (("github_create_issue", steered),)),
        Turn("Could not file the issue."),
    ]
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
    async with (
        recording_server() as (base, recorder),
        served(tmp_path, replies, **env) as (server, fake),
    ):
        await _github(server, base)
        issued = await hook(server, group="ops", allow_tools=("github_create_issue",))
        event_id = await deliver(issued, {"repo": steered["repo"]})
        assert (await finished(server.store, event_id)).status is EventStatus.DONE
        (attempt,) = await server.store.select(EventAttempt, event_id=event_id)
        assert await server.store.select(ChatMessage, event_id=event_id)
        assert await server.store.select(Approval) == []

    assert recorder.lines == []
    (call,) = attempt.tool_calls["calls"]
    assert call["outcome"] == "error"
    assert "repo: " in call["result"] and "nothing was sent" in call["result"]
    (refusal,) = fake.requests[1]["messages"][-1]["content"]
    assert refusal["is_error"]
