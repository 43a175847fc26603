"""Instances' heartbeats and what readiness and metrics read, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

Every instance writes a heartbeat row (not made durable: a lost one is
rewritten at the next beat); the live ones are those that beat recently. The
probes read counts and samples through small tables and indexes, cheap enough
to run on every scrape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agentws.domain.models import Approval, ApprovalStatus, EventStatus, Instance
from agentws.domain.rules import utcnow
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = ["HealthQueries", "HealthStore"]


class HealthStore(Protocol):
    """Readiness, heartbeats and what the probes read."""

    async def ping(self) -> None:
        """Round-trip to the database (readiness)."""
        ...

    async def pending_approvals_summary(self) -> tuple[int, float]:
        """How many approval requests wait for a decision, and the oldest one's age in seconds."""
        ...

    async def event_counts(self) -> dict[str, int]:
        """Webhook events by status, every status present (0 when none)."""
        ...

    async def sealed_samples(self) -> list[bytes]:
        """The newest value sealed with the service key of each kind kept (a connector's
        secret, a webhook's verification secret, a queued call's arguments): enough to
        tell whether the key opens what is stored. Empty when nothing is sealed."""
        ...

    async def heartbeat(self, instance: Instance) -> None:
        """Record that ``instance`` is alive (insert or replace its row)."""
        ...

    async def live_instances(self, since: datetime) -> list[Instance]:
        """Instances whose last heartbeat is at ``since`` or later."""
        ...


class HealthQueries(Queries):
    """Heartbeats, live instances and the probes' reads; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    async def pending_approvals_summary(self) -> tuple[int, float]:
        rows = await self._db.fetch(
            "SELECT count(*) AS n, min(created_at) AS oldest FROM approvals WHERE status = $1",
            ApprovalStatus.PENDING.value,
        )
        oldest = rows[0]["oldest"]
        if not rows[0]["n"] or oldest is None:
            return 0, 0.0
        created = table_for(Approval).decode_value("created_at", oldest, self.dialect)
        return int(rows[0]["n"]), max(0.0, (utcnow() - created).total_seconds())

    async def event_counts(self) -> dict[str, int]:
        rows = await self._db.fetch("SELECT status, count(*) AS n FROM events GROUP BY status")
        counts = dict.fromkeys((s.value for s in EventStatus), 0)
        counts.update({row["status"]: int(row["n"]) for row in rows})
        return counts

    async def sealed_samples(self) -> list[bytes]:
        # Newest first through small tables, and the status index for approvals:
        # cheap enough for every readiness probe.
        waiting = (ApprovalStatus.PENDING.value, ApprovalStatus.APPROVED.value)
        queries: list[tuple[str, tuple[str, ...]]] = [
            ("SELECT secret AS v FROM connectors WHERE secret IS NOT NULL", ()),
            ("SELECT secret AS v FROM webhooks WHERE secret IS NOT NULL", ()),
            (
                "SELECT sealed_arguments AS v FROM approvals"
                " WHERE status IN ($1, $2) AND sealed_arguments IS NOT NULL",
                waiting,
            ),
        ]
        samples: list[bytes] = []
        for sql, args in queries:
            rows = await self._db.fetch(f"{sql} ORDER BY created_at DESC LIMIT 1", *args)
            samples += [bytes(row["v"]) for row in rows]
        return samples

    async def heartbeat(self, instance: Instance) -> None:
        table = table_for(Instance)
        columns = ", ".join(table.columns)
        marks = ", ".join(f"${i}" for i in range(1, len(table.columns) + 1))
        # The start time stays the first heartbeat's.
        updates = ", ".join(f"{c} = excluded.{c}" for c in table.columns if c != "started_at")
        sql = (
            f"INSERT INTO {table.name} ({columns}) VALUES ({marks}) "
            f"ON CONFLICT (id) DO UPDATE SET {updates}"
        )
        await self._db.execute_batch([(sql, table.encode(instance, self.dialect))], durable=False)

    async def live_instances(self, since: datetime) -> list[Instance]:
        table = table_for(Instance)
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM {table.name} WHERE heartbeat_at >= $1",
            table.encode_value("heartbeat_at", since, self.dialect),
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def ping(self) -> None:
        await self._db.ping()
