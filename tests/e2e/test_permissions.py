"""Capability-based permissions for MCP callers, end to end.

A real agentws serves on loopback; its group's connector is a real
third-party MCP server (:mod:`tests.e2e.remote_support`) that counts the
calls it receives. The MCP callers are the ``mcp`` SDK's own clients, on
2024-11-05 over legacy SSE and on the newest version over Streamable HTTP;
the admin is the ``agentws`` command line in another process, as an
operator would run it.

- a read tool runs at once;
- a write tool is queued: the caller gets the approval id, ``agentws
  approval approve`` records the decision and the server runs it exactly
  once against the upstream, the caller's open session is told the outcome,
  and ``get_approval`` reads it later;
- a denied request, a ``deny`` permission and a read-scoped token never
  reach the upstream;
- a destructive tool asks for confirmation, through elicitation or through
  a one-time confirm token that works once, for this call only, within its
  TTL, for this bearer token only (tests/e2e/test_confirm_tokens.py: in any
  session, on any instance);
- two concurrent approvals run the call once;
- the audit log holds all of it, and never a value the schema marks secret.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import mcp.client.session
import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from agentws.domain.models import Approval, AuditEntry, Capability, ConfirmToken, McpToken
from agentws.domain.rules import hash_secret
from agentws.doors.mcp.dispatch.handlers import PERMISSION_DENIED
from agentws.settings.secret_box import ensure_key_file
from agentws.store import open_store
from agentws.workspaces.admin import create_token
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    Outcomes,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.support import migrated_schema, run_agentws

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

SECRET_PASSWORD = "hunter2-very-secret-value"

# (transport, protocol version the client offers)
CLIENTS = [("sse", "2024-11-05"), ("streamable", LATEST_HANDSHAKE_VERSION)]


@pytest.fixture(params=CLIENTS, ids=[f"{t}-{v}" for t, v in CLIENTS])
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    transport, version = request.param
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    return str(transport)


def _login_tool() -> types.Tool:
    return types.Tool(
        name="login",
        description="Log in to the upstream",
        input_schema={
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "writeOnly": True},
            },
            "required": ["user", "password"],
        },
    )


@asynccontextmanager
async def _served(tmp_path: Path, **env: str) -> AsyncIterator[tuple[Running, ThirdParty]]:
    """agentws with group acme/ops holding remote connector ``third``.

    Its tools: ``third_search`` (labeled read), ``third_send`` and
    ``third_login`` (unlabeled: write) and ``third_drop`` (labeled destructive).
    """
    ensure_key_file(tmp_path)
    state = ThirdParty(
        [
            tool("search", "Search", read_only_hint=True),
            tool("send", "Send a message"),
            tool("drop", "Drop the table", destructive_hint=True),
            _login_tool(),
        ]
    )
    settings = {
        "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
        "AGENTWS_TOOL_TIMEOUT_S": "10",
        "AGENTWS_CONNECTOR_REFRESH_S": "0",
        "AGENTWS_DATA_DIR": str(tmp_path),
        **env,
    }
    async with (
        running(tmp_path, with_library=False, **settings) as server,
        third_party_server(state) as url,
    ):
        labels = {"third_search": Capability.READ, "third_drop": Capability.DESTRUCTIVE}
        await attach_remote(server.store, url, labels)
        yield server, state


async def _destructive_token(server: Running, name: str) -> str:
    """A token that may use destructive tools (the default scope stops at write)."""
    issued = await create_token(
        server.store, "acme", "ops", name=name, scope=Capability.DESTRUCTIVE, actor="t"
    )
    return issued.secret


async def _admin(server: Running, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """``agentws ARGS`` against the server's database, as an operator runs it."""
    return await run_agentws(
        tmp_path,
        server.runtime.settings.database_url,
        *args,
        AGENTWS_CONNECTOR_ALLOWLIST="127.0.0.1/32",
        AGENTWS_DATA_DIR=str(tmp_path),
    )


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_read_runs_write_is_queued_and_runs_once_when_approved(
    tmp_path: Path, client: str
) -> None:
    async with _served(tmp_path) as (server, state):
        outcomes = Outcomes()
        async with sdk_session(server, client, logging_callback=outcomes) as session:
            with trio.fail_after(TIMEOUT_S):
                read = await session.call_tool("third_search", {"q": "refunds"})
                assert not read.is_error
                assert _text(read) == "third-party found: refunds"
                assert state.calls == ["search"]

                queued = await session.call_tool("third_send", {"q": "hello"})
            # Not an error: queued, with the id to follow it by.
            assert not queued.is_error
            queued_data = queued.structured_content or {}
            assert queued_data["status"] == "queued"
            approval_id = queued_data["approval_id"]
            assert approval_id in _text(queued)
            assert "Queued for admin approval" in _text(queued)
            assert state.calls == ["search"]  # nothing reached the upstream

            stored = await server.store.get(Approval, approval_id)
            token = await server.store.find(McpToken, name="tests")
            assert token is not None
            assert (stored.tool_name, stored.arguments, stored.token_id) == (
                "third_send",
                {"q": "hello"},
                token.id,
            )
            assert stored.requested_by == f"mcp:{token.id}"
            assert len(stored.arguments_hash) == 64

            code, out, err = await _admin(server, tmp_path, "approval", "list", "--json")
            assert code == 0, err
            assert [(a["id"], a["status"], a["tool"]) for a in json.loads(out)] == [
                (approval_id, "pending", "third_send")
            ]

            code, out, err = await _admin(server, tmp_path, "approval", "approve", approval_id)
            assert code == 0, err
            assert "third_send ran" in out
            assert state.calls == ["search", "send"]
            assert state.arguments[-1] == {"q": "hello"}

            told = await outcomes.wait(approval_id)
            assert told["status"] == "executed"
            assert "third-party found: hello" in json.dumps(told["result"])

            with trio.fail_after(TIMEOUT_S):
                later = await session.call_tool("get_approval", {"approval_id": approval_id})
            assert not later.is_error
            assert (later.structured_content or {})["status"] == "executed"
            assert "third-party found: hello" in _text(later)

            # Approving again runs nothing.
            code, out, err = await _admin(server, tmp_path, "approval", "approve", approval_id)
            assert code == 1
            assert "already executed" in err
            assert state.calls == ["search", "send"]

        # Another token of the same group cannot read this token's approval.
        other = await create_token(server.store, "acme", "ops", name="other", actor="t")
        async with sdk_session(server, client, token=other.secret) as session:
            with trio.fail_after(TIMEOUT_S):
                foreign = await session.call_tool("get_approval", {"approval_id": approval_id})
            assert foreign.is_error
            assert "No approval" in _text(foreign)


async def test_denied_calls_never_reach_the_upstream(tmp_path: Path, client: str) -> None:
    async with _served(tmp_path) as (server, state):
        outcomes = Outcomes()
        async with sdk_session(server, client, logging_callback=outcomes) as session:
            with trio.fail_after(TIMEOUT_S):
                queued = await session.call_tool("third_send", {"q": "spam"})
            approval_id = (queued.structured_content or {})["approval_id"]
            code, _, err = await _admin(
                server, tmp_path, "approval", "deny", approval_id, "--reason", "not today"
            )
            assert code == 0, err
            told = await outcomes.wait(approval_id)
            assert (told["status"], told["reason"]) == ("denied", "not today")
            code, _, err = await _admin(server, tmp_path, "approval", "approve", approval_id)
            assert code == 1
            assert "already denied" in err

            # An admin denies the tool in this group: "permission denied", nothing queued.
            code, _, err = await _admin(
                server,
                tmp_path,
                "tool",
                "permission",
                "acme",
                "third_send",
                "deny",
                "--group",
                "ops",
            )
            assert code == 0, err
            with trio.fail_after(TIMEOUT_S), pytest.raises(MCPError) as denied:
                await session.call_tool("third_send", {"q": "spam"})
            assert denied.value.code == PERMISSION_DENIED
            assert "permission denied" in denied.value.message
        assert state.calls == []
        assert await server.store.count(Approval) == 1


async def test_a_read_scoped_token_may_only_read(tmp_path: Path, client: str) -> None:
    async with _served(tmp_path) as (server, state):
        reader = await create_token(
            server.store, "acme", "ops", name="reader", scope=Capability.READ, actor="t"
        )
        async with sdk_session(server, client, token=reader.secret) as session:
            with trio.fail_after(TIMEOUT_S):
                assert not (await session.call_tool("third_search", {"q": "x"})).is_error
                for name in ("third_send", "third_drop"):
                    with pytest.raises(MCPError) as denied:
                        await session.call_tool(name, {"q": "x"})
                    assert denied.value.code == PERMISSION_DENIED
                    assert "permission denied" in denied.value.message
                    assert "scope is read" in denied.value.message
        assert state.calls == ["search"]
        assert await server.store.count(Approval) == 0


def _confirming(answers: list[str], asked: list[str]) -> Any:
    """An elicitation callback answering the confirmations in turn (accept ticks "confirm")."""

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        action = answers.pop(0)
        content = {"confirm": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit


async def test_destructive_calls_are_confirmed_through_elicitation(tmp_path: Path) -> None:
    asked: list[str] = []
    elicit = _confirming(["accept", "decline"], asked)

    async with _served(tmp_path) as (server, state):
        token = await _destructive_token(server, "ops-lead")
        async with sdk_session(
            server, "streamable", token=token, elicitation_callback=elicit
        ) as session:
            with trio.fail_after(TIMEOUT_S):
                ran = await session.call_tool("third_drop", {"q": "users"})
            assert not ran.is_error, ran
            assert _text(ran) == "third-party found: users"
            assert "third_drop" in asked[0]
            assert '"users"' in asked[0]
            assert state.calls == ["drop"]

            with trio.fail_after(TIMEOUT_S):
                declined = await session.call_tool("third_drop", {"q": "orders"})
            assert (declined.structured_content or {})["status"] == "not_confirmed"
            assert "did not run" in _text(declined)
            assert state.calls == ["drop"]  # declined: nothing ran
            assert len(asked) == 2


async def test_destructive_calls_are_confirmed_with_a_one_time_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 2024-11-05 client has no elicitation: the confirm-token round trip.
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", "2024-11-05")
    async with _served(tmp_path, AGENTWS_CONFIRM_TTL_S="5") as (server, state):
        mine = await _destructive_token(server, "ops-lead")
        other = await _destructive_token(server, "other")

        async def ask(session: Any, arguments: dict[str, Any]) -> str:
            with trio.fail_after(TIMEOUT_S):
                result = await session.call_tool("third_drop", arguments)
            data = result.structured_content or {}
            assert not result.is_error
            assert data["status"] == "confirmation_required", result
            assert data["confirm_token"] in _text(result)
            return str(data["confirm_token"])

        async def call(session: Any, arguments: dict[str, Any]) -> types.CallToolResult:
            with trio.fail_after(TIMEOUT_S):
                result: types.CallToolResult = await session.call_tool("third_drop", arguments)
            return result

        async with (
            sdk_session(server, "sse", token=mine) as session,
            sdk_session(server, "sse", token=other) as intruder,
        ):
            token = await ask(session, {"q": "users"})
            assert state.calls == []

            # Another bearer token (in its own session) cannot use it.
            refused = await call(intruder, {"q": "users", "_confirm_token": token})
            assert refused.is_error
            assert "Confirmation refused" in _text(refused)

            # Changed arguments: refused.
            token = await ask(session, {"q": "users"})
            refused = await call(session, {"q": "everyone", "_confirm_token": token})
            assert refused.is_error
            assert "another call" in _text(refused)
            assert state.calls == []

            # The right call with a fresh token runs, once.
            token = await ask(session, {"q": "users"})
            ran = await call(session, {"q": "users", "_confirm_token": token})
            assert not ran.is_error
            assert _text(ran) == "third-party found: users"
            assert state.calls == ["drop"]
            assert state.arguments[-1] == {"q": "users"}  # the token never reaches the upstream

            # Reused: refused.
            refused = await call(session, {"q": "users", "_confirm_token": token})
            assert refused.is_error
            assert "used already" in _text(refused)

            # Expired: refused. Its time runs out (as if 5 s had passed).
            token = await ask(session, {"q": "users"})
            kept = await server.store.get(ConfirmToken, hash_secret(token))
            await server.store.update(attrs.evolve(kept, expires_at=kept.created_at))
            refused = await call(session, {"q": "users", "_confirm_token": token})
            assert refused.is_error
            assert "expired" in _text(refused)
        assert state.calls == ["drop"]


@pytest.mark.parametrize(
    "database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_two_concurrent_approvals_run_the_call_once(tmp_path: Path, database: str) -> None:
    async with contextlib.AsyncExitStack() as stack:
        env = {}
        if database == "postgres":
            env["database_url"] = await stack.enter_async_context(migrated_schema())
        server, state = await stack.enter_async_context(_served(tmp_path, **env))
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                queued = await session.call_tool("third_send", {"q": "once"})
        approval_id = (queued.structured_content or {})["approval_id"]
        results: list[tuple[int, str, str]] = []

        async def approve() -> None:
            results.append(await _admin(server, tmp_path, "approval", "approve", approval_id))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(approve)
            nursery.start_soon(approve)
        assert sorted(code for code, _, _ in results) == [0, 1], results
        loser = next(err for code, _, err in results if code == 1)
        assert f"approval {approval_id} is already" in loser
        assert state.calls == ["send"]
        executed = await server.store.get(Approval, approval_id)
        assert executed.status.value == "executed"


async def test_an_undecided_request_expires_and_the_caller_is_told(tmp_path: Path) -> None:
    # Due as soon as queued: the wiring only, the watch's timers are tested
    # on the autojump clock (tests/unit/test_approval_expiry.py).
    async with _served(tmp_path, AGENTWS_APPROVAL_TTL_S="0") as (server, state):
        outcomes = Outcomes()
        async with sdk_session(server, "streamable", logging_callback=outcomes) as session:
            with trio.fail_after(TIMEOUT_S):
                queued = await session.call_tool("third_send", {"q": "late"})
            approval_id = (queued.structured_content or {})["approval_id"]
            told = await outcomes.wait(approval_id)
            assert told["status"] == "expired"
        code, _, err = await _admin(server, tmp_path, "approval", "approve", approval_id)
        assert code == 1
        assert "expired" in err
        assert state.calls == []
        assert await server.store.select(AuditEntry, action="approval.expire")


async def test_the_audit_log_holds_every_decision_and_no_secret(tmp_path: Path) -> None:
    async with _served(tmp_path, AGENTWS_CONFIRM_TTL_S="30") as (server, state):
        lead = await _destructive_token(server, "ops-lead")
        async with sdk_session(server, "streamable", token=lead) as session:
            with trio.fail_after(TIMEOUT_S):
                await session.call_tool("third_search", {"q": "a"})
                sent = await session.call_tool("third_send", {"q": "b"})
                login = await session.call_tool(
                    "third_login", {"user": "ada", "password": SECRET_PASSWORD}
                )
                asked = await session.call_tool("third_drop", {"q": "c"})
        assert (asked.structured_content or {})["status"] == "confirmation_required"
        login_id = (login.structured_content or {})["approval_id"]
        send_id = (sent.structured_content or {})["approval_id"]

        # The secret is kept sealed; an admin reads it redacted.
        stored = await server.store.get(Approval, login_id)
        assert stored.arguments == {"user": "ada", "password": "[redacted]"}
        assert stored.sealed_arguments is not None
        assert SECRET_PASSWORD.encode() not in stored.sealed_arguments
        code, out, err = await _admin(server, tmp_path, "approval", "show", login_id)
        assert code == 0, err
        assert SECRET_PASSWORD not in out

        # Approved, it runs with the real secret.
        code, out, err = await _admin(server, tmp_path, "approval", "approve", login_id)
        assert code == 0, err
        assert SECRET_PASSWORD not in out
        assert state.arguments[-1] == {"user": "ada", "password": SECRET_PASSWORD}
        code, _, err = await _admin(server, tmp_path, "approval", "deny", send_id, "--reason", "no")
        assert code == 0, err
        code, _, err = await _admin(
            server, tmp_path, "tool", "permission", "acme", "third_send", "deny", "--group", "ops"
        )
        assert code == 0, err

        async with sdk_session(server, "sse") as session:
            with trio.fail_after(TIMEOUT_S), pytest.raises(MCPError):
                await session.call_tool("third_send", {"q": "d"})

        # Calls are written in batches: wait until the last one is there.
        with trio.fail_after(TIMEOUT_S):
            while not any(  # noqa: ASYNC110 - the writer's batches land in the store
                e.detail.get("outcome") == "denied"
                for e in await server.store.select(AuditEntry, action="tool.call")
            ):
                await trio.sleep(0.05)

        code, out, err = await _admin(server, tmp_path, "audit", "tail", "--json", "-n", "200")
        assert code == 0, err
        assert SECRET_PASSWORD not in out
        entries = json.loads(out)
        calls = {
            (e["target"], e["detail"]["decision"], e["detail"]["outcome"])
            for e in entries
            if e["action"] == "tool.call"
        }
        assert calls >= {
            ("third_search", "run", "ran"),
            ("third_send", "queue", "queued"),
            ("third_login", "queue", "queued"),
            ("third_drop", "confirm", "confirmation_requested"),
            ("third_send", "deny", "denied"),
        }, calls
        for entry in entries:
            if entry["action"] == "tool.call":
                assert entry["actor"].startswith("mcp:tok_")
                assert len(entry["detail"]["arguments_hash"]) == 64
        login_call = next(e for e in entries if e["target"] == "third_login")
        assert login_call["detail"]["arguments"] == {"user": "ada", "password": "[redacted]"}
        actions = {e["action"] for e in entries}
        assert {
            "token.create",
            "tool.label",
            "tool.permission",
            "approval.approve",
            "approval.execute",
            "approval.deny",
        } <= actions
        everything = json.dumps(
            [json.loads(json.dumps(e.detail)) for e in await server.store.select(AuditEntry)]
        )
        assert SECRET_PASSWORD not in everything


async def test_calls_audited_just_before_shutdown_are_written(tmp_path: Path) -> None:
    async with (
        _served(tmp_path) as (server, state),
        sdk_session(server, "streamable") as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            for n in range(25):
                await session.call_tool("third_search", {"q": f"q{n}"})
        # The server stops at once: the writer's last batch has not been written yet.
    assert len(state.calls) == 25
    async with open_store(f"sqlite:///{tmp_path / 'mcp.db'}") as store:
        calls = await store.select(AuditEntry, action="tool.call")
    assert sorted(e.detail["arguments"]["q"] for e in calls) == sorted(f"q{n}" for n in range(25))


async def test_outcomes_respect_the_clients_log_level(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, state):
        outcomes = Outcomes()
        async with sdk_session(server, "streamable", logging_callback=outcomes) as session:
            capabilities = session.server_capabilities
            assert capabilities is not None
            assert capabilities.logging is not None  # it sends log messages, so it says so
            with trio.fail_after(TIMEOUT_S):
                with warnings.catch_warnings():
                    # Deprecated from 2026-07-28; this session speaks an older version.
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await session.set_logging_level("warning")
                ran = await session.call_tool("third_send", {"q": "ran"})
                refused = await session.call_tool("third_send", {"q": "refused"})
            ran_id = (ran.structured_content or {})["approval_id"]
            refused_id = (refused.structured_content or {})["approval_id"]
            assert (await _admin(server, tmp_path, "approval", "approve", ran_id))[0] == 0
            assert (await _admin(server, tmp_path, "approval", "deny", refused_id))[0] == 0
            # Outcomes are sent in the order the calls were queued: by the time the
            # denial (warning) arrives, the execution (notice) would have.
            assert (await outcomes.wait(refused_id))["status"] == "denied"
            assert [data["approval_id"] for data in outcomes.seen] == [refused_id]
        assert state.calls == ["send"]
