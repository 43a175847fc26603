"""The webhooks' delivery log in the store, the same on SQLite and PostgreSQL.

Rows go through the group commit of deliveries: an accepted delivery's row,
queued right after its event, is written only if the event is (in the same
commit); any other row only while its webhook exists, and no row can fail
the statements grouped with it. Listing is newest first with filters;
trimming keeps each webhook's newest rows; expiry deletes by age; a deleted
webhook takes its log with it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs
import outcome
import pytest
import trio

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


async def test_accepted_rows_ride_with_their_events_and_exist_only_if_the_events_do(
    store: SqlStore,
) -> None:
    hook, other = await make_hooks(store)
    stored = Event(webhook_id=hook.id, body=b'{"n": 1}', dedup_key="k-1", received_at=T0)
    again = Event(webhook_id=hook.id, body=b'{"n": 1}', dedup_key="k-1", received_at=T0)
    elsewhere = Event(webhook_id=other.id, body=b'{"n": 2}', received_at=T0)
    written = Written()
    # As the door queues them in one turn: the events, then their rows in one statement.
    events = {"first": stored, "again": again, "elsewhere": elsewhere}
    for name, event in events.items():
        store.ingest_nowait(event, written.answer(name))
    rows = [
        Delivery(
            webhook_id=event.webhook_id,
            received_at=event.received_at,
            status=202,
            reason=ACCEPTED,
            body_bytes=len(event.body),
            event_id=event.id,
        )
        for event in events.values()
    ]
    store.log_deliveries_nowait(rows, written.answer("rows"), after_event=True)
    # The redelivery was not stored (its key is taken): neither is its row.
    assert await written.wait() == {"first": True, "again": False, "elsewhere": True, "rows": 2}
    (found,) = await store.webhook_deliveries(hook.id, limit=10)
    assert (found.status, found.reason, found.event_id) == (202, ACCEPTED, stored.id)
    (theirs,) = await store.webhook_deliveries(other.id, limit=10)
    assert theirs.event_id == elsewhere.id


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
        row(hook, 1, status=202, reason=ACCEPTED),
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
