"""Changes made through one instance reach the other at once, by LISTEN/NOTIFY.

Two agentws processes on one PostgreSQL schema, and a third-party MCP
server whose ``third_send`` tool is a write tool. While their change feeds
listen, the instances read these rows only when told (or every 10 s as a
safety net), so an arrival within a second shows the announcement at work:

- a call queued by a session on A, denied through B's admin API: A's
  session is told the outcome;
- a tool's label set by another process (as the CLI does): A's next
  ``tools/list`` shows it, and the call runs at once;
- both instances report ready, and their listeners show in
  ``pg_stat_activity``.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import Capability
from agentws.settings.secret_box import ensure_key_file
from agentws.store import open_store
from agentws.store.postgres import LISTENER_NAME
from agentws.tools.admin import set_label
from tests.e2e.mcp_support import seed
from tests.e2e.polling import wait_until
from tests.e2e.process_support import POLL_S, alive, serve_process
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    Outcomes,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.support import migrated_schema

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)]

# Announcements arrive in milliseconds; without them these would take 5-10 s.
ANNOUNCED_S = 1.0
TIMEOUT_S = 15.0


async def test_a_decision_and_a_label_made_elsewhere_reach_instance_a_at_once(
    tmp_path: Path,
) -> None:
    ensure_key_file(tmp_path)
    state = ThirdParty([tool("search", "Search", read_only_hint=True), tool("send", "Send")])
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
    async with (
        migrated_schema() as url,
        third_party_server(state) as remote,
        open_store(url) as store,
    ):
        token, _ = await seed(store, tmp_path, with_library=False)
        await attach_remote(store, remote, {})
        await create_admin(store, "alice", actor="t")
        _, admin = await create_admin_token(store, "alice", "tests", actor="t")
        async with (
            serve_process(tmp_path, url, "inst-a", **env) as a,
            serve_process(tmp_path, url, "inst-b", **env) as b,
            httpx2.AsyncClient(timeout=10) as http,
        ):
            for server in (a, b):
                ready = await http.get(f"{server.base_url}/readyz")
                assert ready.status_code == 200, ready.text
            schema = url.rpartition("search_path=")[2]
            async with store.database.transaction() as tx:
                listeners = await tx.fetch(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1",
                    f"{LISTENER_NAME} {schema}",
                )
            assert listeners[0]["n"] == 2

            outcomes = Outcomes()
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as mcp,
                streamable_http_client(f"{a.base_url}/mcp/g/acme/ops", http_client=mcp) as (r, w),
                ClientSession(r, w, logging_callback=outcomes) as session,
            ):
                await session.initialize()
                queued = await session.call_tool("third_send", {"q": "hello"})
                approval_id = (queued.structured_content or {})["approval_id"]

                denied = await http.post(
                    f"{b.base_url}/api/v1/approvals/{approval_id}/deny",
                    json={"reason": "not today"},
                    headers={"Authorization": f"Bearer {admin}"},
                )
                assert denied.status_code == 200, denied.text
                decided_at = trio.current_time()
                told = await outcomes.wait(approval_id)
                told_after = trio.current_time() - decided_at
                assert told["status"] == "denied"

                async def read_only() -> bool | None:
                    listed = await session.list_tools()
                    (send,) = [t for t in listed.tools if t.name == "third_send"]
                    return send.annotations and send.annotations.read_only_hint

                assert not await read_only()
                # Another process (as `agentws tool label` would) labels the tool read.
                await set_label(store, "acme", "third_send", Capability.READ, actor="admin")
                changed_at = trio.current_time()
                await wait_until(
                    read_only,
                    timeout_s=TIMEOUT_S,
                    what="the new label",
                    interval_s=POLL_S,
                    still_worth_it=alive([a]),
                )
                listed_after = trio.current_time() - changed_at
                ran = await session.call_tool("third_send", {"q": "now"})
                assert not ran.is_error
        assert state.calls == ["send"]  # the denied call never ran; the read one did
    assert told_after < ANNOUNCED_S, f"the outcome reached A's session after {told_after:.2f} s"
    assert listed_after < ANNOUNCED_S, f"A listed the new label after {listed_after:.2f} s"
