"""The webhooks' delivery log in the store, the same on SQLite and PostgreSQL.

An accepted delivery's entry is its event (one that came through the URL:
it has a source); the other answers are rows, which go through the group
commit of deliveries, each only while its webhook exists, and no row can
fail the statements grouped with it. Listing is newest first, events and
rows together, with filters; trimming keeps each webhook's newest rows;
expiry deletes rows by age; a deleted webhook takes its log with it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs
import outcome
import pytest
import trio

from agentws.domain.deliveries import IngestOutcome
from agentws.domain.delivery_log import ACCEPTED, DUPLICATE, Delivery
from agentws.domain.models import Event, Webhook, Workspace
from agentws.store import SqlStore
from agentws.store.sql_deliveries import ROWS_PER_STATEMENT

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


class Written:
    """The answers of grouped writes, awaited together."""

    def __init__(self) -> None:
        self.results: dict[str, outcome.Outcome[object]] = {}
        self._expected = 0
        self._done = trio.Event()

    def answer(self, name: str) -> Callable[[outcome.Outcome[object]], None]:
        self._expected += 1

        def record(result: outcome.Outcome[object]) -> None:
            self.results[name] = result
            if len(self.results) == self._expected:
                self._done.set()

        return record

    async def wait(self) -> dict[str, object]:
        with trio.fail_after(10):
            await self._done.wait()
        return {name: result.unwrap() for name, result in self.results.items()}


async def make_hooks(store: SqlStore, n: int = 2) -> list[Webhook]:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    return [
        await store.insert(
            Webhook(
                workspace_id=ws.id,
                name=f"hook-{i}",
                channel="local:ops",
                prompt="p",
                token_hash=f"hash-{i}",
            )
        )
        for i in range(n)
    ]


def row(hook: Webhook, n: int, *, status: int = 401, reason: str = "invalid_signature") -> Delivery:
    return Delivery(
        webhook_id=hook.id,
        received_at=T0 + timedelta(seconds=n),
        status=status,
        reason=reason,
        body_bytes=100 + n,
        headers={"content-type": "application/json", "x-hub-signature-256": "sha256=***"},
        source="192.0.2.7",
    )


async def log_rows(store: SqlStore, *rows: Delivery) -> None:
    """Write ``rows``, as many as a statement takes at a time."""
    written = Written()
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[start : start + ROWS_PER_STATEMENT]
        store.log_deliveries_nowait(chunk, written.answer(f"rows-{start}"))
    counts = await written.wait()
    assert sum(counts.values()) == len(rows), counts  # type: ignore[arg-type]


async def count(store: SqlStore, hook: Webhook) -> int:
    rows = await store.database.fetch(
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = $1", hook.id
    )
    return int(rows[0]["n"])


async def test_a_refusal_is_logged_and_read_back_as_written(store: SqlStore) -> None:
    hook, _ = await make_hooks(store)
    refused = row(hook, 1)
    await log_rows(store, refused)
    (found,) = await store.webhook_deliveries(hook.id, limit=10)
    assert found.id is not None
    assert found == attrs.evolve(refused, id=found.id)


async def test_accepted_deliveries_are_their_events(store: SqlStore) -> None:
    hook, other = await make_hooks(store)
    delivered = Event(
        webhook_id=hook.id,
        body=b'{"n": 1}',
        headers={"content-type": "application/json", "x-github-event": "push"},
        dedup_key="k-1",
        received_at=T0 + timedelta(seconds=2),
        source="198.51.100.7",
    )
    unknown_peer = Event(
        webhook_id=hook.id, body=b'{"n": 22}', received_at=T0 + timedelta(seconds=4), source=""
    )
    # Not requests to the URL: a replay, and an event from before the log.
    replay = Event(webhook_id=hook.id, body=b"{}", replay_of=delivered.id, received_at=T0)
    older = Event(webhook_id=hook.id, body=b"{}", received_at=T0 - timedelta(days=1))
    theirs = Event(webhook_id=other.id, body=b"{}", received_at=T0, source="192.0.2.1")
    results = await store.ingest_events(
        [delivered, unknown_peer, replay, older, theirs], dedup_since=T0 - timedelta(days=3)
    )
    assert all(r.outcome is IngestOutcome.ACCEPTED for r in results)
    # One event has run (its status changed): it is still the delivery it was.
    later = datetime.now(UTC) + timedelta(hours=1)
    (claimed,) = await store.claim_events(
        owner="o", now=later, lease_expires_at=later + timedelta(hours=1), limit=1
    )
    await log_rows(store, row(hook, 3))
    entries = await store.webhook_deliveries(hook.id, limit=10)
    assert [(d.status, d.reason, d.event_id, d.id is None) for d in entries] == [
        (202, ACCEPTED, unknown_peer.id, True),
        (401, "invalid_signature", None, False),
        (202, ACCEPTED, delivered.id, True),
    ]
    accepted = entries[2]
    assert accepted == Delivery(
        webhook_id=hook.id,
        received_at=delivered.received_at,
        status=202,
        reason=ACCEPTED,
        body_bytes=len(delivered.body),
        headers=delivered.headers,
        source="198.51.100.7",
        event_id=delivered.id,
    )
    assert entries[0].source is None  # the server did not say
    assert claimed.id in {delivered.id, unknown_peer.id, replay.id, older.id}

    async def ids(**where: object) -> list[str | int | None]:
        found = await store.webhook_deliveries(hook.id, **where)  # type: ignore[arg-type]
        return [d.event_id or d.id for d in found]

    assert await ids(limit=1) == [unknown_peer.id]
    assert await ids(limit=10, status="accepted") == [unknown_peer.id, delivered.id]
    assert await ids(limit=10, status=202) == [unknown_peer.id, delivered.id]
    assert await ids(limit=10, reason=ACCEPTED) == [unknown_peer.id, delivered.id]
    assert len(await ids(limit=10, status="refused")) == 1
    assert await ids(limit=10, status=200) == []
    assert await ids(limit=10, since=T0 + timedelta(seconds=3.5)) == [unknown_peer.id]


async def test_a_row_of_a_deleted_webhook_is_not_written_and_fails_nothing(
    store: SqlStore,
) -> None:
    hook, other = await make_hooks(store)
    await store.delete(Webhook, hook.id)
    written = Written()
    store.log_deliveries_nowait([row(other, 1)], written.answer("before"))
    store.log_deliveries_nowait([row(hook, 2), row(other, 3)], written.answer("mixed"))
    store.log_deliveries_nowait([row(other, 4)], written.answer("after"))
    assert await written.wait() == {"before": 1, "mixed": 1, "after": 1}
    assert [d.body_bytes for d in await store.webhook_deliveries(other.id, limit=10)] == [
        104,
        103,
        101,
    ]


async def test_rows_are_one_statement_of_1_to_500(store: SqlStore) -> None:
    (hook,) = await make_hooks(store, 1)
    for rows in ([], [row(hook, n) for n in range(ROWS_PER_STATEMENT + 1)]):
        with pytest.raises(ValueError, match="rows a statement"):
            store.log_deliveries_nowait(rows, Written().answer("none"))


async def test_listing_is_newest_first_per_webhook_with_filters(store: SqlStore) -> None:
    hook, other = await make_hooks(store)
    await log_rows(
        store,
        row(hook, 1, status=202, reason="captured"),
        row(hook, 2),
        row(other, 3),
        row(hook, 4, status=413, reason="payload_too_large"),
        row(hook, 5, status=200, reason=DUPLICATE),
    )

    async def sizes(**where: object) -> list[int]:
        return [d.body_bytes for d in await store.webhook_deliveries(hook.id, **where)]  # type: ignore[arg-type]

    assert await sizes(limit=10) == [105, 104, 102, 101]
    assert await sizes(limit=2) == [105, 104]
    assert await sizes(limit=10, status="accepted") == [105, 101]
    assert await sizes(limit=10, status="refused") == [104, 102]
    assert await sizes(limit=10, status=413) == [104]
    assert await sizes(limit=10, reason="invalid_signature") == [102]
    assert await sizes(limit=10, status="refused", reason=ACCEPTED) == []
    assert await sizes(limit=10, reason=ACCEPTED) == []  # rows are never queued: events are
    assert await sizes(limit=10, since=T0 + timedelta(seconds=4)) == [105, 104]


async def test_trimming_keeps_each_webhooks_newest_rows(store: SqlStore) -> None:
    hook, other = await make_hooks(store)
    await log_rows(store, *(row(hook, n) for n in range(30)), *(row(other, n) for n in range(5)))
    assert await store.webhooks_over_delivery_bound(10) == [hook.id]
    assert await store.trim_webhook_deliveries(hook.id, keep=10) == 20
    assert [d.body_bytes for d in await store.webhook_deliveries(hook.id, limit=100)] == list(
        range(129, 119, -1)
    )
    # Nothing over the bound any more: a trim finds nothing to delete.
    assert await store.trim_webhook_deliveries(hook.id, keep=10) == 0
    assert await store.trim_webhook_deliveries(other.id, keep=10) == 0
    assert await store.webhooks_over_delivery_bound(10) == []
    assert (await count(store, hook), await count(store, other)) == (10, 5)


async def test_trimming_deletes_a_long_log_in_batches(store: SqlStore) -> None:
    (hook,) = await make_hooks(store, 1)
    await log_rows(store, *(row(hook, n) for n in range(2500)))
    assert await store.trim_webhook_deliveries(hook.id, keep=3) == 2497
    assert [d.body_bytes for d in await store.webhook_deliveries(hook.id, limit=10)] == [
        2599,
        2598,
        2597,
    ]


async def test_expiry_deletes_rows_older_than_a_time(store: SqlStore) -> None:
    hook, other = await make_hooks(store)
    await log_rows(store, *(row(hook, n) for n in range(4)), row(other, 1), row(other, 9))
    assert await store.expire_webhook_deliveries(T0 + timedelta(seconds=2)) == 3
    assert [d.body_bytes for d in await store.webhook_deliveries(hook.id, limit=10)] == [103, 102]
    assert [d.body_bytes for d in await store.webhook_deliveries(other.id, limit=10)] == [109]


async def test_a_deleted_webhook_takes_its_log_with_it(store: SqlStore) -> None:
    hook, other = await make_hooks(store)
    await log_rows(store, row(hook, 1), row(other, 2))
    await store.delete(Webhook, hook.id)
    assert await count(store, hook) == 0
    assert await count(store, other) == 1


async def test_trimming_keeps_the_rows_the_overview_has_not_counted(store: SqlStore) -> None:
    # The overview counts refusals from these rows once a minute: a flood trimmed before
    # then would go uncounted, so rows after ``counted_through`` stay past the bound.
    (hook,) = await make_hooks(store, 1)
    await log_rows(store, *(row(hook, n) for n in range(30)))
    ids = sorted(d.id for d in await store.webhook_deliveries(hook.id, limit=100))
    assert await store.trim_webhook_deliveries(hook.id, keep=10, counted_through=ids[4]) == 5
    assert await count(store, hook) == 25
    # Once counted, the bound holds again.
    assert await store.trim_webhook_deliveries(hook.id, keep=10, counted_through=ids[-1]) == 15
    assert await count(store, hook) == 10
