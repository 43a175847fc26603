"""How far a webhook's senders have moved after a rotation, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

Counts the events received since a rotation by the URL (or secret)
generation they came through: the new one and the previous one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from agentws.domain.deliveries import DeliveryGenerations
from agentws.domain.models import Event
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = ["RotationQueries", "RotationStore"]

_COLUMNS = {"url": "url_generation", "secret": "secret_generation"}


class RotationStore(Protocol):
    """How far a webhook's senders have moved after a rotation."""

    async def delivery_generations(
        self, webhook_id: str, which: Literal["url", "secret"], current: int, since: datetime
    ) -> DeliveryGenerations:
        """The webhook's events received since ``since`` through generation ``current`` of
        its URL (``which="url"``) or secret, and through the one before."""
        ...


class RotationQueries(Queries):
    """Deliveries by generation; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def delivery_generations(
        self, webhook_id: str, which: Literal["url", "secret"], current: int, since: datetime
    ) -> DeliveryGenerations:
        column = _COLUMNS[which]
        table = table_for(Event)
        dialect = self._db.dialect
        rows = await self._db.fetch(
            f"SELECT {column} AS generation, count(*) AS n, max(received_at) AS last"
            " FROM events WHERE webhook_id = $1 AND received_at >= $2"
            f" AND {column} IN ($3, $4) GROUP BY {column}",
            webhook_id,
            table.encode_value("received_at", since, dialect),
            current,
            current - 1,
        )
        found = {row["generation"]: row for row in rows}
        previous = found.get(current - 1)
        last = previous["last"] if previous else None
        return DeliveryGenerations(
            current=int(found[current]["n"]) if current in found else 0,
            previous=int(previous["n"]) if previous else 0,
            last_previous=table.decode_value("received_at", last, dialect) if last else None,
        )
