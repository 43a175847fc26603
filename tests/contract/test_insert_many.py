"""Batches of records inserted at once (``insert_many``), the same on both stores.

Each number of rows in one ``INSERT`` is a statement of its own, compiled
and kept in the connection's statement cache with the values last bound to
it. The audit log's batches come in every size the load makes: written as
they came, a batch of each size up to 200 filled SQLite's cache with large
statements, and the process grew for tens of thousands of calls.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentws.domain.models import Event, EventStatus, Webhook, Workspace
from agentws.store import SqlStore, sql_records
from agentws.store.sql_records import chunk_sizes

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def test_batches_of_any_size_are_written_in_eight_statement_sizes_at_most() -> None:
    seen: set[int] = set()
    for count in range(1, 1001):
        sizes = list(chunk_sizes(count))
        assert sum(sizes) == count
        assert sizes == sorted(sizes, reverse=True)
        assert all(size & (size - 1) == 0 and size <= 128 for size in sizes), sizes
        seen.update(sizes)
    assert len(seen) == 8
    assert len(list(chunk_sizes(500))) <= 3 + 8  # the audit log's largest batch


def _event(hook: Webhook, n: int) -> Event:
    when = T0 + timedelta(seconds=n)
    return Event(
        id=f"evt_{n:05d}",
        webhook_id=hook.id,
        status=EventStatus.DONE,
        body=b"{}",
        received_at=when,
        available_at=when,
    )


async def test_every_row_of_batches_of_many_sizes_is_stored_in_few_statements(
    store: SqlStore,
) -> None:
    workspace = await store.insert(Workspace(slug="acme", name="Acme"))
    hook = await store.insert(
        Webhook(
            workspace_id=workspace.id, name="ci", channel="local:ops", prompt="p", token_hash="h"
        )
    )
    sql_records._insert_rows.cache_clear()
    made = 0
    for size in [*range(1, 41), *range(120, 140), 350]:
        await store.insert_many([_event(hook, made + n) for n in range(size)])
        made += size
    stored = await store.select(Event, webhook_id=hook.id)
    assert sorted(event.id for event in stored) == [f"evt_{n:05d}" for n in range(made)]
    # Sixty-one sizes of batch, written with statements of eight sizes.
    assert sql_records._insert_rows.cache_info().misses <= 8
