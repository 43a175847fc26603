"""Bulk replays in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

The candidates of a bulk replay are a webhook's failed events matching a
:class:`~agentws.domain.replays.ReplaySelection` that no event replays yet
(``replay_of``), oldest first. Queuing the replays copies each original's
body and headers inside the database (bodies never travel), each insert
guarded by "not replayed yet", in one transaction that holds the webhook's
replay lock: on PostgreSQL a transaction-scoped advisory lock (not a lock
on the webhook's row, which the door's inserts take a share of), on SQLite
the write lock. So a bulk replay asked for twice at once, on any
instances, replays each event once.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from agentws.domain.models import Event, EventStatus
from agentws.domain.replays import ReplayCandidate, ReplayOrder, ReplaySelection, like_pattern
from agentws.store.queries import Queries
from agentws.store.tables import Dialect, table_for

__all__ = ["ReplayQueries", "ReplayStore"]

# The prompt an attempt ran with, from its transcript.
_PROMPT: dict[Dialect, str] = {
    "sqlite": "json_extract(transcript, '$.prompt')",
    "postgres": "transcript->>'prompt'",
}
# Copied from the original: everything but what a new event starts afresh.
_COPIED = {"webhook_id", "body", "body_hash", "headers"}


def _insert_replay() -> str:
    """One replay of ``$1`` (the original) as a new event, unless one exists already.

    Its own values: $2 id, $3 prompt, $4 available_at, $5 received_at.
    """
    own = {
        "id": "$2",
        "status": f"'{EventStatus.QUEUED.value}'",
        "attempts": "0",
        "available_at": "$4",
        "prompt": "$3",
        "replay_of": "o.id",
        "received_at": "$5",
    }
    columns = table_for(Event).columns
    values = [f"o.{c}" if c in _COPIED else own.get(c, "NULL") for c in columns]
    return (
        f"INSERT INTO events ({', '.join(columns)}) SELECT {', '.join(values)} FROM events o"
        f" WHERE o.id = $1 AND NOT EXISTS (SELECT 1 FROM events r WHERE r.replay_of = o.id)"
    )


class ReplayStore(Protocol):
    """Bulk replays of a webhook's failed events."""

    async def replay_candidates(
        self, webhook_id: str, selection: ReplaySelection, *, limit: int
    ) -> list[ReplayCandidate]:
        """The webhook's failed events ``selection`` takes that nothing replays yet, oldest
        first, at most ``limit``."""
        ...

    async def count_replay_candidates(self, webhook_id: str, selection: ReplaySelection) -> int:
        """How many events :meth:`replay_candidates` would list without a limit."""
        ...

    async def last_run_prompts(self, event_ids: Collection[str]) -> dict[str, str]:
        """The prompt each event's last recorded attempt ran with (events never run: absent)."""
        ...

    async def queue_replays(self, webhook_id: str, orders: list[ReplayOrder]) -> list[str]:
        """Queue the replays of ``orders`` (all of one webhook), each only if its original has
        none yet, in one transaction serialized per webhook; the ids of those queued."""
        ...


class ReplayQueries(Queries):
    """Bulk replay queries; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def _selected(self, webhook_id: str, selection: ReplaySelection) -> tuple[str, list[Any]]:
        args: list[Any] = [webhook_id, EventStatus.FAILED.value]
        where = "e.webhook_id = $1 AND e.status = $2"
        if selection.since is not None:
            args.append(self._ts(selection.since))
            where += f" AND e.received_at >= ${len(args)}"
        if selection.until is not None:
            args.append(self._ts(selection.until))
            where += f" AND e.received_at < ${len(args)}"
        if selection.error_contains:
            args.append(like_pattern(selection.error_contains))
            where += f" AND LOWER(e.error) LIKE ${len(args)} ESCAPE '\\'"
        where += " AND NOT EXISTS (SELECT 1 FROM events r WHERE r.replay_of = e.id)"
        return where, args

    async def replay_candidates(
        self, webhook_id: str, selection: ReplaySelection, *, limit: int
    ) -> list[ReplayCandidate]:
        where, args = self._selected(webhook_id, selection)
        rows = await self._db.fetch(
            f"SELECT e.id, e.received_at, e.error, e.prompt FROM events e WHERE {where}"
            f" ORDER BY e.received_at, e.id LIMIT {max(1, int(limit))}",
            *args,
        )
        table = table_for(Event)
        return [
            ReplayCandidate(
                id=row["id"],
                received_at=table.decode_value("received_at", row["received_at"], self.dialect),
                error=row["error"],
                prompt=row["prompt"],
            )
            for row in rows
        ]

    async def count_replay_candidates(self, webhook_id: str, selection: ReplaySelection) -> int:
        where, args = self._selected(webhook_id, selection)
        rows = await self._db.fetch(f"SELECT COUNT(*) AS n FROM events e WHERE {where}", *args)
        return int(rows[0]["n"])

    async def last_run_prompts(self, event_ids: Collection[str]) -> dict[str, str]:
        wanted = sorted(set(event_ids))
        prompts: dict[str, str] = {}
        # A few hundred ids a query: far below either database's limit on parameters.
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join(f"${i}" for i in range(1, len(chunk) + 1))
            rows = await self._db.fetch(
                f"SELECT event_id, {_PROMPT[self.dialect]} AS prompt FROM event_attempts"
                f" WHERE event_id IN ({marks}) ORDER BY started_at, id",
                *chunk,
            )
            for row in rows:
                if isinstance(row["prompt"], str) and row["prompt"]:
                    prompts[row["event_id"]] = row["prompt"]  # the last one wins
        return prompts

    async def queue_replays(self, webhook_id: str, orders: list[ReplayOrder]) -> list[str]:
        if not orders:
            return []
        insert = _insert_replay()
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if self.dialect == "postgres":
            statements.append(
                ("SELECT pg_advisory_xact_lock(hashtext('agentws:replay:' || $1))", (webhook_id,))
            )
        statements += [
            (
                insert,
                (
                    order.original_id,
                    order.event_id,
                    order.prompt,
                    self._ts(order.available_at),
                    self._ts(order.received_at),
                ),
            )
            for order in orders
        ]
        counts = await self._db.execute_batch(statements)
        inserted = counts[len(statements) - len(orders) :]
        return [o.event_id for o, n in zip(orders, inserted, strict=True) if n]
