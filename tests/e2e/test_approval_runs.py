"""Approved calls run in the service, with its settings, whoever decided them and wherever.

A real ``agentws serve`` process holds the settings (here
``AGENTWS_CONNECTOR_ALLOWLIST``, which lets it reach the loopback
third-party MCP server); the admin is the ``agentws`` command line in a
shell that has none of them, as an operator on another machine would be.

- ``approval approve`` records the decision; the server runs the call (the
  upstream gets it), the caller's session is told, and the command prints
  the outcome;
- a call that fails makes the command exit 1; ``approval retry`` runs it
  again, once;
- with no service running, the decision stays recorded (exit 3, saying so)
  and runs when a service starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    Capability,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.settings.secret_box import ensure_key_file
from agentws.store import open_store
from agentws.tools.catalog import group_tool
from tests.e2e.mcp_support import running, sdk_session, seed
from tests.e2e.polling import wait_until
from tests.e2e.process_support import POLL_S, Server, alive, serve_process
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    Outcomes,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.test_dashboard import _browser, _signed_in
from tests.support import run_agentws

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

# Only the server has these: the CLI's shell has no AGENTWS_* variable but its data dir.
SERVER_ENV = {
    "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    "AGENTWS_CONNECTOR_REFRESH_S": "0",
    "AGENTWS_TOOL_TIMEOUT_S": "5",
}


@attrs.frozen
class World:
    url: str
    token: str
    state: ThirdParty
    remote: str


@asynccontextmanager
async def _world(tmp_path: Path) -> AsyncIterator[World]:
    """A SQLite database with acme/ops and the third-party connector (``third_send``: write)."""
    ensure_key_file(tmp_path)
    state = ThirdParty([tool("send", "Send a message")])
    url = f"sqlite:///{tmp_path / 'agentws.db'}"
    async with third_party_server(state) as remote:
        async with open_store(url) as store:
            token, _ = await seed(store, tmp_path, with_library=False)
            await attach_remote(store, remote, {})
        yield World(url, token, state, remote)


async def _cli(world: World, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """``agentws ARGS`` from a shell without the server's settings."""
    return await run_agentws(tmp_path, world.url, *args, AGENTWS_DATA_DIR=str(tmp_path))


@asynccontextmanager
async def _session(server: Server, token: str, outcomes: Outcomes) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
        streamable_http_client(f"{server.base_url}/mcp/g/acme/ops", http_client=http) as (r, w),
        ClientSession(r, w, logging_callback=outcomes) as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            await session.initialize()
        yield session


async def _queue(session: ClientSession, q: str) -> str:
    with trio.fail_after(TIMEOUT_S):
        queued = await session.call_tool("third_send", {"q": q})
    data = queued.structured_content or {}
    assert data["status"] == "queued", queued
    return str(data["approval_id"])


async def test_an_approval_from_a_shell_without_the_servers_settings_runs_in_the_server(
    tmp_path: Path,
) -> None:
    async with (
        _world(tmp_path) as world,
        serve_process(tmp_path, world.url, "inst-a", **SERVER_ENV) as server,
    ):
        outcomes = Outcomes()
        async with _session(server, world.token, outcomes) as session:
            approval_id = await _queue(session, "hello")
            assert world.state.calls == []

            code, out, err = await _cli(world, tmp_path, "approval", "approve", approval_id)
            assert code == 0, (out, err)
            assert f"Approved {approval_id}: third_send ran" in out
            assert "third-party found: hello" in out
            # It ran in the server, which may reach the loopback upstream, exactly once.
            assert world.state.calls == ["send"]
            assert world.state.arguments == [{"q": "hello"}]

            told = await outcomes.wait(approval_id)
            assert told["status"] == "executed"

            code, out, err = await _cli(world, tmp_path, "approval", "approve", approval_id)
            assert code == 1
            assert "already executed" in err
            code, out, err = await _cli(world, tmp_path, "approval", "retry", approval_id)
            assert code == 1
            assert "only a failed call can be retried" in err
        assert world.state.calls == ["send"]


async def test_a_failed_call_exits_1_and_an_admin_retries_it_once(tmp_path: Path) -> None:
    async with _world(tmp_path) as world:
        pass  # the upstream is down from here on
    async with serve_process(tmp_path, world.url, "inst-a", **SERVER_ENV) as server:
        outcomes = Outcomes()
        async with _session(server, world.token, outcomes) as session:
            approval_id = await _queue(session, "again")
            code, out, err = await _cli(world, tmp_path, "approval", "approve", approval_id)
            assert code == 1, (out, err)
            assert f"Approved {approval_id}, but third_send failed" in out
            assert (await outcomes.wait(approval_id))["status"] == "failed"

            async with third_party_server(world.state):  # back, on the same port
                code, out, err = await _cli(world, tmp_path, "approval", "retry", approval_id)
                assert code == 0, (out, err)
                assert f"Retried {approval_id}: third_send ran" in out
                assert world.state.calls == ["send"]
                code, out, err = await _cli(world, tmp_path, "approval", "retry", approval_id)
                assert code == 1
                assert "only a failed call can be retried" in err
            assert world.state.calls == ["send"]
            async with open_store(world.url) as store:
                ran = await store.get(Approval, approval_id)
            assert (ran.status, ran.attempts) == (ApprovalStatus.EXECUTED, 2)


async def test_a_decision_made_while_no_service_runs_waits_for_one(tmp_path: Path) -> None:
    async with _world(tmp_path) as world:
        async with open_store(world.url) as store:
            group = await store.group_by_slug("acme", "ops")
            send = await group_tool(store, group, "third_send")
            assert send is not None
            assert send.capability is Capability.WRITE
            arguments = {"q": "later"}
            now = utcnow()
            queued = await store.insert(
                Approval(
                    group_id=group.id,
                    requested_by="mcp:someone",
                    tool_name="third_send",
                    capability=Capability.WRITE,
                    definition_hash=send.definition_hash,
                    arguments=arguments,
                    arguments_hash=arguments_hash("third_send", arguments),
                    created_at=now,
                    expires_at=now + timedelta(hours=1),
                )
            )
        code, out, err = await _cli(
            world, tmp_path, "approval", "approve", queued.id, "--wait", "0.5"
        )
        assert code == 3, (out, err)
        assert "no running agentws service" in out
        assert world.state.calls == []

        async with (
            serve_process(tmp_path, world.url, "inst-a", **SERVER_ENV) as server,
            open_store(world.url) as store,
        ):

            async def ran() -> bool:
                found = await store.get(Approval, queued.id)
                return found.status is ApprovalStatus.EXECUTED

            await wait_until(
                ran,
                timeout_s=TIMEOUT_S,
                what="the approved call to run",
                interval_s=POLL_S,
                still_worth_it=alive([server]),
            )
        assert world.state.calls == ["send"]
        code, out, err = await _cli(world, tmp_path, "approval", "show", queued.id)
        assert code == 0, err
        assert "status:       executed" in out
        assert "ran on:       inst-a (attempt 1)" in out


async def test_a_call_cut_off_on_a_dead_instance_fails_and_an_api_retry_runs_it_once(
    tmp_path: Path,
) -> None:
    """An instance died while it ran a call: its lease lapses, the call fails (not rerun)."""
    state = ThirdParty([tool("send", "Send a message")])
    async with (
        running(tmp_path, with_library=False, **SERVER_ENV) as server,
        third_party_server(state) as url,
    ):
        await attach_remote(server.store, url, {})
        await create_admin(server.store, "alice", actor="t")
        _, admin = await create_admin_token(server.store, "alice", "tests", actor="t")
        async with sdk_session(server, "streamable") as session:
            approval_id = await _queue(session, "cut")
        store = server.store
        # What an instance that died while it ran the call leaves: approved, claimed,
        # its lease run out (written at once, so this service cannot claim it first).
        now = utcnow()
        await store.update(
            attrs.evolve(
                await store.get(Approval, approval_id),
                status=ApprovalStatus.APPROVED,
                decided_by="admin:bob",
                decided_at=now,
                lease_owner="dead-instance",
                lease_expires_at=now - timedelta(seconds=1),
                attempts=1,
            )
        )

        async def failed() -> bool:
            found = await store.get(Approval, approval_id)
            return found.status is ApprovalStatus.FAILED

        # The service's lapse round (every few seconds; its timing is tested on
        # the autojump clock in tests/unit/test_approval_leases.py).
        await wait_until(failed, what="the lapsed call to be failed", timeout_s=TIMEOUT_S)
        cut = await store.get(Approval, approval_id)
        assert "whether it acted upstream is unknown" in (cut.error or "")
        assert state.calls == []  # never run again by itself

        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {admin}"},
            timeout=TIMEOUT_S,
        ) as api:
            retried, again = await _both(
                api.post(f"/approvals/{approval_id}/retry", json={"reason": "checked"}),
                api.post(f"/approvals/{approval_id}/retry", json={}),
            )
        codes = sorted([retried.status_code, again.status_code])
        assert codes == [200, 409], (retried.text, again.text)
        won = retried if retried.status_code == 200 else again
        assert won.json()["status"] == "executed", won.text
        assert state.calls == ["send"]
        ran = await store.get(Approval, approval_id)
        assert (ran.status, ran.attempts, ran.lease_owner) == (
            ApprovalStatus.EXECUTED,
            2,
            server.runtime.settings.instance_id,
        )
        actions = [e.action for e in await store.select(AuditEntry, target=approval_id)]
        assert actions.count("approval.retry") == 1
        assert actions.count("approval.execute") == 2  # the lapse, then the run


async def _both(first: Any, second: Any) -> tuple[Any, Any]:
    results: dict[int, Any] = {}

    async def run(n: int, request: Any) -> None:
        results[n] = await request

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, 0, first)
        nursery.start_soon(run, 1, second)
    return results[0], results[1]


async def test_the_dashboard_shows_a_failed_run_and_retries_it(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a message")])
    async with running(tmp_path, with_library=False, **SERVER_ENV) as server:
        async with third_party_server(state) as url:
            await attach_remote(server.store, url, {})
        # The upstream is down from here on.
        async with _browser(server) as http:
            csrf = await _signed_in(server, http)
            async with sdk_session(server, "streamable") as session:
                approval_id = await _queue(session, "page")
            approved = await http.post(
                f"/dashboard/approvals/{approval_id}/approve", data={"csrf": csrf}
            )
            assert approved.status_code == 302
            page = await http.get(approved.headers["location"])
            assert "third_send failed" in page.text
            assert "Retry" in page.text
            async with third_party_server(state):  # back, on the same port
                retried = await http.post(
                    f"/dashboard/approvals/{approval_id}/retry", data={"csrf": csrf}
                )
                assert retried.status_code == 302
                page = await http.get(retried.headers["location"])
            assert "third-party found: page" in page.text
            assert "third_send: executed." in page.text
            assert state.calls == ["send"]
