"""Two agentws processes on one PostgreSQL schema behind nginx: one queue, one set of tokens.

Every request a client makes goes through nginx (``deploy/nginx-agentws.conf``,
see :mod:`tests.e2e.nginx_support`), which spreads them over both instances;
only the admin call that revokes a token goes to one instance directly, to
choose which.

- Events delivered through nginx are accepted by both instances and run by
  both, each posted exactly once.
- An instance killed with SIGKILL mid-run loses nothing: the other runs
  its events once their leases expire, and takes the deliveries nginx
  tried on the dead one.
- A token revoked through one instance closes its stream, held through
  nginx on the other, within a second.
- A webhook's rate limit holds across both instances.
"""

from __future__ import annotations

import contextlib
import signal
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import httpx2
import pytest
import trio

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import ChatMessage, Event, EventAttempt, EventStatus, McpToken
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store import open_store
from agentws.store.union import Store
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.mcp_support import seed
from tests.e2e.nginx_support import access_log, behind_nginx
from tests.e2e.polling import wait_until
from tests.e2e.process_support import POLL_S, Server, alive
from tests.support import migrated_schema
from tests.tiers import examples

pytestmark = pytest.mark.postgres

SENDERS = 32
# Events both instances share before the kill: enough that each runs some.
SHARED = examples(500, 200)
RUN_TIMEOUT_S = 2
GRACE_S = 3.0
FINISH_S = 60.0
REVOKED_CLOSE_S = 1.0
INSTANCE_ENV = {
    "AGENTWS_RUN_TIMEOUT_S": str(RUN_TIMEOUT_S),
    "AGENTWS_WORKER_CONCURRENCY": "4",
    "AGENTWS_SHUTDOWN_GRACE_S": str(GRACE_S),
}


async def _site(url: str, tmp_path: Path) -> tuple[str, str, str]:
    """Seed acme (tokens, webhook ``ci``, an admin): the hook path, an MCP token, an admin token."""
    async with open_store(url) as store:
        token, _ = await seed(store, tmp_path, with_library=False)
        issued = await create_webhook(
            store,
            _settings(url),
            Keys.load(_settings(url)),
            "acme",
            name="ci",
            channel="local:ops",
            prompt="Summarise",
            options=WebhookOptions(rate_per_min=100_000, burst=100_000, concurrency=8),
            actor="t",
        )
        await create_admin(store, "alice", actor="t")
        _, admin = await create_admin_token(store, "alice", "tests", actor="t")
    return _hook_path(issued.url), token, admin


def _hook_path(url: str) -> str:
    return "/hooks/" + url.split("/hooks/")[1]


def _settings(url: str) -> Settings:
    return Settings.from_env({"AGENTWS_DATABASE_URL": url})


async def _deliver(base_url: str, path: str, first: int, count: int) -> list[str]:
    """POST ``count`` unique events to ``base_url`` (nginx); their event ids (all 202)."""
    accepted: list[str] = []
    limiter = trio.CapacityLimiter(SENDERS)

    async def send(client: httpx2.AsyncClient, n: int) -> None:
        async with limiter:
            response = await client.post(f"{base_url}{path}", json={"n": n})
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


def _stopped(process: trio.Process) -> bool:
    """Whether every thread of ``process`` is stopped (by SIGSTOP): it runs no more."""
    states = []
    for stat in Path(f"/proc/{process.pid}/task").glob("*/stat"):
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            states.append(stat.read_text().rpartition(")")[2].split()[0])
    return bool(states) and all(state in "tT" for state in states)


async def _all_done(store: Store, ids: list[str]) -> bool:
    events = await store.select(Event)
    status = {e.id: e.status for e in events}
    return all(status.get(i) is EventStatus.DONE for i in ids)


def _answered(tmp_path: Path, servers: list[Server], path: str) -> Counter[str]:
    """Per instance (by its base URL), the requests for ``path`` it answered through nginx."""
    answered: Counter[str] = Counter()
    for request in access_log(tmp_path):
        if request.path == path:
            for server in servers:
                if request.answered_by(server):
                    answered[server.base_url] += 1
    return answered


async def test_two_instances_share_the_queue_and_a_killed_one_loses_nothing(
    tmp_path: Path,
) -> None:
    async with migrated_schema() as url:
        path, _, _ = await _site(url, tmp_path)
        async with (
            open_store(url) as store,
            behind_nginx(tmp_path, url, **INSTANCE_ENV) as (a, b, nginx),
        ):
            shared = await _deliver(nginx, path, 0, SHARED)
            await wait_until(
                lambda: _all_done(store, shared),
                timeout_s=FINISH_S,
                what=f"the {SHARED} events to be done",
                interval_s=POLL_S,
                still_worth_it=alive([a, b]),
            )
            attempts = await store.select(EventAttempt)
            by_instance = Counter(x.instance_id for x in attempts if x.outcome == "done")
            assert by_instance["inst-a"] > 0 and by_instance["inst-b"] > 0, by_instance

            # A burst through nginx (both accept some); A dies in the middle of it.
            burst = await _deliver(nginx, path, SHARED, 200)
            in_burst = set(burst)

            async def a_leased() -> list[Event]:
                running = await store.select(Event, status=EventStatus.RUNNING)
                return [e for e in running if e.id in in_burst and e.lease_owner == "inst-a"]

            # A's runs take milliseconds: freeze A, and keep it frozen (then
            # kill it) only if it holds a lease, so that it dies mid-run.
            leased: dict[str, datetime | None] = {}

            async def a_stopped() -> bool:
                return _stopped(a.process)

            async def a_frozen_mid_run() -> bool:
                a.process.send_signal(signal.SIGSTOP)
                await wait_until(
                    a_stopped,
                    timeout_s=5,
                    what="A to stop",
                    interval_s=POLL_S,
                    still_worth_it=alive([a]),
                )
                leased.update((e.id, e.lease_expires_at) for e in await a_leased())
                if not leased:
                    a.process.send_signal(signal.SIGCONT)
                return bool(leased)

            await wait_until(
                a_frozen_mid_run,
                timeout_s=FINISH_S,
                what="A's runs",
                interval_s=POLL_S,
                still_worth_it=alive([a, b]),
            )
            a.process.send_signal(signal.SIGKILL)
            with trio.fail_after(5):
                assert await a.process.wait() == -signal.SIGKILL
            posted = {m.event_id for m in await store.select(ChatMessage)}
            print(
                f"A died holding {len(leased)} leases, "
                f"{len(posted & leased.keys())} of them already posted"
            )
            # Deliveries go on through nginx: those it sends to A, now refusing
            # connections, it retries on B.
            after = await _deliver(nginx, path, SHARED + 200, 20)
            # B may run what A held only once the leases expire.
            await wait_until(
                lambda: _all_done(store, burst + after),
                timeout_s=FINISH_S,
                what="B to finish A's events and the later ones",
                interval_s=POLL_S,
                still_worth_it=alive([b]),
            )
            messages = await store.select(ChatMessage)
            events = {e.id: e for e in await store.select(Event)}
            attempts = await store.select(EventAttempt)

    # nginx spread the deliveries: each instance accepted some, and B the
    # ones nginx tried on A once A was dead.
    accepted = _answered(tmp_path, [a, b], path)
    assert sum(accepted.values()) == SHARED + 220, accepted
    assert accepted[a.base_url] > 0 and accepted[b.base_url] > 0, accepted
    retried = [r for r in access_log(tmp_path) if len(r.upstreams) > 1]
    assert retried, "nginx sent no delivery to the dead instance"
    assert all(r.answered_by(b) and r.status == 202 for r in retried), retried
    everything = shared + burst + after
    per_event = Counter(m.event_id for m in messages)
    assert set(per_event) == set(everything)
    assert max(per_event.values()) == 1  # exactly once
    assert all(events[i].message_id for i in everything)
    # A's leased runs were taken over by B, once, after their leases expired.
    for event_id, expired_at in leased.items():
        ended = [x for x in attempts if x.event_id == event_id and x.outcome != "running"]
        assert [(x.instance_id, x.outcome) for x in ended] == [("inst-b", "done")], event_id
        assert expired_at is not None and ended[0].started_at >= expired_at, event_id
    for server in (a, b):
        assert "Traceback" not in server.stderr(), server.stderr()


async def _endpoint_event(lines: AsyncIterator[str]) -> str:
    """The ``data`` of an SSE stream's first event, which must be ``endpoint``."""
    event = None
    async for line in lines:
        if line.startswith("event:"):
            event = line.partition(":")[2].strip()
        elif line.startswith("data:"):
            assert event == "endpoint", f"the first event is {event!r}, not endpoint"
            return line.partition(":")[2].strip()
    raise AssertionError("the stream ended before its endpoint event")


async def test_a_token_revoked_on_one_instance_closes_its_stream_on_the_other(
    tmp_path: Path,
) -> None:
    async with migrated_schema() as url:
        _, token, admin = await _site(url, tmp_path)
        async with (
            open_store(url) as store,
            behind_nginx(tmp_path, url, **INSTANCE_ENV) as (a, b, nginx),
        ):
            (record,) = [t for t in await store.select(McpToken) if token.endswith(t.hint)]
            closed = trio.Event()
            opened = trio.Event()
            owner: list[str] = []
            closed_at: list[float] = []

            async def hold_stream_through_nginx() -> None:
                headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
                async with (
                    httpx2.AsyncClient(timeout=None) as client,
                    client.stream("GET", f"{nginx}/mcp/g/acme/ops", headers=headers) as r,
                ):
                    assert r.status_code == 200
                    lines = r.aiter_lines()
                    endpoint = await _endpoint_event(lines)
                    # …/messages?session_id=<owner's instance id>.<random>
                    session_id = endpoint.partition("session_id=")[2]
                    owner.append(session_id.partition(".")[0])
                    opened.set()
                    async for _ in lines:
                        pass
                closed_at.append(trio.current_time())
                closed.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(hold_stream_through_nginx)
                with trio.fail_after(10):
                    await opened.wait()
                instances = {"inst-a": a, "inst-b": b}
                assert owner[0] in instances, owner
                (other,) = [s for name, s in instances.items() if name != owner[0]]
                async with httpx2.AsyncClient(
                    base_url=f"{other.base_url}/api/v1",
                    headers={"Authorization": f"Bearer {admin}"},
                    timeout=10,
                ) as api:
                    sent = trio.current_time()
                    revoked = await api.delete(f"/workspaces/acme/groups/ops/tokens/{record.id}")
                    at = trio.current_time()
                    assert revoked.status_code == 200, revoked.text
                with trio.fail_after(5):
                    await closed.wait()
    # The stream lived until the revocation, and ended within a second of its answer
    # (or while it was being answered).
    assert closed_at[0] >= sent, "the stream ended before the token was revoked"
    took = max(0.0, closed_at[0] - at)
    print(f"{owner[0]}'s stream closed {took:.3f} s after the revocation on the other")
    assert took < REVOKED_CLOSE_S, f"{owner[0]} closed the revoked stream after {took:.2f} s"


async def test_a_webhooks_rate_limit_holds_across_instances(tmp_path: Path) -> None:
    async with migrated_schema() as url:
        await _site(url, tmp_path)
        async with open_store(url) as store:
            limited = await create_webhook(
                store,
                _settings(url),
                Keys.load(_settings(url)),
                "acme",
                name="limited",
                channel="local:ops",
                prompt="p",
                options=WebhookOptions(rate_per_min=6, burst=10),
                actor="t",
            )
        path = _hook_path(limited.url)
        statuses: list[int] = []
        waits: list[int] = []
        async with (
            behind_nginx(tmp_path, url, **INSTANCE_ENV) as (a, b, nginx),
            httpx2.AsyncClient(timeout=15) as client,
        ):

            async def send(n: int) -> None:
                response = await client.post(f"{nginx}{path}", json={"n": n})
                statuses.append(response.status_code)
                if response.status_code == 429:
                    waits.append(int(response.headers["retry-after"]))

            async with trio.open_nursery() as nursery:
                for n in range(30):
                    nursery.start_soon(send, n)
    # nginx sent deliveries to both instances...
    answered = _answered(tmp_path, [a, b], path)
    assert sum(answered.values()) == 30, answered
    assert answered[a.base_url] > 0 and answered[b.base_url] > 0, answered
    # ...each of which alone would have let 10 through: together they still let 10.
    assert statuses.count(202) == 10, statuses
    assert statuses.count(429) == 20
    assert all(1 <= w <= 10 for w in waits), waits
