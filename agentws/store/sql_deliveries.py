"""The delivery log in SQL (a part of :class:`~agentws.store.sql.SqlStore`): a webhook's
accepted deliveries (its events) and its other answers (rows of
``webhook_deliveries``), read together newest first; the rows written
through the group commit of deliveries and trimmed per webhook.

An accepted delivery's entry is its event: an event that came through the
webhook's URL keeps the address it came from (``source``; replays and
events from before the log have none, and are not deliveries). Listing
reads the newest events of each status through the ``(webhook_id, status,
received_at)`` index and the newest rows through ``(webhook_id, id)``, and
merges them.

Rows are written with :meth:`DeliveryLogQueries.log_deliveries_nowait`, many
in one statement, which joins the group commit the events of deliveries
use (one durable commit for every statement waiting). No row can fail its
group: each is written only while its webhook exists, checked by the
statement itself.

Ids grow with each row, so a webhook's rows are read newest first and
trimmed to the newest ``keep`` through the ``(webhook_id, id)`` index
alone: one read finds the boundary (outside the writer's lock), one
statement deletes what lies below it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NotRequired, Protocol, TypedDict, Unpack

import outcome

from agentws.domain.delivery_log import ACCEPTED, Delivery, StatusFilter
from agentws.domain.models import Event, EventStatus
from agentws.store.queries import Queries
from agentws.store.tables import Dialect, Table, table_for

__all__ = [
    "DELIVERIES",
    "ROWS_PER_STATEMENT",
    "DeliveryFilter",
    "DeliveryLogQueries",
    "DeliveryLogStore",
]

#: The rows of ``webhook_deliveries``.
DELIVERIES = Table(Delivery, "webhook_deliveries", "delivery", ("id",), "id")
# Every column but the id, which the database gives.
_WRITTEN = tuple(c for c in DELIVERIES.columns if c != "id")
# Rows deleted by one statement at most, so that a deletion never holds the
# writer (and the deliveries' commits behind it) for long.
_DELETE_BATCH = 1000


# Rows per statement at most: far below either database's limit on parameters.
ROWS_PER_STATEMENT = 500
# PostgreSQL types a VALUES list's parameters from nothing but these casts.
_CASTS = {
    "received_at": "timestamptz",
    "status": "integer",
    "body_bytes": "bigint",
    "headers": "jsonb",
    "omitted": "integer",
}


@functools.cache
def _insert_sql(dialect: Dialect, rows: int) -> str:
    """The insert of ``rows`` rows, each only while its webhook exists."""
    width = len(_WRITTEN)
    casts = [f"::{_CASTS.get(c, 'text')}" if dialect == "postgres" else "" for c in _WRITTEN]
    # Each row with its place, so that ids follow the order the rows were queued.
    values = ", ".join(
        "(" + ", ".join(f"${r * width + i + 1}{casts[i]}" for i in range(width)) + f", {r})"
        for r in range(rows)
    )
    columns = ", ".join(_WRITTEN)
    # INSERT first, the rows in a WITH of its SELECT: SQLite's driver counts
    # the rows a statement changed only for one that begins with INSERT.
    return (
        f"INSERT INTO webhook_deliveries ({columns})"
        f" WITH v ({columns}, place) AS (VALUES {values})"
        f" SELECT {', '.join(f'v.{c}' for c in _WRITTEN)} FROM v"
        " WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = v.webhook_id)"
        " ORDER BY v.place"
    )


def _wants_events(status: StatusFilter | None, reason: str | None) -> bool:
    """Whether a listing with these filters shows accepted deliveries (events)."""
    return status in (None, "accepted", 202) and reason in (None, ACCEPTED)


def _wants_rows(status: StatusFilter | None, reason: str | None) -> bool:
    """Whether it shows the other answers (rows): a row is never ``queued``."""
    return reason != ACCEPTED


class DeliveryFilter(TypedDict):
    """Which of a webhook's deliveries :meth:`DeliveryLogStore.webhook_deliveries` lists
    (a keyword left out, or None: any)."""

    limit: int
    status: NotRequired[StatusFilter | None]
    reason: NotRequired[str | None]
    since: NotRequired[datetime | None]


class DeliveryLogStore(Protocol):
    """The webhooks' delivery log."""

    def log_deliveries_nowait(
        self, deliveries: Sequence[Delivery], answer: Callable[[outcome.Outcome[int]], None]
    ) -> None:
        """Queue rows of the delivery log (1 to 500) for the next group commit of deliveries.

        All the rows are one statement, which joins the group commit of
        deliveries (:meth:`ingest_nowait`): no commit of its own. Each row is
        written only while its webhook exists. ``answer`` is called in
        trio's thread after the commit with how many rows were written, or
        the store's error.

        Error handling:
            :class:`~agentws.core.errors.StoreUnavailableError`, at once, when the
            store is closing (nothing queued); ValueError for no rows or too many.
        """
        ...

    async def webhook_deliveries(
        self, webhook_id: str, **shown: Unpack[DeliveryFilter]
    ) -> list[Delivery]:
        """A webhook's delivery log, newest first, at most ``limit`` entries: its events that
        came through its URL (202 ``queued``, with no id) and its rows, received since
        ``since``; ``accepted`` (2xx), ``refused``, one status, or one reason only."""
        ...

    async def trim_webhook_deliveries(
        self, webhook_id: str, *, keep: int, counted_through: int | None = None
    ) -> int:
        """Delete a webhook's rows (not its events) but the newest ``keep``; how many.

        Rows after row ``counted_through`` (the overview's rollup has not counted
        them yet) are kept past the bound, until a later trim.
        """
        ...

    async def expire_webhook_deliveries(self, before: datetime) -> int:
        """Delete every log row received before ``before``; how many were deleted."""
        ...

    async def webhooks_over_delivery_bound(self, keep: int) -> list[str]:
        """The ids of the webhooks with more than ``keep`` log rows."""
        ...


class DeliveryLogQueries(Queries):
    """The delivery log; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def log_deliveries_nowait(
        self, deliveries: Sequence[Delivery], answer: Callable[[outcome.Outcome[int]], None]
    ) -> None:
        if not 1 <= len(deliveries) <= ROWS_PER_STATEMENT:
            raise ValueError(f"1 to {ROWS_PER_STATEMENT} rows a statement, not {len(deliveries)}")
        dialect = self.dialect
        args: list[object] = []
        for delivery in deliveries:
            args += DELIVERIES.encode(delivery, dialect)[1:]  # the id is the database's
        self._db.execute_grouped_nowait(_insert_sql(dialect, len(deliveries)), args, answer)

    async def webhook_deliveries(
        self, webhook_id: str, **shown: Unpack[DeliveryFilter]
    ) -> list[Delivery]:
        limit, since = shown["limit"], shown.get("since")
        status, reason = shown.get("status"), shown.get("reason")
        found: list[Delivery] = []
        if _wants_events(status, reason):
            found += await self._accepted(webhook_id, limit, since)
        if _wants_rows(status, reason):
            found += await self._answers(webhook_id, limit, status, reason, since)
        # Newest first; a row and an event of the same instant: the row (its
        # id is the later) first, as it was answered after.
        found.sort(key=lambda d: (d.received_at, d.id is not None, d.id or 0), reverse=True)
        return found[: int(limit)]

    async def _accepted(
        self, webhook_id: str, limit: int, since: datetime | None
    ) -> list[Delivery]:
        """The webhook's newest deliveries that became events: each status through its index."""
        events = table_for(Event)
        args: list[object] = [webhook_id]
        after = ""
        if since is not None:
            args.append(events.encode_value("received_at", since, self.dialect))
            after = f" AND received_at >= ${len(args)}"
        parts = [
            "SELECT * FROM (SELECT id, received_at, length(body) AS body_bytes, headers, source"
            f" FROM events WHERE webhook_id = $1 AND status = '{s.value}'"
            f" AND source IS NOT NULL{after}"
            f" ORDER BY received_at DESC LIMIT {int(limit)}) AS e{n}"
            for n, s in enumerate(EventStatus)
        ]
        rows = await self._db.fetch(" UNION ALL ".join(parts), *args)
        return [
            Delivery(
                webhook_id=webhook_id,
                received_at=events.decode_value("received_at", row["received_at"], self.dialect),
                status=202,
                reason=ACCEPTED,
                body_bytes=int(row["body_bytes"]),
                headers=events.decode_value("headers", row["headers"], self.dialect),
                source=row["source"] or None,
                event_id=row["id"],
            )
            for row in rows
        ]

    async def _answers(
        self,
        webhook_id: str,
        limit: int,
        status: StatusFilter | None,
        reason: str | None,
        since: datetime | None,
    ) -> list[Delivery]:
        """The webhook's newest rows (answers without a new event)."""
        clauses: list[str] = ["webhook_id = $1"]
        args: list[object] = [webhook_id]
        if status == "accepted":
            clauses.append("status < 300")
        elif status == "refused":
            clauses.append("status >= 300")
        elif status is not None:
            args.append(status)
            clauses.append(f"status = ${len(args)}")
        if reason is not None:
            args.append(reason)
            clauses.append(f"reason = ${len(args)}")
        if since is not None:
            args.append(DELIVERIES.encode_value("received_at", since, self.dialect))
            clauses.append(f"received_at >= ${len(args)}")
        rows = await self._db.fetch(
            f"SELECT {', '.join(DELIVERIES.columns)} FROM webhook_deliveries"
            f" WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT {int(limit)}",
            *args,
        )
        return [DELIVERIES.decode(row, self.dialect) for row in rows]

    async def trim_webhook_deliveries(
        self, webhook_id: str, *, keep: int, counted_through: int | None = None
    ) -> int:
        # The newest row past the bound, read outside the writer's lock; the
        # deletion below it then walks the index from its start.
        found = await self._db.fetch(
            "SELECT id FROM webhook_deliveries WHERE webhook_id = $1"
            f" ORDER BY id DESC LIMIT 1 OFFSET {int(keep)}",
            webhook_id,
        )
        if not found:
            return 0
        last = int(found[0]["id"])
        if counted_through is not None:
            last = min(last, counted_through)
        return await self._delete_through(webhook_id, last)

    async def _delete_through(self, webhook_id: str, last_id: int) -> int:
        deleted = 0
        while True:
            # At most _DELETE_BATCH at a time, oldest first (by the index).
            (count,) = await self._db.execute_batch(
                [
                    (
                        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id"
                        " FROM webhook_deliveries WHERE webhook_id = $1 AND id <= $2"
                        f" ORDER BY id LIMIT {_DELETE_BATCH})",
                        (webhook_id, last_id),
                    )
                ],
                # Bookkeeping: a trim lost to a power cut is done again.
                durable=False,
            )
            deleted += count
            if count < _DELETE_BATCH:
                return deleted

    async def expire_webhook_deliveries(self, before: datetime) -> int:
        # No index on received_at (each row would pay for it): the oldest rows
        # have the lowest ids, so a scan in id order meets them first.
        at = DELIVERIES.encode_value("received_at", before, self.dialect)
        deleted = 0
        while True:
            (count,) = await self._db.execute_batch(
                [
                    (
                        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id"
                        " FROM webhook_deliveries WHERE received_at < $1"
                        f" ORDER BY id LIMIT {_DELETE_BATCH})",
                        (at,),
                    )
                ],
                durable=False,
            )
            deleted += count
            if count < _DELETE_BATCH:
                return deleted

    async def webhooks_over_delivery_bound(self, keep: int) -> list[str]:
        rows = await self._db.fetch(
            "SELECT webhook_id FROM webhook_deliveries GROUP BY webhook_id"
            f" HAVING COUNT(*) > {int(keep)} ORDER BY webhook_id"
        )
        return [str(row["webhook_id"]) for row in rows]
