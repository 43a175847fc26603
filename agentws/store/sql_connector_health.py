"""What the dashboard's connectors page reads to show their health, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

Two reads per page, whatever the number of connectors: the workspace's
recent audit entries of tool calls and refreshes, through the
``audit_log_action`` index (``action, created_at``), with only the fields
of their detail that health reads; and each connector's cached tools
counted, with the time of the newest fetch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from agentws.domain.connector_health import HEALTH_ACTIONS, Activity
from agentws.domain.models import AuditEntry, CachedTool
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = ["ConnectorHealthQueries", "ConnectorHealthStore"]

# A field of ``detail`` as text (SQLite gives a JSON true as 1).
_FIELD = {"sqlite": "json_extract(detail, '$.{}')", "postgres": "detail->>'{}'"}


def _number(raw: Any) -> float | None:
    try:
        return None if raw is None else float(raw)
    except ValueError:
        return None


def _error(action: str, raw: Any) -> bool | str | None:
    """A call's error flag (``true``, 1), or a refresh's message."""
    if raw is None:
        return None
    if action == "tool.call":
        return raw in (1, True, "true", "1")
    return str(raw)


class ConnectorHealthStore(Protocol):
    """What the connectors page's health reads."""

    async def connector_activity(
        self, workspace_id: str, *, since: datetime, limit: int
    ) -> list[Activity]:
        """The workspace's tool calls and connector refreshes since ``since``, newest
        first, at most ``limit`` (one read through the action index, for the
        connectors page's health)."""
        ...

    async def connector_tool_summaries(
        self, workspace_id: str
    ) -> dict[str, tuple[int, datetime | None]]:
        """Connector id -> how many tools it has cached, and the newest fetch of them."""
        ...


class ConnectorHealthQueries(Queries):
    """Recent tool calls and refreshes, and tool-cache summaries; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    async def connector_activity(
        self, workspace_id: str, *, since: datetime, limit: int
    ) -> list[Activity]:
        table = table_for(AuditEntry)
        # Only the fields health reads are taken out of ``detail`` (not the
        # arguments): a busy hour is thousands of entries.
        field = _FIELD[self.dialect]
        marks = ", ".join(f"${i}" for i in range(1, len(HEALTH_ACTIONS) + 1))
        rows = await self._db.fetch(
            f"SELECT action, target, created_at, {field.format('outcome')} AS outcome,"
            f" {field.format('duration_ms')} AS duration_ms, {field.format('error')} AS error"
            f" FROM audit_log WHERE action IN ({marks})"
            f" AND created_at >= ${len(HEALTH_ACTIONS) + 1}"
            f" AND workspace_id = ${len(HEALTH_ACTIONS) + 2}"
            f" ORDER BY created_at DESC, id DESC LIMIT {max(1, int(limit))}",
            *HEALTH_ACTIONS,
            table.encode_value("created_at", since, self.dialect),
            workspace_id,
        )
        return [
            Activity(
                action=row["action"],
                target=row["target"],
                created_at=table.decode_value("created_at", row["created_at"], self.dialect),
                outcome=row["outcome"],
                duration_ms=_number(row["duration_ms"]),
                error=_error(row["action"], row["error"]),
            )
            for row in rows
        ]

    async def connector_tool_summaries(
        self, workspace_id: str
    ) -> dict[str, tuple[int, datetime | None]]:
        rows = await self._db.fetch(
            "SELECT t.connector_id AS connector_id, count(*) AS n, max(t.fetched_at) AS newest"
            " FROM cached_tools t JOIN connectors c ON c.id = t.connector_id"
            " WHERE c.workspace_id = $1 GROUP BY t.connector_id",
            workspace_id,
        )
        tools = table_for(CachedTool)
        return {
            str(row["connector_id"]): (
                int(row["n"]),
                tools.decode_value("fetched_at", row["newest"], self.dialect)
                if row["newest"] is not None
                else None,
            )
            for row in rows
        }
