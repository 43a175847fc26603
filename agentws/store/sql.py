"""SqlStore: the :class:`~agentws.store.base.Store` on either SQL driver.

SQL is written once here; the driver (:mod:`~agentws.store.sqlite`,
:mod:`~agentws.store.postgres`) supplies connections, the dialect and error
conversion. Column names in generated SQL come only from :class:`Table`
specs, never from callers, which is what makes building them safe.

This module holds the record operations every table shares (insert, select,
update, delete by :class:`Table` spec) and the few lookups that are only a
query each. The query groups with a job of their own are mixed in from
sibling modules: webhook events and channels (:mod:`.sql_events`), event lists
and their search index (:mod:`.sql_event_search`), failure streaks and their
notices (:mod:`.sql_streaks`), bulk replays (:mod:`.sql_replays`), approval
lists and queueing (:mod:`.sql_approvals`), decisions and reports
(:mod:`.sql_approval_decisions`), runs under a lease
(:mod:`.sql_approval_runs`), rate limits (:mod:`.sql_rate_limits`), OAuth grants and refresh
tokens (:mod:`.sql_oauth`), a
group's catalog and search (:mod:`.sql_catalog`), heartbeats and probes
(:mod:`.sql_health`), the webhooks' delivery log (:mod:`.sql_deliveries`), and
the overview's figures: counted at their source (:mod:`.sql_rollup_sources`)
and rolled up by the minute (:mod:`.sql_rollups`), the connectors' health
(:mod:`.sql_connector_health`),
filtered pages of the audit log (:mod:`.sql_audit`), deleting an admin but
the last (:mod:`.sql_admins`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, TypeVar

import trio

from agentws.domain.models import (
    AuditEntry,
    CachedTool,
    Group,
    McpToken,
    ToolPermission,
    Workspace,
)
from agentws.domain.rules import utcnow
from agentws.errors import ConflictError, NotFoundError
from agentws.store.database import Database, Row
from agentws.store.sql_admins import AdminQueries
from agentws.store.sql_approval_decisions import ApprovalDecisionQueries
from agentws.store.sql_approval_runs import ApprovalRunQueries
from agentws.store.sql_approvals import ApprovalQueries
from agentws.store.sql_audit import AuditQueries
from agentws.store.sql_catalog import CatalogQueries
from agentws.store.sql_connector_health import ConnectorHealthQueries
from agentws.store.sql_deliveries import DeliveryLogQueries
from agentws.store.sql_event_search import EventSearchQueries
from agentws.store.sql_events import EventQueries
from agentws.store.sql_health import HealthQueries
from agentws.store.sql_oauth import OAuthQueries
from agentws.store.sql_rate_limits import RateLimitQueries
from agentws.store.sql_replays import ReplayQueries
from agentws.store.sql_rollup_sources import RollupSourceQueries
from agentws.store.sql_rollups import RollupQueries
from agentws.store.sql_rotation import RotationQueries
from agentws.store.sql_samples import SampleQueries
from agentws.store.sql_streaks import StreakQueries
from agentws.store.tables import Dialect, Table, table_for

__all__ = ["SqlStore"]

R = TypeVar("R")

# Rows per multi-row INSERT: far below either database's limit on parameters.
_ROWS_PER_STATEMENT = 200
# Ids per `IN (...)` lookup, likewise.
_IDS_PER_QUERY = 500


class SqlStore(
    EventQueries,
    RotationQueries,
    StreakQueries,
    ReplayQueries,
    EventSearchQueries,
    ApprovalQueries,
    ApprovalDecisionQueries,
    ApprovalRunQueries,
    RateLimitQueries,
    SampleQueries,
    OAuthQueries,
    CatalogQueries,
    HealthQueries,
    DeliveryLogQueries,
    RollupSourceQueries,
    RollupQueries,
    ConnectorHealthQueries,
    AuditQueries,
    AdminQueries,
):
    """The store over a :class:`~agentws.store.database.Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    @property
    def database(self) -> Database:
        return self._db

    async def ping(self) -> None:
        await self._db.ping()

    def data_version(self) -> int | None:
        return self._db.data_version()

    def _where(self, table: Table, where: dict[str, Any], start: int = 1) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        for column, value in where.items():
            table.check_column(column)
            if value is None:
                clauses.append(f"{column} IS NULL")
            else:
                args.append(table.encode_value(column, value, self.dialect))
                clauses.append(f"{column} = ${start + len(args) - 1}")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    async def insert(self, record: R) -> R:
        table = table_for(type(record))
        # Columns left empty are left out: NULL either way, and a database one
        # migration behind (a rolling upgrade, an old schema in a test) takes
        # the record as long as what it lacks is empty.
        given = [
            (column, value)
            for column, value in zip(table.columns, table.encode(record, self.dialect), strict=True)
            if value is not None
        ]
        placeholders = ", ".join(f"${i}" for i in range(1, len(given) + 1))
        columns = ", ".join(column for column, _ in given)
        sql = f"INSERT INTO {table.name} ({columns}) VALUES ({placeholders})"
        try:
            async with self._db.transaction() as tx:
                await tx.execute(sql, *(value for _, value in given))
        except ConflictError:
            raise ConflictError(f"{table.describe(record)} already exists") from None
        except NotFoundError:
            raise NotFoundError(
                f"cannot save {table.describe(record)}: it refers to a record that does not exist"
            ) from None
        return record

    async def insert_many(self, records: list[Any]) -> None:
        if not records:
            return
        table = table_for(type(records[0]))
        async with self._db.transaction() as tx:
            for start in range(0, len(records), _ROWS_PER_STATEMENT):
                chunk = records[start : start + _ROWS_PER_STATEMENT]
                args = [v for record in chunk for v in table.encode(record, self.dialect)]
                await tx.execute(_insert_rows(table.name, table.columns, len(chunk)), *args)

    async def get(self, kind: type[R], record_id: str, /) -> R:
        found = await self.find(kind, id=record_id)
        if found is None:
            raise NotFoundError(f"no {table_for(kind).noun} with id {record_id!r}")
        return found

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        found = await self.select(kind, limit=1, **where)
        return found[0] if found else None

    async def select(
        self, kind: type[R], /, *, limit: int | None = None, offset: int = 0, **where: Any
    ) -> list[R]:
        table = table_for(kind)
        condition, args = self._where(table, where)
        columns = ", ".join(table.columns)
        sql = f"SELECT {columns} FROM {table.name}{condition} ORDER BY {table.order_by}"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        elif offset:
            sql += (
                f" LIMIT -1 OFFSET {int(offset)}"
                if self.dialect == "sqlite"
                else f" OFFSET {int(offset)}"
            )
        rows = await self._db.fetch(sql, *args)
        decoded: list[R] = [table.decode(row, self.dialect) for row in rows]
        return decoded

    async def count(self, kind: type[Any], /, **where: Any) -> int:
        table = table_for(kind)
        condition, args = self._where(table, where)
        rows = await self._db.fetch(f"SELECT COUNT(*) AS n FROM {table.name}{condition}", *args)
        return int(rows[0]["n"])

    async def update(self, record: R) -> R:
        table = table_for(type(record))
        values = table.encode(record, self.dialect)
        columns = [c for c in table.columns if c != "id"]
        assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(columns, start=2))
        by_column = dict(zip(table.columns, values, strict=True))
        sql = f"UPDATE {table.name} SET {assignments} WHERE id = $1"
        try:
            async with self._db.transaction() as tx:
                changed = await tx.execute(sql, by_column["id"], *(by_column[c] for c in columns))
        except ConflictError:
            raise ConflictError(f"{table.describe(record)} already exists") from None
        except NotFoundError:
            raise NotFoundError(
                f"cannot save {table.describe(record)}: it refers to a record that does not exist"
            ) from None
        if not changed:
            raise NotFoundError(f"no {table.noun} with id {getattr(record, 'id', None)!r}")
        return record

    async def delete(self, kind: type[Any], record_id: str, /) -> None:
        table = table_for(kind)
        async with self._db.transaction() as tx:
            changed = await tx.execute(f"DELETE FROM {table.name} WHERE id = $1", record_id)
        if not changed:
            raise NotFoundError(f"no {table.noun} with id {record_id!r}")

    async def workspace_by_slug(self, slug: str) -> Workspace:
        found = await self.find(Workspace, slug=slug)
        if found is None:
            raise NotFoundError(f"no workspace {slug!r} (see `agentws workspace list`)")
        return found

    async def group_by_slug(self, workspace_slug: str, group_slug: str) -> Group:
        workspace = await self.workspace_by_slug(workspace_slug)
        found = await self.find(Group, workspace_id=workspace.id, slug=group_slug)
        if found is None:
            raise NotFoundError(
                f"no group {group_slug!r} in workspace {workspace_slug!r} "
                f"(see `agentws group list {workspace_slug}`)"
            )
        return found

    async def token_by_hash(self, token_hash: str) -> McpToken | None:
        return await self.find(McpToken, token_hash=token_hash)

    async def revoke_token(self, token_id: str) -> McpToken:
        table = table_for(McpToken)
        now = table.encode_value("revoked_at", utcnow(), self.dialect)
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE mcp_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
                token_id,
                now,
            )
        return await self.get(McpToken, token_id)

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        # By primary key, a chunk at a time: the cost follows the tokens this
        # process holds sessions of, not every token there is.
        ids = list(token_ids)
        live: set[str] = set()
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            marks = ", ".join(f"${n}" for n in range(1, len(chunk) + 1))
            sql = f"SELECT id FROM mcp_tokens WHERE revoked_at IS NULL AND id IN ({marks})"
            live.update(str(row["id"]) for row in await self._fetch(sql, *chunk))
        return live

    async def touch_token(self, token_id: str) -> None:
        now = table_for(McpToken).encode_value("last_used_at", utcnow(), self.dialect)
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE mcp_tokens SET last_used_at = $2 WHERE id = $1", token_id, now)

    async def mark_tools_fetched(self, connector_id: str, fetched_at: datetime) -> None:
        when = table_for(CachedTool).encode_value("fetched_at", fetched_at, self.dialect)
        async with self._db.transaction() as tx:
            sql = "UPDATE cached_tools SET fetched_at = $2 WHERE connector_id = $1"
            await tx.execute(sql, connector_id, when)

    async def tool_permissions(self, workspace_id: str, group_id: str) -> list[ToolPermission]:
        table = table_for(ToolPermission)
        rows = await self._fetch(
            f"SELECT {', '.join(table.columns)} FROM tool_permissions"
            " WHERE workspace_id = $1 AND (group_id IS NULL OR group_id = $2)"
            " ORDER BY created_at, id",
            workspace_id,
            group_id,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def audit_log(
        self,
        *,
        limit: int,
        workspace_id: str | None = None,
        action_prefix: str | None = None,
        after: datetime | None = None,
    ) -> list[AuditEntry]:
        table = table_for(AuditEntry)
        clauses: list[str] = []
        args: list[Any] = []
        if workspace_id is not None:
            args.append(workspace_id)
            clauses.append(f"workspace_id = ${len(args)}")
        if action_prefix is not None:
            # Matched as a prefix without LIKE, whose wildcards the prefix may contain.
            args.append(action_prefix)
            prefix = f"CAST(${len(args)} AS TEXT)"
            clauses.append(f"substr(action, 1, length({prefix})) = {prefix}")
        if after is not None:
            args.append(table.encode_value("created_at", after, self.dialect))
            clauses.append(f"created_at > ${len(args)}")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        order = "ASC" if after is not None else "DESC"
        rows = await self._fetch(
            f"SELECT {', '.join(table.columns)} FROM audit_log{where}"
            f" ORDER BY created_at {order}, id {order} LIMIT {max(1, int(limit))}",
            *args,
        )
        entries: list[AuditEntry] = [table.decode(row, self.dialect) for row in rows]
        return entries if after is not None else entries[::-1]

    async def _fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self._db.fetch(sql, *args)

    async def catalog_version(self) -> int:
        rows = await self._fetch("SELECT version FROM catalog_version WHERE id = 1")
        return int(rows[0]["version"])

    @property
    def notifies(self) -> bool:
        return self._db.notifies

    async def listen_for_changes(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self._db.listen(on_change, task_status=task_status)


# The audit log inserts batches of a few sizes, many times over: each text is made once.
@functools.lru_cache(maxsize=64)
def _insert_rows(name: str, columns: tuple[str, ...], count: int) -> str:
    """``INSERT`` of ``count`` rows into table ``name``, its values numbered ``$1``, ``$2``…"""
    width = len(columns)
    rows = ", ".join(
        "(" + ", ".join(f"${i * width + j + 1}" for j in range(width)) + ")" for i in range(count)
    )
    return f"INSERT INTO {name} ({', '.join(columns)}) VALUES {rows}"
