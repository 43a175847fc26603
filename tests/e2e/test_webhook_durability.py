"""Every delivery answered 202 is in the store, even when the server dies the moment after.

32 senders post back to back to a server that is killed with SIGKILL while
the burst is under way, so that commits are in progress and deliveries are
waiting for them: each event a sender was answered 202 for is committed
by then (another connection reads it at once) and is in the database after
the kill, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
import trio

from agentws.store import open_store
from tests.e2e.process_support import serve_process
from tests.support import run_agentws

SENDERS = 32
# 202s before the kill: enough commits under way, each carrying several deliveries.
ACCEPTED_BEFORE_KILL = 300
BURST_S = 60.0


async def _webhook_path(tmp_path: Path, database_url: str) -> str:
    for args in (("init",), ("workspace", "create", "acme")):
        code, _, stderr = await run_agentws(tmp_path, database_url, *args)
        assert code == 0, stderr
    code, stdout, stderr = await run_agentws(
        tmp_path,
        database_url,
        "webhook",
        "create",
        "acme",
        "--name",
        "burst",
        "--channel",
        "local:ops",
        "--prompt",
        "Summarise",
        "--rate",
        "100000/min",
        "--burst",
        "100000",
        "--json",
    )
    assert code == 0, stderr
    return urlsplit(json.loads(stdout)["url"]).path


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def database_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(name))


async def test_every_event_answered_202_survives_a_kill_mid_burst(
    tmp_path: Path, database_url: str
) -> None:
    path = await _webhook_path(tmp_path, database_url)
    accepted: list[str] = []
    failed_after_kill = 0
    async with (
        open_store(database_url, create=False) as reader,
        serve_process(tmp_path, database_url, "durable", AGENTWS_WORKER_CONCURRENCY="1") as server,
    ):
        killed = trio.Event()
        unseen: list[str] = []

        async def sender(n: int) -> None:
            nonlocal failed_after_kill
            limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
            async with httpx2.AsyncClient(timeout=15.0, limits=limits) as client:
                for i in range(100_000):
                    try:
                        response = await client.post(
                            f"{server.base_url}{path}", json={"sender": n, "i": i}
                        )
                    except httpx2.TransportError:
                        assert killed.is_set(), "a delivery failed before the kill"
                        failed_after_kill += 1
                        return
                    assert response.status_code == 202, response.text
                    event_id = response.json()["event_id"]
                    accepted.append(event_id)
                    # Committed before the answer: visible to any reader now.
                    found = await reader.database.fetch(
                        "SELECT id FROM events WHERE id = $1", event_id
                    )
                    if not found:
                        unseen.append(event_id)
                    if len(accepted) >= ACCEPTED_BEFORE_KILL and not killed.is_set():
                        # While the other senders' deliveries wait for their commit.
                        server.process.send_signal(signal.SIGKILL)
                        killed.set()

        with trio.fail_after(BURST_S):
            async with trio.open_nursery() as nursery:
                for n in range(SENDERS):
                    nursery.start_soon(sender, n)
            assert await server.process.wait() == -signal.SIGKILL
        assert not unseen, f"{len(unseen)} events answered 202 were not committed yet"
    assert len(accepted) >= ACCEPTED_BEFORE_KILL
    assert failed_after_kill > 0  # deliveries were under way when it died
    async with open_store(database_url) as store:
        rows = await store.database.fetch("SELECT id FROM events")
    stored = {row["id"] for row in rows}
    missing = set(accepted) - stored
    assert not missing, f"{len(missing)} of {len(accepted)} events answered 202 are not stored"
