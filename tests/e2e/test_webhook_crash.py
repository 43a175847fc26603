"""A webhook server killed with SIGKILL mid-work: after a restart on the same store,
every accepted event is posted exactly once and marked done.

The first server (``crash-a``) takes a burst of deliveries and is killed while
its worker pool is busy, leaving leases behind. The second (``crash-b``) runs
the events that were still queued at once, and the ones ``crash-a`` held once
their leases expire (``AGENTWS_RUN_TIMEOUT_S`` + 5 s after they were taken).
"""

from __future__ import annotations

import json
import signal
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import trio

from tests.e2e.polling import wait_until
from tests.e2e.process_support import POLL_S, Server, alive, serve_process
from tests.support import run_agentws

EVENTS = 240
WEBHOOKS = 3
# Deliveries in flight at once.
SENDERS = 32
RUN_TIMEOUT_S = 2
# Every delivery is answered once its event is stored.
REQUEST_S = 15.0
# Posting the whole burst.
POST_ALL_S = 60.0
# crash-a must have posted a first message within this long of the burst.
FIRST_MESSAGE_S = 30.0
# crash-b must finish everything: queued events at once, crash-a's after its leases expire.
RECOVERY_S = 60.0
GRACE_S = 3.0
# Exit after SIGTERM comes within the grace period; slack for interpreter teardown.
EXIT_S = GRACE_S + 5.0


def _read_db(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql``, read on a read-only connection (WAL: beside the server's writer)."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as conn:
        return list(conn.execute(sql, args).fetchall())


async def _query(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return await trio.to_thread.run_sync(_read_db, path, sql, *args)


async def _count(path: Path, sql: str) -> int:
    ((count,),) = await _query(path, sql)
    return int(count)


def _serve(tmp_path: Path, database_url: str, instance_id: str) -> Any:
    return serve_process(
        tmp_path,
        database_url,
        instance_id,
        AGENTWS_RUN_TIMEOUT_S=str(RUN_TIMEOUT_S),
        AGENTWS_WORKER_CONCURRENCY="4",
        AGENTWS_SHUTDOWN_GRACE_S=str(GRACE_S),
    )


async def _create_webhook(tmp_path: Path, database_url: str, name: str) -> str:
    """The path (``/hooks/<token>``) of a new webhook of workspace acme."""
    code, stdout, stderr = await run_agentws(
        tmp_path,
        database_url,
        "webhook",
        "create",
        "acme",
        "--name",
        name,
        "--channel",
        "local:ops",
        "--prompt",
        "Summarise",
        "--concurrency",
        "4",
        "--rate",
        "100000/min",
        "--burst",
        "100000",
        "--json",
    )
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["active"] is True
    assert data["concurrency"] == 4
    path = urlsplit(data["url"]).path
    assert path.startswith("/hooks/")
    return path


async def _deliver(server: Server, hook_paths: list[str]) -> list[str]:
    """POST ``EVENTS`` unique events spread over the webhooks; their event ids, all 202."""
    accepted: list[str] = []
    refused: list[tuple[int, int, str]] = []
    limiter = trio.CapacityLimiter(SENDERS)

    async def send(client: httpx2.AsyncClient, n: int) -> None:
        async with limiter:
            response = await client.post(
                f"{server.base_url}{hook_paths[n % len(hook_paths)]}",
                json={"event": "e", "n": n},
            )
        if response.status_code == 202:
            body = response.json()
            assert body["status"] == "queued"
            accepted.append(body["event_id"])
        else:
            refused.append((n, response.status_code, response.text))

    limits = httpx2.Limits(max_connections=SENDERS, max_keepalive_connections=SENDERS)
    async with httpx2.AsyncClient(timeout=REQUEST_S, limits=limits) as client:
        with trio.fail_after(POST_ALL_S):
            async with trio.open_nursery() as nursery:
                for n in range(EVENTS):
                    nursery.start_soon(send, client, n)
    assert not refused, refused[:5]
    assert len(set(accepted)) == EVENTS
    return accepted


async def test_sigkill_mid_work_then_restart_posts_every_event_once(
    tmp_path: Path, sqlite_url: str
) -> None:
    db = tmp_path / "agentws.db"
    code, _, stderr = await run_agentws(tmp_path, sqlite_url, "init")
    assert code == 0, stderr
    code, _, stderr = await run_agentws(tmp_path, sqlite_url, "workspace", "create", "acme")
    assert code == 0, stderr
    hook_paths = [await _create_webhook(tmp_path, sqlite_url, f"w{i}") for i in range(WEBHOOKS)]

    # --- crash-a: take the burst, then die with work outstanding ------------------------------
    async with _serve(tmp_path, sqlite_url, "crash-a") as first:
        accepted = await _deliver(first, hook_paths)
        total = len(accepted)
        posted_before = 0

        async def some_posted() -> bool:
            nonlocal posted_before
            posted_before = await _count(db, "SELECT COUNT(*) FROM chat_messages")
            return posted_before > 0

        await wait_until(
            some_posted,
            timeout_s=FIRST_MESSAGE_S,
            what="crash-a's first message",
            interval_s=POLL_S,
            still_worth_it=alive([first]),
        )
        assert posted_before < total, (
            f"crash-a posted all {total} messages before it could be killed: "
            "deliver more events or slow the worker down"
        )
        first.process.send_signal(signal.SIGKILL)
        with trio.fail_after(5.0):
            assert await first.process.wait() == -signal.SIGKILL

    # The store as the killed process left it.
    by_status = dict(await _query(db, "SELECT status, COUNT(*) FROM events GROUP BY status"))
    running_at_kill = {
        event_id: datetime.fromisoformat(expires)
        for event_id, owner, expires in await _query(
            db,
            "SELECT id, lease_owner, lease_expires_at FROM events WHERE status = 'running'",
        )
        if owner == "crash-a"
    }
    running = by_status.get("running", 0)
    queued = by_status.get("queued", 0)
    posted_at_kill = await _count(db, "SELECT COUNT(*) FROM chat_messages")
    posted_not_done = await _count(
        db,
        "SELECT COUNT(*) FROM events e JOIN chat_messages m ON m.event_id = e.id"
        " WHERE e.status = 'running'",
    )
    print(
        f"at the kill: {by_status} ({total} accepted), {posted_at_kill} messages, "
        f"{posted_not_done} of the running events already posted"
    )
    assert sum(by_status.values()) == total
    assert by_status.get("failed", 0) == 0
    assert running + queued > 0, "the kill came after all the work was done"
    assert len(running_at_kill) == running, "a running event not leased by crash-a"

    # --- crash-b: same store, picks up the queue and crash-a's expired leases ----------------
    async with _serve(tmp_path, sqlite_url, "crash-b") as second:
        started = trio.current_time()

        async def all_finished() -> bool:
            finished = await _count(
                db, "SELECT COUNT(*) FROM events WHERE status IN ('done', 'failed')"
            )
            return finished == total

        await wait_until(
            all_finished,
            timeout_s=RECOVERY_S,
            what="every event to finish",
            interval_s=POLL_S,
            still_worth_it=alive([second]),
        )
        recovery_s = trio.current_time() - started

        second.process.send_signal(signal.SIGTERM)
        with trio.fail_after(EXIT_S):
            assert await second.process.wait() == 0
        stderr = second.stderr()
    print(f"crash-b finished the {queued + running} outstanding events in {recovery_s:.1f} s")
    assert "Traceback" not in stderr, stderr
    assert "lease had passed" not in stderr, stderr

    messages = dict(await _query(db, "SELECT event_id, id FROM chat_messages"))
    assert len(messages) == total
    assert set(messages) == set(accepted)
    assert await _count(db, "SELECT COUNT(*) FROM chat_messages WHERE channel = 'local:ops'") == (
        total
    )

    events = {
        row[0]: row[1:]
        for row in await _query(
            db,
            "SELECT id, status, message_id, error, lease_owner, attempts, finished_at FROM events",
        )
    }
    assert set(events) == set(accepted)
    failed = {i: e for i, e in events.items() if e[0] == "failed"}
    assert not failed, failed
    for event_id, (status, message_id, _error, lease_owner, attempts, _) in events.items():
        assert status == "done", (event_id, status)
        assert message_id == messages[event_id], event_id
        assert lease_owner is None, event_id
        assert attempts >= 1, event_id
    # crash-a's runs were taken over only once their leases had expired, by crash-b.
    for event_id, expired_at in running_at_kill.items():
        _status, _message, _error, _owner, attempts, finished_at = events[event_id]
        assert attempts >= 2, event_id
        assert datetime.fromisoformat(finished_at) >= expired_at, event_id
        ((runs_b,),) = await _query(
            db,
            "SELECT COUNT(*) FROM event_attempts"
            " WHERE event_id = ? AND instance_id = 'crash-b' AND outcome = 'done'",
            event_id,
        )
        assert runs_b == 1, event_id
