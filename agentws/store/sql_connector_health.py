"""What the dashboard's connectors page reads to show their health, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

Two reads per page, whatever the number of connectors: the workspace's
recent audit entries of some actions (tool calls, refreshes), through the
``audit_log_action`` index (``action, created_at``); and each connector's
cached tools counted, with the time of the newest fetch.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING

from agentws.domain.models import AuditEntry, CachedTool
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from agentws.store.database import Database
    from agentws.store.tables import Dialect

__all__ = ["ConnectorHealthQueries"]


class ConnectorHealthQueries:
    """Recent audit entries by action, and tool-cache summaries; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    _db: Database

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    async def recent_audit(
        self, workspace_id: str, actions: Collection[str], *, since: datetime, limit: int
    ) -> list[AuditEntry]:
        table = table_for(AuditEntry)
        names = sorted(actions)
        if not names:
            return []
        marks = ", ".join(f"${i}" for i in range(1, len(names) + 1))
        args: list[object] = [*names]
        args.append(table.encode_value("created_at", since, self.dialect))
        args.append(workspace_id)
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM audit_log"
            f" WHERE action IN ({marks}) AND created_at >= ${len(names) + 1}"
            f" AND workspace_id = ${len(names) + 2}"
            f" ORDER BY created_at DESC, id DESC LIMIT {max(1, int(limit))}",
            *args,
        )
        return [table.decode(row, self.dialect) for row in rows]

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
