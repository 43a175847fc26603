"""Two agentws processes on one PostgreSQL schema: one queue, one set of tokens.

- Events delivered to either instance are run by either, each posted
  exactly once; both instances take work.
- An instance killed with SIGKILL mid-work loses nothing: the other runs
  its events once their leases expire.
- A token revoked through one instance closes its stream held on the other
  within a second.
"""

from __future__ import annotations

import signal
from collections import Counter
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx2
import pytest
import trio

from agentws.accounts import create_admin
from agentws.admin_access import create_admin_token
from agentws.config import Settings
from agentws.domain.models import ChatMessage, Event, EventAttempt, EventStatus, McpToken
from agentws.store import Store, open_store
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.mcp_support import seed
from tests.e2e.process_support import Server, poll, serve_process
from tests.support import fresh_schema

pytestmark = pytest.mark.postgres

SENDERS = 32
RUN_TIMEOUT_S = 2
GRACE_S = 3.0
FINISH_S = 60.0
REVOKED_CLOSE_S = 1.0


async def _site(url: str, tmp_path: Path) -> tuple[str, str, str]:
    """Seed acme (tokens, webhook ``ci``, an admin): the hook path, an MCP token, an admin token."""
    async with open_store(url) as store:
        token, _ = await seed(store, tmp_path, with_library=False)
        issued = await create_webhook(
            store,
            _settings(url),
            "acme",
            name="ci",
            channel="local:ops",
            prompt="Summarise",
            options=WebhookOptions(rate_per_min=100_000, burst=100_000, concurrency=8),
            actor="t",
        )
        await create_admin(store, "alice", actor="t")
        _, admin = await create_admin_token(store, "alice", "tests", actor="t")
    path = "/hooks/" + issued.url.split("/hooks/")[1]
    return path, token, admin


def _settings(url: str) -> Settings:
    return Settings.from_env({"AGENTWS_DATABASE_URL": url})


def _instance(tmp_path: Path, url: str, name: str) -> AbstractAsyncContextManager[Server]:
    return serve_process(
        tmp_path,
        url,
        name,
        AGENTWS_RUN_TIMEOUT_S=str(RUN_TIMEOUT_S),
        AGENTWS_WORKER_CONCURRENCY="4",
        AGENTWS_SHUTDOWN_GRACE_S=str(GRACE_S),
    )


async def _deliver(targets: list[Server], path: str, first: int, count: int) -> list[str]:
    """POST ``count`` unique events, round-robin over ``targets``; their event ids (all 202)."""
    accepted: list[str] = []
    limiter = trio.CapacityLimiter(SENDERS)

    async def send(client: httpx2.AsyncClient, n: int) -> None:
        async with limiter:
            server = targets[n % len(targets)]
            response = await client.post(f"{server.base_url}{path}", json={"n": n})
        assert response.status_code == 202, response.text
        accepted.append(response.json()["event_id"])

    limits = httpx2.Limits(max_connections=SENDERS, max_keepalive_connections=SENDERS)
    async with (
        httpx2.AsyncClient(timeout=15, limits=limits) as client,
        trio.open_nursery() as nursery,
    ):
        for n in range(first, first + count):
            nursery.start_soon(send, client, n)
    return accepted


async def _all_done(store: Store, ids: list[str]) -> bool:
    events = await store.select(Event)
    status = {e.id: e.status for e in events}
    return all(status.get(i) is EventStatus.DONE for i in ids)


async def test_two_instances_share_the_queue_and_a_killed_one_loses_nothing(
    tmp_path: Path,
) -> None:
    async with fresh_schema() as url:
        path, _, _ = await _site(url, tmp_path)
        async with (
            open_store(url) as store,
            _instance(tmp_path, url, "inst-a") as a,
            _instance(tmp_path, url, "inst-b") as b,
        ):
            shared = await _deliver([a, b], path, 0, 500)
            await poll(
                lambda: _all_done(store, shared),
                timeout_s=FINISH_S,
                what="the 500 events to be done",
                servers=[a, b],
            )
            attempts = await store.select(EventAttempt)
            by_instance = Counter(x.instance_id for x in attempts if x.outcome == "done")
            assert by_instance["inst-a"] > 0 and by_instance["inst-b"] > 0, by_instance

            # A takes a burst alone and dies mid-work; B finishes it.
            burst = await _deliver([a], path, 500, 200)

            async def started() -> bool:
                messages = await store.select(ChatMessage)
                return any(m.event_id in set(burst) for m in messages)

            await poll(started, timeout_s=FINISH_S, what="A's first run", servers=[a])
            a.process.send_signal(signal.SIGKILL)
            with trio.fail_after(5):
                assert await a.process.wait() == -signal.SIGKILL
            leased = [
                e.id
                for e in await store.select(Event, status=EventStatus.RUNNING)
                if e.lease_owner == "inst-a"
            ]
            await poll(
                lambda: _all_done(store, burst),
                timeout_s=FINISH_S,
                what="B to finish A's events",
                servers=[b],
            )
            messages = await store.select(ChatMessage)
            events = {e.id: e for e in await store.select(Event)}
            attempts = await store.select(EventAttempt)

    everything = shared + burst
    per_event = Counter(m.event_id for m in messages)
    assert set(per_event) == set(everything)
    assert max(per_event.values()) == 1  # exactly once
    assert all(events[i].message_id for i in everything)
    # A's leased runs were taken over by B after their leases expired.
    for event_id in leased:
        by_b = [x for x in attempts if x.event_id == event_id and x.instance_id == "inst-b"]
        assert [x.outcome for x in by_b] == ["done"], event_id
    assert "Traceback" not in b.stderr(), b.stderr()


async def test_a_token_revoked_on_one_instance_closes_its_stream_on_the_other(
    tmp_path: Path,
) -> None:
    async with fresh_schema() as url:
        _, token, admin = await _site(url, tmp_path)
        async with (
            open_store(url) as store,
            _instance(tmp_path, url, "inst-a") as a,
            _instance(tmp_path, url, "inst-b") as b,
        ):
            (record,) = [t for t in await store.select(McpToken) if token.endswith(t.hint)]
            closed = trio.Event()
            opened = trio.Event()

            async def hold_stream_on_b() -> None:
                headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
                async with (
                    httpx2.AsyncClient(timeout=None) as client,
                    client.stream("GET", f"{b.base_url}/mcp/g/acme/ops", headers=headers) as r,
                ):
                    assert r.status_code == 200
                    opened.set()
                    async for _ in r.aiter_bytes():
                        pass
                closed.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_stream_on_b)
                with trio.fail_after(10):
                    await opened.wait()
                async with httpx2.AsyncClient(
                    base_url=f"{a.base_url}/api/v1",
                    headers={"Authorization": f"Bearer {admin}"},
                    timeout=10,
                ) as api:
                    revoked = await api.delete(f"/workspaces/acme/groups/ops/tokens/{record.id}")
                    assert revoked.status_code == 200, revoked.text
                at = trio.current_time()
                with trio.fail_after(5):
                    await closed.wait()
                took = trio.current_time() - at
    assert took < REVOKED_CLOSE_S, f"B closed the revoked token's stream after {took:.2f} s"


async def test_a_webhooks_rate_limit_holds_across_instances(tmp_path: Path) -> None:
    async with fresh_schema() as url:
        await _site(url, tmp_path)
        async with open_store(url) as store:
            limited = await create_webhook(
                store,
                _settings(url),
                "acme",
                name="limited",
                channel="local:ops",
                prompt="p",
                options=WebhookOptions(rate_per_min=6, burst=10),
                actor="t",
            )
        path = "/hooks/" + limited.url.split("/hooks/")[1]
        statuses: list[int] = []
        waits: list[int] = []
        async with (
            _instance(tmp_path, url, "inst-a") as a,
            _instance(tmp_path, url, "inst-b") as b,
            httpx2.AsyncClient(timeout=15) as client,
        ):

            async def send(server: Server, n: int) -> None:
                response = await client.post(f"{server.base_url}{path}", json={"n": n})
                statuses.append(response.status_code)
                if response.status_code == 429:
                    waits.append(int(response.headers["retry-after"]))

            async with trio.open_nursery() as nursery:
                for n in range(30):
                    nursery.start_soon(send, [a, b][n % 2], n)
    # Each instance alone would have let 10 through: together they still let 10.
    assert statuses.count(202) == 10, statuses
    assert statuses.count(429) == 20
    assert all(1 <= w <= 10 for w in waits), waits
