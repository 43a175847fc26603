"""The delivery log in SQL (a part of :class:`~agentws.store.sql.SqlStore`): rows written
through the group commit of deliveries, read newest first, trimmed per webhook.

Rows are written with :meth:`DeliveryLogQueries.log_deliveries_nowait`, many
in one statement, which joins the group commit the events of deliveries
use (one durable commit for every statement waiting): the rows of accepted
deliveries, queued right after their events, ride in the commit that
stores them (or the next), and exist only if their events do. No row can
fail its group: each is written only while its webhook (or its event) is
there, checked by the statement itself.

Ids grow with each row, so a webhook's rows are read newest first and
trimmed to the newest ``keep`` through the ``(webhook_id, id)`` index
alone: one read finds the boundary (outside the writer's lock), one
statement deletes what lies below it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import outcome

from agentws.domain.delivery_log import Delivery, StatusFilter
from agentws.store.tables import Dialect, Table

if TYPE_CHECKING:
    from agentws.store.database import Database

__all__ = ["DELIVERIES", "ROWS_PER_STATEMENT", "DeliveryLogQueries"]

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
def _insert_sql(dialect: Dialect, rows: int, after_event: bool) -> str:
    """The insert of ``rows`` rows: each only if its event was stored, or its webhook exists."""
    width = len(_WRITTEN)
    casts = [f"::{_CASTS.get(c, 'text')}" if dialect == "postgres" else "" for c in _WRITTEN]
    # Each row with its place, so that ids follow the order the rows were queued.
    values = ", ".join(
        "(" + ", ".join(f"${r * width + i + 1}{casts[i]}" for i in range(width)) + f", {r})"
        for r in range(rows)
    )
    guard = (
        "SELECT 1 FROM events e WHERE e.id = v.event_id"
        if after_event
        else "SELECT 1 FROM webhooks w WHERE w.id = v.webhook_id"
    )
    columns = ", ".join(_WRITTEN)
    # INSERT first, the rows in a WITH of its SELECT: SQLite's driver counts
    # the rows a statement changed only for one that begins with INSERT.
    return (
        f"INSERT INTO webhook_deliveries ({columns})"
        f" WITH v ({columns}, place) AS (VALUES {values})"
        f" SELECT {', '.join(f'v.{c}' for c in _WRITTEN)} FROM v WHERE EXISTS ({guard})"
        " ORDER BY v.place"
    )


class DeliveryLogQueries:
    """The delivery log; mixed into :class:`~agentws.store.sql.SqlStore`."""

    _db: Database

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    def log_deliveries_nowait(
        self,
        deliveries: Sequence[Delivery],
        answer: Callable[[outcome.Outcome[int]], None],
        *,
        after_event: bool = False,
    ) -> None:
        if not 1 <= len(deliveries) <= ROWS_PER_STATEMENT:
            raise ValueError(f"1 to {ROWS_PER_STATEMENT} rows a statement, not {len(deliveries)}")
        dialect = self.dialect
        args: list[object] = []
        for delivery in deliveries:
            args += DELIVERIES.encode(delivery, dialect)[1:]  # the id is the database's
        sql = _insert_sql(dialect, len(deliveries), after_event)
        self._db.execute_grouped_nowait(sql, args, answer)

    async def webhook_deliveries(
        self,
        webhook_id: str,
        *,
        limit: int,
        status: StatusFilter | None = None,
        reason: str | None = None,
    ) -> list[Delivery]:
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
        rows = await self._db.fetch(
            f"SELECT {', '.join(DELIVERIES.columns)} FROM webhook_deliveries"
            f" WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT {int(limit)}",
            *args,
        )
        return [DELIVERIES.decode(row, self.dialect) for row in rows]

    async def trim_webhook_deliveries(self, webhook_id: str, *, keep: int) -> int:
        # The newest row past the bound, read outside the writer's lock; the
        # deletion below it then walks the index from its start.
        found = await self._db.fetch(
            "SELECT id FROM webhook_deliveries WHERE webhook_id = $1"
            f" ORDER BY id DESC LIMIT 1 OFFSET {int(keep)}",
            webhook_id,
        )
        if not found:
            return 0
        return await self._delete_through(webhook_id, int(found[0]["id"]))

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
