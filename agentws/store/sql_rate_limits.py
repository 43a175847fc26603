"""Webhooks' delivery rate limits, in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

One token bucket per webhook, kept in ``webhook_rate_limits`` in thousandths
of a token so that refills are whole numbers. A bucket starts full
(``burst`` tokens) and refills at ``rate_per_min``. Taking a token is one
statement on PostgreSQL, where the row lock is what deliveries from every
instance queue on; on SQLite, whose writes go one at a time anyway, it is a
read and a write in one transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agentws.domain.models import Event
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = ["RateLimitQueries", "RateLimitStore"]


class RateLimitStore(Protocol):
    """Webhooks' shared rate-limit buckets."""

    async def take_rate_token(
        self, webhook_id: str, *, rate_per_min: int, burst: int, now: datetime
    ) -> float | None:
        """Take one delivery from the webhook's shared bucket (``burst``, then ``rate_per_min``).

        One transaction, serialized per webhook: every process on this
        database draws on the same bucket. None when taken; else the seconds
        until a delivery would be.
        """
        ...


class RateLimitQueries(Queries):
    """Webhook rate-limit buckets; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def take_rate_token(
        self, webhook_id: str, *, rate_per_min: int, burst: int, now: datetime
    ) -> float | None:
        full = burst * 1000
        if self.dialect == "postgres":
            return await self._take_rate_token_pg(
                webhook_id, rate_per_min=rate_per_min, full=full, now=now
            )
        # SQLite: its write transaction is one at a time anyway.
        async with self._db.transaction() as tx:
            # A bucket starts full; made first, so concurrent first deliveries queue on it.
            await tx.execute(
                "INSERT INTO webhook_rate_limits (webhook_id, milli_tokens, at)"
                " VALUES ($1, $2, $3) ON CONFLICT (webhook_id) DO NOTHING",
                webhook_id,
                full,
                self._ts(now),
            )
            (row,) = await tx.fetch(
                "SELECT milli_tokens, at FROM webhook_rate_limits WHERE webhook_id = $1",
                webhook_id,
            )
            last = table_for(Event).decode_value("received_at", row["at"], self.dialect)
            refill = max(0.0, (now - last).total_seconds()) * rate_per_min * 1000 / 60
            tokens = min(full, int(row["milli_tokens"]) + int(refill))
            if tokens < 1000:
                return (1000 - tokens) * 60 / (rate_per_min * 1000)
            await tx.execute(
                "UPDATE webhook_rate_limits SET milli_tokens = $2, at = $3 WHERE webhook_id = $1",
                webhook_id,
                tokens - 1000,
                self._ts(max(now, last)),
            )
        return None

    async def _take_rate_token_pg(
        self, webhook_id: str, *, rate_per_min: int, full: int, now: datetime
    ) -> float | None:
        # One statement, one round trip: the row is locked only while it runs,
        # which is what deliveries from every instance queue on.
        per_s = rate_per_min * 1000 / 60
        refilled = (
            "LEAST($2, r.milli_tokens"
            " + CAST(GREATEST(0, EXTRACT(EPOCH FROM ($3 - r.at))) * $4 AS BIGINT))"
        )
        taken = await self._db.fetch(
            "INSERT INTO webhook_rate_limits AS r (webhook_id, milli_tokens, at)"
            " VALUES ($1, $2 - 1000, $3) ON CONFLICT (webhook_id) DO UPDATE"
            f" SET milli_tokens = {refilled} - 1000, at = GREATEST(r.at, $3)"
            f" WHERE {refilled} >= 1000 RETURNING r.milli_tokens",
            webhook_id,
            full,
            now,
            per_s,
        )
        if taken:
            return None
        # Refused: how long until a token is there (no lock needed to tell).
        rows = await self._db.fetch(
            "SELECT milli_tokens, at FROM webhook_rate_limits WHERE webhook_id = $1", webhook_id
        )
        elapsed = max(0.0, (now - rows[0]["at"]).total_seconds())
        tokens = min(full, int(rows[0]["milli_tokens"]) + int(elapsed * per_s))
        return max(0.0, (1000 - tokens) / per_s)
