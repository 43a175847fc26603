"""The overview's figures counted from where they happen, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

Each figure is counted by the minute (since the epoch) it belongs to:

- events received, by ``events.received_at`` (index ``events_received``);
- events done and failed, and the receive → post latency of the done ones
  (their channel message's ``created_at`` less their ``received_at``), by
  ``events.finished_at`` (partial index ``events_finished``, migration 0024);
- model tokens, from each run attempt's ``usage``, by its ``finished_at``
  (partial index ``event_attempts_finished``): ``input`` is every kind of
  input token (cached ones too), ``output`` the output tokens;
- tool calls, by the decision their ``tool.call`` audit entry records
  (:func:`~agentws.domain.rollups.decision_of`), by ``created_at``;
- refused deliveries, by reason, from the delivery log's rows (status 300
  or more) after a given row id (its rows are read in id order: it has no
  index on ``received_at``); refusals the log left out for its rate bound
  (``omitted``, carried by the next row, whatever its status) count under
  the reason ``unlogged``;
- the approval queue's depth and oldest waiting age, now.

Only rows in the range asked are read; the minutes are worked out by the
database, and what comes back is already grouped, except latencies and
usage, which are binned and summed here.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, Unpack

from agentws.domain.models import Approval, AuditEntry, Event
from agentws.domain.rollups import MINUTE, Bucket, bin_of, decision_of
from agentws.store.queries import Queries
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from agentws.store.database import Row
    from agentws.store.tables import Dialect

__all__ = ["RefusalRows", "RollupSourceQueries", "RollupSourceStore"]

# Delivery-log rows read in one go when counting refusals.
_DELIVERY_ROWS = 5000


def _minute_of(column: str, dialect: Dialect) -> str:
    """SQL for the minute since the epoch that a timestamp column falls in."""
    if dialect == "sqlite":
        # ISO text: its first 19 characters are the UTC second.
        return f"CAST(strftime('%s', substr({column}, 1, 19)) AS INTEGER) / 60"
    return f"CAST(floor(extract(epoch FROM {column}) / 60) AS BIGINT)"


def _ms_between(later: str, earlier: str, dialect: Dialect) -> str:
    if dialect == "sqlite":
        return f"(julianday({later}) - julianday({earlier})) * 86400000.0"
    return f"extract(epoch FROM {later} - {earlier}) * 1000.0"


def _indexed(index: str, dialect: Dialect) -> str:
    # SQLite keeps no statistics here: it is told which index walks the range.
    return f" INDEXED BY {index}" if dialect == "sqlite" else ""


class RefusalRows(TypedDict):
    """Which delivery log rows :meth:`RollupSourceStore.refusal_buckets` counts (a keyword
    left out, or None: any)."""

    after_id: int
    workspace_id: NotRequired[str | None]
    received_before: NotRequired[datetime | None]


class RollupSourceStore(Protocol):
    """The overview's figures, counted where they happen."""

    async def source_buckets(
        self, start_minute: int, end_minute: int, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        """The overview's counters (events received, done, failed; latency bins; tool calls;
        model tokens) of every workspace, or one, for the minutes ``start_minute`` to
        ``end_minute`` (minutes since the epoch, the end excluded), counted from the tables
        they happen in: one-minute buckets, none for a figure that is 0."""
        ...

    async def refusal_buckets(self, **taken: Unpack[RefusalRows]) -> tuple[list[Bucket], int]:
        """Refused deliveries by reason and minute, from the delivery log's rows after row
        ``after_id``, in id order, up to the first received at ``received_before`` or later
        (when given); and the last row id taken."""
        ...

    async def oldest_rollup_source(self) -> datetime | None:
        """When the oldest row the overview counts was written (an event received, an
        audit entry); None when there is none. Two index reads."""
        ...

    async def approval_buckets(
        self, now: datetime, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        """Samples at ``now`` of the approval queue's depth and oldest waiting age (seconds),
        for every workspace (0 where nothing waits), or one."""
        ...


class RollupSourceQueries(Queries):
    """Counting the overview's figures in their own tables; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    def _at_minute(self, minute: int) -> Any:
        when = datetime.fromtimestamp(minute * 60, UTC)
        return table_for(Event).encode_value("received_at", when, self.dialect)

    async def source_buckets(
        self, start_minute: int, end_minute: int, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        d = self.dialect
        args: list[Any] = [self._at_minute(start_minute), self._at_minute(end_minute)]
        only = ""
        if workspace_id is not None:
            args.append(workspace_id)
            only = " AND w.workspace_id = $3"
        counts: defaultdict[tuple[str, int, str, str], float] = defaultdict(float)
        received = await self._db.fetch(
            f"SELECT w.workspace_id AS ws, {_minute_of('e.received_at', d)} AS minute,"
            f" e.webhook_id AS key, count(*) AS n"
            f" FROM events e{_indexed('events_received', d)}"
            " JOIN webhooks w ON w.id = e.webhook_id"
            f" WHERE e.received_at >= $1 AND e.received_at < $2{only}"
            " GROUP BY w.workspace_id, minute, e.webhook_id",
            *args,
        )
        for row in received:
            counts[row["ws"], int(row["minute"]), "received", row["key"]] += row["n"]
        finished = await self._db.fetch(
            f"SELECT w.workspace_id AS ws, {_minute_of('e.finished_at', d)} AS minute,"
            " e.webhook_id AS key, e.status AS status, count(*) AS n"
            f" FROM events e{_indexed('events_finished', d)}"
            " JOIN webhooks w ON w.id = e.webhook_id"
            f" WHERE e.finished_at >= $1 AND e.finished_at < $2{only}"
            " AND e.status IN ('done', 'failed')"
            " GROUP BY w.workspace_id, minute, e.webhook_id, e.status",
            *args,
        )
        for row in finished:
            counts[row["ws"], int(row["minute"]), row["status"], row["key"]] += row["n"]
        latencies = await self._db.fetch(
            f"SELECT w.workspace_id AS ws, {_minute_of('e.finished_at', d)} AS minute,"
            f" {_ms_between('c.created_at', 'e.received_at', d)} AS ms"
            f" FROM events e{_indexed('events_finished', d)}"
            " JOIN webhooks w ON w.id = e.webhook_id"
            " JOIN chat_messages c ON c.event_id = e.id"
            f" WHERE e.finished_at >= $1 AND e.finished_at < $2{only} AND e.status = 'done'",
            *args,
        )
        for row in latencies:
            key = str(bin_of(float(row["ms"])))
            counts[row["ws"], int(row["minute"]), "latency", key] += 1
        usage = await self._db.fetch(
            f"SELECT w.workspace_id AS ws, {_minute_of('a.finished_at', d)} AS minute,"
            " a.usage AS usage"
            f" FROM event_attempts a{_indexed('event_attempts_finished', d)}"
            " JOIN events e ON e.id = a.event_id JOIN webhooks w ON w.id = e.webhook_id"
            f" WHERE a.finished_at >= $1 AND a.finished_at < $2{only}",
            *args,
        )
        for row in usage:
            _add_usage(counts, row)
        await self._count_tool_calls(counts, args, workspace_id)
        return [
            Bucket(workspace_id=ws, span_m=MINUTE, minute=minute, series=series, key=key, value=n)
            for (ws, minute, series, key), n in counts.items()
            if n
        ]

    async def _count_tool_calls(
        self,
        counts: defaultdict[tuple[str, int, str, str], float],
        args: list[Any],
        workspace_id: str | None,
    ) -> None:
        d = self.dialect
        if d == "sqlite":
            decision = "json_extract(detail, '$.decision')"
            outcome = "json_extract(detail, '$.outcome')"
        else:
            decision, outcome = "detail->>'decision'", "detail->>'outcome'"
        only = " AND workspace_id = $3" if workspace_id is not None else ""
        rows = await self._db.fetch(
            f"SELECT workspace_id AS ws, {_minute_of('created_at', d)} AS minute,"
            f" {decision} AS decision, {outcome} AS outcome, count(*) AS n"
            f" FROM audit_log{_indexed('audit_log_order', d)}"
            " WHERE created_at >= $1 AND created_at < $2 AND action = 'tool.call'"
            f" AND workspace_id IS NOT NULL{only}"
            " GROUP BY workspace_id, minute, decision, outcome",
            *args,
        )
        for row in rows:
            shown = decision_of({"decision": row["decision"], "outcome": row["outcome"]})
            if shown is not None:
                counts[row["ws"], int(row["minute"]), "tool_calls", shown] += row["n"]

    async def oldest_rollup_source(self) -> datetime | None:
        found = []
        for table, column, index in (
            (table_for(Event), "received_at", "events_received"),
            (table_for(AuditEntry), "created_at", "audit_log_order"),
        ):
            rows = await self._db.fetch(
                f"SELECT min({column}) AS at FROM {table.name}{_indexed(index, self.dialect)}"
            )
            if rows and rows[0]["at"] is not None:
                found.append(table.decode_value(column, rows[0]["at"], self.dialect))
        return min(found, default=None)

    async def refusal_buckets(self, **taken: Unpack[RefusalRows]) -> tuple[list[Bucket], int]:
        workspace_id, received_before = taken.get("workspace_id"), taken.get("received_before")
        counts: defaultdict[tuple[str, int, str], float] = defaultdict(float)
        last = taken["after_id"]
        only = " AND w.workspace_id = $2" if workspace_id is not None else ""
        while True:
            rows = await self._db.fetch(
                "SELECT d.id AS id, w.workspace_id AS ws, d.received_at AS received_at,"
                " d.status AS status, d.reason AS reason, d.omitted AS omitted"
                " FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
                f" WHERE d.id > $1{only} ORDER BY d.id LIMIT {_DELIVERY_ROWS}",
                last,
                *([workspace_id] if workspace_id is not None else []),
            )
            for row in rows:
                received = table_for(Event).decode_value(
                    "received_at", row["received_at"], self.dialect
                )
                if received_before is not None and received >= received_before:
                    # Rows are taken in id order up to the first one not yet settled:
                    # an id below it may still be committing (PostgreSQL).
                    return _refusals(counts), last
                last = int(row["id"])
                minute = int(received.timestamp()) // 60
                # Any row may carry the refusals left out before it, a duplicate's too.
                if row["omitted"]:
                    counts[row["ws"], minute, "unlogged"] += int(row["omitted"])
                if int(row["status"]) >= 300:
                    counts[row["ws"], minute, row["reason"]] += 1
            if len(rows) < _DELIVERY_ROWS:
                return _refusals(counts), last

    async def approval_buckets(
        self, now: datetime, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        only = " AND g.workspace_id = $2" if workspace_id is not None else ""
        rows = await self._db.fetch(
            "SELECT g.workspace_id AS ws, count(*) AS n, min(a.created_at) AS oldest"
            " FROM approvals a JOIN workspace_groups g ON g.id = a.group_id"
            f" WHERE a.status = $1{only} GROUP BY g.workspace_id",
            "pending",
            *([workspace_id] if workspace_id is not None else []),
        )
        if workspace_id is not None:
            workspaces = [workspace_id]
        else:
            workspaces = [r["id"] for r in await self._db.fetch("SELECT id FROM workspaces")]
        found = {row["ws"]: row for row in rows}
        minute = int(now.timestamp()) // 60
        buckets: list[Bucket] = []
        for ws in workspaces:
            row = found.get(ws)
            depth, oldest_s = 0, 0.0
            if row is not None and row["n"]:
                depth = int(row["n"])
                created = table_for(Approval).decode_value(
                    "created_at", row["oldest"], self.dialect
                )
                oldest_s = max(0.0, (now - created).total_seconds())
            buckets.append(Bucket(ws, MINUTE, minute, "approvals_depth", "", float(depth)))
            buckets.append(Bucket(ws, MINUTE, minute, "approvals_oldest_s", "", oldest_s))
        return buckets


def _add_usage(counts: defaultdict[tuple[str, int, str, str], float], row: Row) -> None:
    usage = row["usage"]
    if isinstance(usage, str):
        usage = json.loads(usage)
    if not isinstance(usage, dict):
        return
    minute = int(row["minute"])
    for kind, amount in usage.items():
        if not isinstance(amount, int | float):
            continue
        if kind.endswith("input_tokens"):
            counts[row["ws"], minute, "tokens", "input"] += amount
        elif kind == "output_tokens":
            counts[row["ws"], minute, "tokens", "output"] += amount


def _refusals(counts: dict[tuple[str, int, str], float]) -> list[Bucket]:
    return [
        Bucket(workspace_id=ws, span_m=MINUTE, minute=minute, series="refused", key=reason, value=n)
        for (ws, minute, reason), n in counts.items()
    ]
