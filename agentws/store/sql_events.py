"""The event queue, in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

The queue is a table: an event is ``queued`` (and available from
``available_at``), then ``running`` under a lease (an owner and an expiry),
then ``done`` or ``failed``, or ``queued`` again for a retry. Every change of
state is one conditional ``UPDATE``, so two claimers never both get an event
and a worker whose lease was taken over cannot finish it. A lease that
expires (its process died) makes the event claimable again. Finishing an
event also counts (or ends) its webhook's failure streak, in the same
transaction (:mod:`.sql_streaks`).

Claims are fair between webhooks: the free slots go round the webhooks with
work, those with the fewest runs under way first. A webhook never gets more
than its ``concurrency``, counting its events that hold a live lease
anywhere, and a webhook with concurrency 1 runs its events strictly in
arrival order (the oldest unfinished one blocks the rest, even while it
waits for a retry).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from itertools import chain, zip_longest
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, Unpack

from agentws.domain.models import Event, EventAttempt, EventStatus, Webhook
from agentws.store.queries import Queries
from agentws.store.sql_streaks import streak_statements
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from agentws.store.database import Row

__all__ = ["EventEnding", "EventQueries", "EventStore", "RecentEvents"]

_QUEUED, _RUNNING = EventStatus.QUEUED.value, EventStatus.RUNNING.value
# An event that can be claimed at $1: queued and due, or running on a dead lease.
_CLAIMABLE = (
    f"((status = '{_QUEUED}' AND available_at <= $1)"
    f" OR (status = '{_RUNNING}' AND lease_expires_at <= $1))"
)


def _openings(rows: list[Row]) -> list[tuple[str, int | None]]:
    """The webhooks of a claim's first read that have a free slot, in its order: each
    one's id and how many slots it has free, or None for one that runs its events
    one at a time, in arrival order (only its oldest unfinished event may run)."""
    found: list[tuple[str, int | None]] = []
    for row in rows:
        concurrency = int(row["concurrency"])
        free = concurrency - int(row["busy"])
        if free >= 1:
            found.append((row["webhook_id"], None if concurrency == 1 else free))
    return found


def _in_turn(per_webhook: list[list[str]], limit: int) -> list[str]:
    """Up to ``limit`` event ids taken one from each webhook in turn: a busy webhook
    cannot take every slot."""
    return [i for i in chain.from_iterable(zip_longest(*per_webhook)) if i][:limit]


class EventEnding(TypedDict):
    """How ``owner``'s run of an event ends: the keywords of :meth:`EventStore.finish_event`.

    Declared once for the protocol and its queries; a keyword left out is None
    (``give_back_attempt``: False).
    """

    owner: str
    status: EventStatus
    now: datetime
    error: NotRequired[str | None]
    message_id: NotRequired[str | None]
    # Queued again from then: a retry.
    available_at: NotRequired[datetime | None]
    # The run does not count as one of the event's attempts.
    give_back_attempt: NotRequired[bool]
    attempt: NotRequired[EventAttempt | None]


class RecentEvents(TypedDict):
    """Which of a workspace's events :meth:`EventStore.recent_events` lists (None: any)."""

    limit: int
    webhook_id: NotRequired[str | None]
    status: NotRequired[EventStatus | None]


class EventStore(Protocol):
    """The event queue: events claimed under a lease, finished, listed."""

    async def claim_events(
        self, *, owner: str, now: datetime, lease_expires_at: datetime, limit: int
    ) -> list[Event]:
        """Lease up to ``limit`` runnable events to ``owner``, fairly between webhooks.

        Runnable: queued and available by ``now``, or running on a lease that
        has expired. Each webhook gets at most its concurrency minus its
        events on live leases; with concurrency 1 only its oldest unfinished
        event. Each claimed event is ``running`` with ``attempts`` one higher.
        """
        ...

    async def webhooks_by_id(self, ids: Collection[str]) -> dict[str, Webhook]:
        """The webhooks with these ids, by id, in one read; ids not found are left out."""
        ...

    async def next_event_due(self, now: datetime) -> datetime | None:
        """When the next waiting event becomes available or the next lease expires."""
        ...

    async def finish_event(self, event_id: str, **ending: Unpack[EventEnding]) -> bool:
        """End ``owner``'s lease: done, failed, or queued again (from ``available_at``).

        ``attempt``, the record of the run that ends, is stored in the same
        transaction (also when the lease was lost: it is what happened).
        False, and the event unchanged, if ``owner`` no longer holds the lease.
        Failing it counts one more failure of its webhook's streak (and may
        mark the streak's alert due, and pause the webhook); finishing it done
        ends the streak: in the same transaction (see
        :class:`~agentws.domain.models.FailureStreak`).
        """
        ...

    async def recent_events(self, workspace_id: str, **shown: Unpack[RecentEvents]) -> list[Event]:
        """A workspace's newest events first, optionally of one webhook or status."""
        ...


class EventQueries(Queries):
    """Queue queries; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def _events(self, rows: list[Row]) -> list[Event]:
        table = table_for(Event)
        return [table.decode(row, self.dialect) for row in rows]

    async def claim_events(
        self, *, owner: str, now: datetime, lease_expires_at: datetime, limit: int
    ) -> list[Event]:
        if limit < 1:
            return []
        at = self._ts(now)
        # Per webhook, not per event: a backlog of thousands costs index
        # lookups here, not a scan of the queue at every claim.
        rows = await self._db.fetch(
            "SELECT w.id AS webhook_id, w.concurrency,"
            " (SELECT COUNT(*) FROM events e WHERE e.webhook_id = w.id"
            f" AND e.status = '{_RUNNING}' AND e.lease_expires_at > $1) AS busy,"
            " (SELECT MIN(e.received_at) FROM events e WHERE e.webhook_id = w.id"
            f" AND e.status = '{_QUEUED}') AS oldest"
            " FROM webhooks w WHERE EXISTS (SELECT 1 FROM events e WHERE e.webhook_id = w.id"
            f" AND e.status IN ('{_QUEUED}', '{_RUNNING}'))"
            # Webhooks with fewer runs under way first: a free slot goes to the
            # webhook that has least, not to the one with the oldest backlog.
            " ORDER BY busy, oldest, w.id",
            at,
        )
        if self.dialect == "postgres":
            return await self._claim_skipping_locked(rows, owner, now, lease_expires_at, limit)
        per_webhook: list[list[str]] = []
        for webhook_id, free in _openings(rows):
            if free is None:
                ids = await self._strict_head(webhook_id, at)
            else:
                ids = await self._candidates(webhook_id, at, min(free, limit))
            if ids:
                per_webhook.append(ids)
        chosen = _in_turn(per_webhook, limit)
        if not chosen:
            return []
        # A lost claim is a lease nobody holds, which expires: no need to flush.
        counts = await self._db.execute_batch(
            [
                (
                    f"UPDATE events SET status = '{_RUNNING}', lease_owner = $2,"
                    " lease_expires_at = $3, attempts = attempts + 1,"
                    " started_at = COALESCE(started_at, $1)"
                    f" WHERE id = $4 AND {_CLAIMABLE}",
                    (at, owner, self._ts(lease_expires_at), event_id),
                )
                for event_id in chosen
            ],
            durable=False,
        )
        claimed = [event_id for event_id, n in zip(chosen, counts, strict=True) if n]
        if not claimed:
            return []
        table = table_for(Event)
        marks = ", ".join(f"${i}" for i in range(2, len(claimed) + 2))
        found_rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM events"
            f" WHERE lease_owner = $1 AND id IN ({marks})",
            owner,
            *claimed,
        )
        by_id = {e.id: e for e in self._events(found_rows)}
        return [by_id[i] for i in claimed if i in by_id]

    async def _claim_skipping_locked(
        self,
        rows: list[Row],
        owner: str,
        now: datetime,
        lease_expires_at: datetime,
        limit: int,
    ) -> list[Event]:
        """PostgreSQL's claim: candidates locked ``FOR UPDATE SKIP LOCKED``, leased, in one
        transaction.

        Instances claiming at once lock different events instead of all
        choosing the same oldest ones and all but one losing them. A webhook
        that runs one event at a time is claimed only at its head: if another
        claimer holds the head, the webhook is skipped this round (taking the
        next event would break its order).
        """
        table = table_for(Event)
        claimable = f"webhook_id = $1 AND {_CLAIMABLE.replace('$1', '$2')}"
        # A lost claim is a lease nobody holds, which expires: no need to flush.
        async with self._db.transaction(durable=False) as tx:
            per_webhook: list[list[str]] = []
            for webhook_id, free in _openings(rows):
                if free is None:
                    head = await self._strict_head(webhook_id, self._ts(now))
                    locked = (
                        await tx.fetch(
                            f"SELECT id FROM events WHERE id = $3 AND {claimable}"
                            " FOR UPDATE SKIP LOCKED",
                            webhook_id,
                            now,
                            head[0],
                        )
                        if head
                        else []
                    )
                else:
                    # Queued, then expired leases: each query walks the index in order.
                    take = min(free, limit)
                    both = [
                        found
                        for status, due in (
                            (_QUEUED, "available_at"),
                            (_RUNNING, "lease_expires_at"),
                        )
                        for found in await tx.fetch(
                            "SELECT id, received_at FROM events WHERE webhook_id = $1"
                            f" AND status = '{status}' AND {due} <= $2"
                            f" ORDER BY received_at, id LIMIT {take} FOR UPDATE SKIP LOCKED",
                            webhook_id,
                            now,
                        )
                    ]
                    locked = sorted(both, key=self._arrival)[:take]
                if locked:
                    per_webhook.append([r["id"] for r in locked])
            chosen = _in_turn(per_webhook, limit)
            if not chosen:
                return []
            leased = await tx.fetch(
                f"UPDATE events SET status = '{_RUNNING}', lease_owner = $2,"
                " lease_expires_at = $3, attempts = attempts + 1,"
                " started_at = COALESCE(started_at, $1)"
                f" WHERE id = ANY($4::text[]) RETURNING {', '.join(table.columns)}",
                now,
                owner,
                lease_expires_at,
                chosen,
            )
        by_id = {e.id: e for e in self._events(leased)}
        return [by_id[i] for i in chosen if i in by_id]

    async def _candidates(self, webhook_id: str, at: Any, limit: int) -> list[str]:
        """The webhook's claimable events, oldest first, at most ``limit``.

        Two queries, each walking the (webhook, status, received_at) index in
        order and stopping at ``limit``: the queue behind them is not read.
        """
        queued = await self._db.fetch(
            "SELECT id, received_at FROM events WHERE webhook_id = $1 AND status = $2"
            f" AND available_at <= $3 ORDER BY received_at, id LIMIT {int(limit)}",
            webhook_id,
            _QUEUED,
            at,
        )
        lost = await self._db.fetch(
            "SELECT id, received_at FROM events WHERE webhook_id = $1 AND status = $2"
            f" AND lease_expires_at <= $3 ORDER BY received_at, id LIMIT {int(limit)}",
            webhook_id,
            _RUNNING,
            at,
        )
        both = sorted([*queued, *lost], key=self._arrival)
        return [r["id"] for r in both[:limit]]

    def _arrival(self, row: Row) -> tuple[datetime, str]:
        when = table_for(Event).decode_value("received_at", row["received_at"], self.dialect)
        return when, str(row["id"])

    async def _strict_head(self, webhook_id: str, at: Any) -> list[str]:
        """The webhook's oldest unfinished event if it may run now: it blocks the rest."""
        heads = [
            row
            for status in (_QUEUED, _RUNNING)
            for row in await self._db.fetch(
                f"SELECT id, received_at, {_CLAIMABLE.replace('$1', '$3')} AS ready"
                " FROM events WHERE webhook_id = $1 AND status = $2"
                " ORDER BY received_at, id LIMIT 1",
                webhook_id,
                status,
                at,
            )
        ]
        if not heads:
            return []
        oldest = min(heads, key=self._arrival)
        return [oldest["id"]] if oldest["ready"] else []

    async def webhooks_by_id(self, ids: Collection[str]) -> dict[str, Webhook]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        table = table_for(Webhook)
        marks = ", ".join(f"${i}" for i in range(1, len(wanted) + 1))
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM webhooks WHERE id IN ({marks})", *wanted
        )
        found = [table.decode(row, self.dialect) for row in rows]
        return {webhook.id: webhook for webhook in found}

    async def next_event_due(self, now: datetime) -> datetime | None:
        at = self._ts(now)
        rows = await self._db.fetch(
            "SELECT MIN(due) AS due FROM ("
            f" SELECT MIN(available_at) AS due FROM events WHERE status = '{_QUEUED}'"
            " AND available_at > $1"
            f" UNION ALL SELECT MIN(lease_expires_at) FROM events WHERE status = '{_RUNNING}'"
            ") AS dues",
            at,
        )
        due: datetime | None = table_for(Event).decode_value(
            "available_at", rows[0]["due"] if rows else None, self.dialect
        )
        return due

    async def finish_event(self, event_id: str, **ending: Unpack[EventEnding]) -> bool:
        owner, status, now = ending["owner"], ending["status"], ending["now"]
        error, attempt = ending.get("error"), ending.get("attempt")
        available_at = ending.get("available_at")
        finished = self._ts(now) if status.finished else None
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if attempt is not None:
            table = table_for(EventAttempt)
            count = len(table.columns)
            marks = ", ".join(f"${i}" for i in range(1, count + 1))
            # Recorded only by the lease's holder, in the transaction that
            # ends its lease: an event taken over (or deleted with its
            # webhook) keeps the attempts of those that finished it.
            statements.append(
                (
                    f"INSERT INTO event_attempts ({', '.join(table.columns)}) SELECT {marks}"
                    f" WHERE EXISTS (SELECT 1 FROM events WHERE id = ${count + 1}"
                    f" AND lease_owner = ${count + 2} AND status = '{_RUNNING}')",
                    (*table.encode(attempt, self.dialect), event_id, owner),
                )
            )
        # The webhook's failure streak, in the same transaction (see sql_streaks).
        statements += streak_statements(self.dialect, event_id, owner, status, now, error)
        statements.append(
            (
                "UPDATE events SET status = $3, error = $4,"
                " message_id = COALESCE($5, message_id),"
                " available_at = COALESCE($6, available_at),"
                " lease_owner = NULL, lease_expires_at = NULL, finished_at = $7,"
                " attempts = attempts - $8"
                f" WHERE id = $1 AND lease_owner = $2 AND status = '{_RUNNING}'",
                (
                    event_id,
                    owner,
                    status.value,
                    error,
                    ending.get("message_id"),
                    self._ts(available_at) if available_at is not None else None,
                    finished,
                    1 if ending.get("give_back_attempt", False) else 0,
                ),
            )
        )
        # Not flushed: after a power loss the event runs again, and its message
        # (posted with the same care) is gone with it, or found and not posted twice.
        counts = await self._db.execute_batch(statements, durable=False)
        return bool(counts[-1])

    async def recent_events(self, workspace_id: str, **shown: Unpack[RecentEvents]) -> list[Event]:
        limit, webhook_id, status = shown["limit"], shown.get("webhook_id"), shown.get("status")
        columns = ", ".join(table_for(Event).columns)
        newest = f"ORDER BY received_at DESC, id DESC LIMIT {max(1, int(limit))}"
        if webhook_id is None:
            # The received_at index walked newest first, stopping at the limit; not every
            # event of the workspace read and sorted (SQLite's planner, with no statistics,
            # would pick the webhook_id index: the unary + keeps it from that).
            plus = "+" if self.dialect == "sqlite" else ""
            where = f"{plus}webhook_id IN (SELECT id FROM webhooks WHERE workspace_id = $1)"
            args: list[Any] = [workspace_id]
            if status is not None:
                args.append(status.value)
                where += " AND status = $2"
            sql = f"SELECT {columns} FROM events WHERE {where} {newest}"
        else:
            # One webhook's newest: the newest of each status, each read in order from
            # the (webhook_id, status, received_at) index, then merged; not every event
            # of the webhook read and sorted (100 ms with 50,000 of them).
            statuses = [status] if status is not None else list(EventStatus)
            ours = "EXISTS (SELECT 1 FROM webhooks WHERE id = $2 AND workspace_id = $1)"
            parts = [
                f"SELECT {columns} FROM (SELECT {columns} FROM events WHERE webhook_id = $2"
                f" AND status = ${n + 3} AND {ours} {newest}) AS s{n}"
                for n in range(len(statuses))
            ]
            args = [workspace_id, webhook_id, *(s.value for s in statuses)]
            sql = " UNION ALL ".join(parts) + f" {newest}"
        return self._events(await self._db.fetch(sql, *args))
