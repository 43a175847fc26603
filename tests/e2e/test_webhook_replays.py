"""Bulk replay of a webhook's failed events, on a serving agentws: each once, at a rate.

The model is a fake Messages API on loopback that refuses every request
(400, a terminal failure) while it is "down", and answers once it is "up"
again: the events that failed meanwhile are then replayed in bulk through
the admin API and the CLI (a process of its own, on the same database), and
each runs once, no sooner than the rate allows.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx2
import trio
from cryptography.fernet import Fernet

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry, ChatMessage, Event, EventStatus
from tests.e2e.fake_anthropic import API_KEY, Failure, Reply, Turn, fake_anthropic
from tests.e2e.mcp_support import Running, running
from tests.e2e.polling import wait_until
from tests.e2e.run_support import MODEL, deliver, finished, hook
from tests.in_process import run_cli_beside
from tests.support import clean_env

RATE = 120  # a minute: one every half second
WAIT_S = 20.0


@attrs.define
class Model:
    """Whether the fake model is down (every request refused) or up."""

    down: bool = True

    def __call__(self, request: dict[str, Any]) -> Reply:
        return Failure(400, "the model is down (a test)") if self.down else Turn("Done.")


@asynccontextmanager
async def served(tmp_path: Path, model: Model) -> AsyncIterator[tuple[Running, httpx2.AsyncClient]]:
    """agentws with ``model``, and an admin API client."""
    async with fake_anthropic(model) as fake:
        settings = {
            "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
            "AGENTWS_MODEL": MODEL,
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
        async with running(tmp_path, with_library=False, **settings) as server:
            await create_admin(server.store, "alice", actor="t")
            _, token = await create_admin_token(server.store, "alice", "tests", actor="t")
            async with httpx2.AsyncClient(
                base_url=f"{server.base_url}/api/v1",
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            ) as api:
                yield server, api


async def failed_events(server: Running, issued: Any, count: int) -> list[str]:
    ids = [await deliver(issued, {"n": n}) for n in range(count)]
    for event_id in ids:
        assert (await finished(server.store, event_id)).status is EventStatus.FAILED
    return ids


async def replays_of(server: Running, webhook_id: str) -> list[Event]:
    events = await server.store.select(Event, webhook_id=webhook_id)
    return [e for e in events if e.replay_of is not None]


async def all_replays_finished(server: Running, webhook_id: str, count: int) -> list[Event]:
    found: list[Event] = await wait_until(
        lambda: replays_of(server, webhook_id),
        lambda found: len(found) == count and all(e.status.finished for e in found),
        timeout_s=WAIT_S,
        what=f"{count} replays to finish",
    )
    return found


async def test_failed_events_are_replayed_once_each_no_faster_than_the_rate(
    tmp_path: Path,
) -> None:
    model = Model()
    async with served(tmp_path, model) as (server, api):
        issued = await hook(server, concurrency=4)
        failed = await failed_events(server, issued, 5)
        done_before = await deliver(issued, {"n": "never failed"})
        model.down = False
        await finished(server.store, done_before)
        shown = (await api.get("/workspaces/acme/webhooks/ci/failures")).json()
        assert shown["replayable"] == 5

        # A dry run lists them, oldest first, and queues nothing.
        dry = await api.post("/workspaces/acme/webhooks/ci/replay", json={"dry_run": True})
        assert dry.status_code == 200, dry.text
        assert [e["id"] for e in dry.json()["events"]] == failed
        assert (dry.json()["matched"], dry.json()["queued"]) == (5, 0)
        assert await replays_of(server, issued.id) == []

        # The action asked for twice at once: each failed event is replayed once.
        answers: list[dict[str, Any]] = []

        async def replay() -> None:
            response = await api.post(
                "/workspaces/acme/webhooks/ci/replay", json={"rate_per_min": RATE}
            )
            assert response.status_code == 200, response.text
            answers.append(response.json())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(replay)
            nursery.start_soon(replay)
        assert sorted(a["queued"] for a in answers) == [0, 5]
        # ... and once more, while they run: nothing more.
        again = await api.post("/workspaces/acme/webhooks/ci/replay", json={})
        assert again.json()["queued"] == 0

        replays = await all_replays_finished(server, issued.id, 5)
        assert Counter(r.replay_of for r in replays) == Counter(failed)
        assert all(r.status is EventStatus.DONE and r.attempts == 1 for r in replays)
        # Spaced by the rate, and none ran before its time.
        replays.sort(key=lambda r: r.available_at)
        step = timedelta(seconds=60 / RATE)
        for earlier, later in itertools.pairwise(replays):
            assert later.available_at - earlier.available_at == step
        for r in replays:
            assert r.started_at is not None and r.started_at >= r.available_at
        # In their originals' order.
        assert [r.replay_of for r in replays] == failed
        # One message each (besides the failure alert's and its recovery's), and the
        # originals keep their failure.
        posted = [m.event_id for m in await server.store.select(ChatMessage) if m.event_id]
        assert sorted(posted) == sorted([done_before, *(r.id for r in replays)])
        for event_id in failed:
            assert (await server.store.get(Event, event_id)).status is EventStatus.FAILED
        assert (await api.get("/workspaces/acme/webhooks/ci/failures")).json()["replayable"] == 0
        audit = await server.store.select(AuditEntry, action="webhook.replay")
        assert [e.detail["queued"] for e in audit] == [5]


async def test_a_replay_that_fails_is_replayed_next_time_instead_of_its_original(
    tmp_path: Path,
) -> None:
    model = Model()
    async with served(tmp_path, model) as (server, api):
        issued = await hook(server)
        (original,) = await failed_events(server, issued, 1)
        first = (await api.post("/workspaces/acme/webhooks/ci/replay", json={})).json()
        (replay,) = await all_replays_finished(server, issued.id, 1)
        assert first["events"][0]["replay_id"] == replay.id
        assert replay.status is EventStatus.FAILED  # the model is still down
        model.down = False
        second = (await api.post("/workspaces/acme/webhooks/ci/replay", json={})).json()
        assert [e["id"] for e in second["events"]] == [replay.id]
        replays = await all_replays_finished(server, issued.id, 2)
        last = next(r for r in replays if r.replay_of == replay.id)
        assert last.status is EventStatus.DONE
        assert {r.replay_of for r in replays} == {original, replay.id}


async def test_the_selection_takes_a_time_range_and_an_error_text(tmp_path: Path) -> None:
    model = Model()
    async with served(tmp_path, model) as (server, api):
        issued = await hook(server)
        early = await failed_events(server, issued, 2)
        middle = (await server.store.get(Event, early[-1])).received_at + timedelta(microseconds=1)
        late = await failed_events(server, issued, 2)
        model.down = False
        since = await api.post(
            "/workspaces/acme/webhooks/ci/replay",
            json={"since": middle.isoformat(), "dry_run": True},
        )
        assert [e["id"] for e in since.json()["events"]] == late
        until = await api.post(
            "/workspaces/acme/webhooks/ci/replay",
            json={"until": middle.isoformat(), "error_contains": "MODEL IS DOWN"},
        )
        assert [e["id"] for e in until.json()["events"]] == early
        assert until.json()["queued"] == 2
        other = await api.post(
            "/workspaces/acme/webhooks/ci/replay", json={"error_contains": "channel", "limit": 1}
        )
        assert other.json()["matched"] == 0
        bad = await api.post("/workspaces/acme/webhooks/ci/replay", json={"since": "yesterday-ish"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid"
        await all_replays_finished(server, issued.id, 2)


async def _cli(server: Running, *args: str) -> tuple[int, str]:
    """``agentws ARGS`` (run in this process as the program would), on the server's database."""
    done = await run_cli_beside(
        [*args, "--database", server.runtime.settings.database_url],
        cwd=Path.cwd(),
        env=clean_env(AGENTWS_SECRET_KEY=server.runtime.settings.secret_key or ""),
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


async def test_the_cli_replays_failed_events_with_a_dry_run_first(tmp_path: Path) -> None:
    model = Model()
    async with served(tmp_path, model) as (server, _):
        issued = await hook(server)
        failed = await failed_events(server, issued, 3)
        model.down = False
        status, out = await _cli(server, "webhook", "replay", "acme", "ci", "--failed", "--dry-run")
        assert status == 0, out
        assert "Dry run: 3 failed events of webhook 'ci' would be replayed" in out
        assert all(event_id in out for event_id in failed)
        assert await replays_of(server, issued.id) == []
        status, out = await _cli(
            server, "webhook", "replay", "acme", "ci", "--failed", "--since", "1h", "--rate", "600"
        )
        assert status == 0, out
        assert "Queued 3 replays of failed events received since" in out
        replays = await all_replays_finished(server, issued.id, 3)
        assert {r.replay_of for r in replays} == set(failed)
        status, out = await _cli(server, "webhook", "replay", "acme", "ci", "--failed")
        assert status == 0 and "Nothing to replay" in out, out
