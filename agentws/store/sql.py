"""SqlStore: the :class:`~agentws.store.base.Store` on either SQL driver.

SQL is written once here; the driver (:mod:`~agentws.store.sqlite`,
:mod:`~agentws.store.postgres`) supplies connections, the dialect and error
conversion. Column names in generated SQL come only from :class:`Table`
specs, never from callers, which is what makes building them safe.

Full-text search is the one place the dialects part ways (FTS5 and
``bm25`` on SQLite, ``tsvector`` and ``ts_rank_cd`` on PostgreSQL; see
migration 0002). Both are given the same query shape so they rank alike: the
user's text is cut into words here, each word is passed as a quoted term
(never as query syntax), and the score is the same sum on both sides::

    score = (n + 1 if the title is the query) + (words matched) + relevance

where ``n`` is the number of words and ``relevance`` is the backend's rank
squashed into [0, 1). So an exact title beats everything, more matched words
beat fewer, and the backend's ranking (title weighted above body) orders the
rest. "The title is the query" compares both with spaces collapsed and case
ignored (by SQL ``lower()``, which on SQLite folds ASCII letters only).
Stemming differs a little (Porter on SQLite, Snowball english on
PostgreSQL, which also drops stop words such as "the").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import trio

from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    CachedTool,
    Connector,
    ContextDocument,
    DocumentHit,
    DocumentPolicy,
    Event,
    EventStatus,
    Group,
    Instance,
    Library,
    McpToken,
    Skill,
    ToolPermission,
    Workspace,
)
from agentws.domain.rules import utcnow
from agentws.errors import ConflictError, NotFoundError
from agentws.store.database import Database, Row
from agentws.store.sql_approval_runs import ApprovalRunQueries
from agentws.store.sql_approvals import ApprovalQueries
from agentws.store.sql_events import EventQueries
from agentws.store.tables import Dialect, Table, table_for

__all__ = ["SqlStore"]

R = TypeVar("R")

# Rows per multi-row INSERT, ids per IN list: far below either database's limit
# on parameters.
_ROWS_PER_STATEMENT = 200
# Search hits returned at most; more is noise to a reader and work for the database.
_MAX_HITS = 50
# Words of a query used at most: each one is a lookup of its own (words matched).
_MAX_TERMS = 16
# Longer "words" are not words (hashes, base64); PostgreSQL ignores lexemes over 2 KiB.
_MAX_TERM_CHARS = 100
# Letters and digits; everything else, the underscore included, separates words,
# as it does for the FTS5 unicode61 tokenizer.
_WORD = re.compile(r"[^\W_]+")
# Title matches count this many times a body match in SQLite's bm25 (PostgreSQL
# weighs title A = 1.0 against body B = 0.4 by default).
_TITLE_WEIGHT = 10.0
# Snippet length in words, and how matches are marked (the agent reads Markdown).
_SNIPPET_WORDS = 24
_MARK = "**"

# Joins rows ``d`` of a library (documents, skills) to the groups they are exposed
# to: through an attachment, and only within the group's own workspace.
_EXPOSED = """
    JOIN group_libraries gl ON gl.library_id = d.library_id
    JOIN workspace_groups g ON g.id = gl.group_id
    JOIN libraries l ON l.id = gl.library_id AND l.workspace_id = g.workspace_id
"""


def _search_terms(query: str) -> list[str]:
    """The distinct words of ``query``, lowercased, in order, at most ``_MAX_TERMS``."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if len(word) <= _MAX_TERM_CHARS and word not in terms:
            terms.append(word)
    return terms[:_MAX_TERMS]


def _title_key(query: str) -> str:
    """The query as a title would be compared to it: spaces collapsed, storable text only."""
    text = " ".join(query.replace("\x00", " ").split())
    # Lone surrogates cannot be sent to either database; no title contains one.
    return text.encode("utf-8", "ignore").decode("utf-8")


def _columns(table: Table, alias: str, prefix: str = "") -> str:
    return ", ".join(f"{alias}.{c} AS {prefix}{c}" for c in table.columns)


def _unprefix(row: Row, table: Table, prefix: str) -> Row:
    return {c: row[prefix + c] for c in table.columns}


class SqlStore(EventQueries, ApprovalQueries, ApprovalRunQueries):
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
        placeholders = ", ".join(f"${i}" for i in range(1, len(table.columns) + 1))
        sql = f"INSERT INTO {table.name} ({', '.join(table.columns)}) VALUES ({placeholders})"
        try:
            async with self._db.transaction() as tx:
                await tx.execute(sql, *table.encode(record, self.dialect))
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
        width = len(table.columns)
        async with self._db.transaction() as tx:
            for start in range(0, len(records), _ROWS_PER_STATEMENT):
                chunk = records[start : start + _ROWS_PER_STATEMENT]
                rows = ", ".join(
                    "(" + ", ".join(f"${i * width + j + 1}" for j in range(width)) + ")"
                    for i in range(len(chunk))
                )
                args = [v for record in chunk for v in table.encode(record, self.dialect)]
                await tx.execute(
                    f"INSERT INTO {table.name} ({', '.join(table.columns)}) VALUES {rows}", *args
                )

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

    async def touch_token(self, token_id: str) -> None:
        now = table_for(McpToken).encode_value("last_used_at", utcnow(), self.dialect)
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE mcp_tokens SET last_used_at = $2 WHERE id = $1", token_id, now)

    async def mark_tools_fetched(self, connector_id: str, fetched_at: datetime) -> None:
        when = table_for(CachedTool).encode_value("fetched_at", fetched_at, self.dialect)
        async with self._db.transaction() as tx:
            sql = "UPDATE cached_tools SET fetched_at = $2 WHERE connector_id = $1"
            await tx.execute(sql, connector_id, when)

    async def decide_approval(
        self,
        approval_id: str,
        *,
        status: ApprovalStatus,
        decided_by: str,
        reason: str | None,
        now: datetime,
    ) -> Approval | None:
        table = table_for(Approval)
        when = table.encode_value("decided_at", now, self.dialect)
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE approvals SET status = $2, decided_by = $3, reason = $4, decided_at = $5,"
                " finished_at = CASE WHEN $2 = 'approved' THEN NULL ELSE $5 END"
                " WHERE id = $1 AND status = 'pending' AND expires_at > $5",
                approval_id,
                status.value,
                decided_by,
                reason,
                when,
            )
        return await self.get(Approval, approval_id) if changed else None

    async def finish_approval(
        self,
        approval_id: str,
        *,
        owner: str,
        status: ApprovalStatus,
        result: dict[str, Any] | None,
        error: str | None,
        now: datetime,
    ) -> Approval | None:
        table = table_for(Approval)
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE approvals SET status = $2, result = $3, error = $4, finished_at = $5,"
                " lease_expires_at = NULL"
                " WHERE id = $1 AND status = 'approved' AND lease_owner = $6",
                approval_id,
                status.value,
                table.encode_value("result", result, self.dialect),
                error,
                table.encode_value("finished_at", now, self.dialect),
                owner,
            )
        return await self.get(Approval, approval_id) if changed else None

    async def approvals(self, ids: list[str]) -> list[Approval]:
        table = table_for(Approval)
        found: list[Approval] = []
        for start in range(0, len(ids), _ROWS_PER_STATEMENT):
            chunk = ids[start : start + _ROWS_PER_STATEMENT]
            marks = ", ".join(f"${i}" for i in range(1, len(chunk) + 1))
            rows = await self._fetch(
                f"SELECT {', '.join(table.columns)} FROM approvals WHERE id IN ({marks})", *chunk
            )
            found += [table.decode(row, self.dialect) for row in rows]
        return found

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

    async def unreported_approvals(self, *, limit: int) -> list[Approval]:
        table = table_for(Approval)
        rows = await self._fetch(
            f"SELECT {', '.join(table.columns)} FROM approvals"
            " WHERE reported_at IS NULL AND event_id IS NOT NULL"
            " AND status IN ('executed', 'failed', 'denied', 'expired')"
            " ORDER BY finished_at, id LIMIT $1",
            limit,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def take_approval_report(self, approval_id: str, now: datetime) -> bool:
        when = table_for(Approval).encode_value("reported_at", now, self.dialect)
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE approvals SET reported_at = $2 WHERE id = $1 AND reported_at IS NULL",
                approval_id,
                when,
            )
        return bool(changed)

    async def release_approval_report(self, approval_id: str) -> None:
        async with self._db.transaction() as tx:
            await tx.execute("UPDATE approvals SET reported_at = NULL WHERE id = $1", approval_id)

    async def expire_approvals(self, now: datetime) -> list[Approval]:
        table = table_for(Approval)
        when = table.encode_value("expires_at", now, self.dialect)
        rows = await self._fetch(
            f"SELECT {', '.join(table.columns)} FROM approvals"
            " WHERE status = 'pending' AND expires_at <= $1 ORDER BY created_at, id",
            when,
        )
        expired: list[Approval] = []
        for row in rows:
            async with self._db.transaction() as tx:
                changed = await tx.execute(
                    "UPDATE approvals SET status = 'expired', finished_at = $2"
                    " WHERE id = $1 AND status = 'pending'",
                    row["id"],
                    when,
                )
            if changed:
                expired.append(await self.get(Approval, row["id"]))
        return expired

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

    async def group_libraries(self, group_id: str) -> list[Library]:
        table = table_for(Library)
        rows = await self._fetch(
            f"SELECT {_columns(table, 'l')} FROM group_libraries gl"
            " JOIN workspace_groups g ON g.id = gl.group_id"
            " JOIN libraries l ON l.id = gl.library_id AND l.workspace_id = g.workspace_id"
            " WHERE gl.group_id = $1 ORDER BY gl.created_at, gl.id",
            group_id,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def _exposed_documents(self, condition: str, *args: Any) -> list[ContextDocument]:
        table = table_for(ContextDocument)
        rows = await self._fetch(
            f"SELECT {_columns(table, 'd')} FROM context_documents d {_EXPOSED}"
            f" WHERE gl.group_id = $1 AND d.policy <> '{DocumentPolicy.NEVER.value}'{condition}"
            " ORDER BY gl.created_at, gl.id, d.created_at, d.id",
            *args,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def group_documents(self, group_id: str) -> list[ContextDocument]:
        return await self._exposed_documents("", group_id)

    async def group_document(self, group_id: str, document_id: str) -> ContextDocument | None:
        found = await self._exposed_documents(" AND d.id = $2", group_id, document_id)
        return found[0] if found else None

    async def group_skills(self, group_id: str) -> list[Skill]:
        table = table_for(Skill)
        rows = await self._fetch(
            f"SELECT {_columns(table, 'd')} FROM skills d {_EXPOSED}"
            " WHERE gl.group_id = $1 ORDER BY gl.created_at, gl.id, d.created_at, d.id",
            group_id,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def catalog_version(self) -> int:
        rows = await self._fetch("SELECT version FROM catalog_version WHERE id = 1")
        return int(rows[0]["version"])

    async def pending_approvals_summary(self) -> tuple[int, float]:
        rows = await self._fetch(
            "SELECT count(*) AS n, min(created_at) AS oldest FROM approvals WHERE status = $1",
            ApprovalStatus.PENDING.value,
        )
        oldest = rows[0]["oldest"]
        if not rows[0]["n"] or oldest is None:
            return 0, 0.0
        created = table_for(Approval).decode_value("created_at", oldest, self.dialect)
        return int(rows[0]["n"]), max(0.0, (utcnow() - created).total_seconds())

    async def event_counts(self) -> dict[str, int]:
        rows = await self._fetch("SELECT status, count(*) AS n FROM events GROUP BY status")
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
            rows = await self._fetch(f"{sql} ORDER BY created_at DESC LIMIT 1", *args)
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
        rows = await self._fetch(
            f"SELECT {', '.join(table.columns)} FROM {table.name} WHERE heartbeat_at >= $1",
            table.encode_value("heartbeat_at", since, self.dialect),
        )
        return [table.decode(row, self.dialect) for row in rows]

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

    async def group_tools(self, group_id: str) -> list[tuple[Connector, CachedTool]]:
        connectors, tools = table_for(Connector), table_for(CachedTool)
        # Byte order on both backends: SQLite's default, and PostgreSQL's "C"
        # whatever collation the database was created with.
        collate = ' COLLATE "C"' if self.dialect == "postgres" else ""
        rows = await self._fetch(
            f"SELECT {_columns(connectors, 'c', 'c_')}, {_columns(tools, 't', 't_')}"
            " FROM group_connectors gc"
            " JOIN workspace_groups g ON g.id = gc.group_id"
            " JOIN connectors c ON c.id = gc.connector_id AND c.workspace_id = g.workspace_id"
            " JOIN cached_tools t ON t.connector_id = c.id"
            f" WHERE gc.group_id = $1 AND c.active = $2"
            f" ORDER BY c.name{collate}, t.name{collate}, t.id",
            group_id,
            connectors.encode_value("active", True, self.dialect),
        )
        return [
            (
                connectors.decode(_unprefix(row, connectors, "c_"), self.dialect),
                tools.decode(_unprefix(row, tools, "t_"), self.dialect),
            )
            for row in rows
        ]

    async def search_documents(self, group_id: str, query: str, *, limit: int) -> list[DocumentHit]:
        terms = _search_terms(query)
        if not terms:
            return []
        limit = max(1, min(int(limit), _MAX_HITS))
        if self.dialect == "sqlite":
            sql, match, quoted = _sqlite_search(len(terms), limit), " OR ", '"{}"'
        else:
            sql, match, quoted = _postgres_search(len(terms), limit), " | ", "'{}'"
        phrases = [quoted.format(term) for term in terms]
        rows = await self._fetch(
            sql, group_id, match.join(phrases), _title_key(query), len(terms) + 1, *phrases
        )
        return [
            DocumentHit(
                document_id=row["document_id"],
                library_id=row["library_id"],
                library_slug=row["library_slug"],
                slug=row["slug"],
                title=row["title"],
                mime_type=row["mime_type"],
                snippet=row["snippet"] or "",
                score=float(row["score"]),
            )
            for row in rows
        ]


# Parameters of both search queries: $1 group id, $2 the query (any word),
# $3 the title key, $4 the exact-title bonus, $5... one query per word.
_HIT_COLUMNS = (
    "d.id AS document_id, d.library_id, l.slug AS library_slug, d.slug, d.title, d.mime_type"
)
_ORDER = "gl.created_at, gl.id, d.created_at, d.id"


def _sqlite_search(n_terms: int, limit: int) -> str:
    fts = "context_documents_fts"
    bm25 = f"bm25({fts}, {_TITLE_WEIGHT}, 1.0)"
    matched = " + ".join(
        f"(d.rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ${5 + i}))" for i in range(n_terms)
    )
    # bm25 is negative, better when lower: -bm25 / (1 - bm25) is in [0, 1), better when higher.
    # snippet() reads the document's text, so it is made only for the hits returned.
    return (
        f"WITH hits AS (SELECT d.rowid AS hit_rowid, {_HIT_COLUMNS},"
        " gl.created_at AS attached_at, gl.id AS attachment_id, d.created_at,"
        " (CASE WHEN lower(trim(d.title)) = lower($3) THEN $4 ELSE 0 END)"
        f" + {matched} + (-{bm25}) / (1.0 - {bm25}) AS score"
        f" FROM {fts} JOIN context_documents d ON d.rowid = {fts}.rowid {_EXPOSED}"
        f" WHERE {fts} MATCH $2 AND gl.group_id = $1"
        f" AND d.policy <> '{DocumentPolicy.NEVER.value}'"
        f" ORDER BY score DESC, {_ORDER} LIMIT {int(limit)})"
        " SELECT hits.document_id, hits.library_id, hits.library_slug, hits.slug, hits.title,"
        " hits.mime_type,"
        f" snippet({fts}, 1, '{_MARK}', '{_MARK}', '…', {_SNIPPET_WORDS}) AS snippet,"
        " hits.score"
        f" FROM hits JOIN {fts} ON {fts}.rowid = hits.hit_rowid WHERE {fts} MATCH $2"
        " ORDER BY hits.score DESC, hits.attached_at, hits.attachment_id, hits.created_at,"
        " hits.document_id"
    )


def _postgres_search(n_terms: int, limit: int) -> str:
    matched = " + ".join(
        f"(d.search @@ to_tsquery('english', ${5 + i}))::int" for i in range(n_terms)
    )
    headline = (
        f"StartSel={_MARK}, StopSel={_MARK}, MaxWords={_SNIPPET_WORDS},"
        f" MinWords={_SNIPPET_WORDS // 3}, MaxFragments=1"
    )
    # The headline, which reparses the body, is made only for the hits returned.
    # ts_rank_cd normalisation 32 is rank / (rank + 1): in [0, 1).
    return (
        "WITH q AS (SELECT to_tsquery('english', $2) AS query), hits AS ("
        f" SELECT {_HIT_COLUMNS}, d.body, gl.created_at AS attached_at, gl.id AS attachment_id,"
        " d.created_at,"
        " (CASE WHEN lower(btrim(d.title)) = lower($3) THEN $4 ELSE 0 END)"
        f" + {matched} + ts_rank_cd(d.search, q.query, 32)::float8 AS score"
        f" FROM q CROSS JOIN context_documents d {_EXPOSED}"
        " WHERE d.search @@ q.query AND gl.group_id = $1"
        f" AND d.policy <> '{DocumentPolicy.NEVER.value}'"
        f" ORDER BY score DESC, {_ORDER} LIMIT {int(limit)})"
        " SELECT hits.document_id, hits.library_id, hits.library_slug, hits.slug, hits.title,"
        " hits.mime_type,"
        f" ts_headline('english', hits.body, q.query, '{headline}') AS snippet, hits.score"
        " FROM hits CROSS JOIN q"
        " ORDER BY hits.score DESC, hits.attached_at, hits.attachment_id, hits.created_at,"
        " hits.document_id"
    )
