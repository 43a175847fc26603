"""Pages of the audit log under filters, in SQL (a part of :class:`SqlStore`).

A page is one indexed range scan of ``limit + 1`` rows over ``(created_at,
id)``, newest first (see :class:`~agentws.domain.approval_lists.Cursor`),
plus, for a page reached going back, one row to tell whether there are
newer ones. Migration 0025 indexes each filter that can be narrow
(workspace, actor, target, a tool call's group, decision and OAuth client)
together with the order, so a narrow filter reads its own rows only; a
broad one walks the time index and drops the few that do not match.

A tool call's group, decision and OAuth client are in the entry's JSON
``detail``; the indexes are on the very expressions written here
(``json_extract`` on SQLite, ``->>`` on PostgreSQL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, Unpack

from agentws.domain.approval_lists import Cursor
from agentws.domain.audit_lists import AuditPage, AuditQuery
from agentws.domain.models import AuditEntry
from agentws.store.queries import Queries, page_cursors
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from datetime import datetime

    from agentws.store.tables import Dialect

__all__ = ["AuditQueries", "AuditStore", "AuditTail"]


def _detail(key: str, dialect: Dialect) -> str:
    """The expression of ``detail.<key>`` as text, as migration 0025 indexes it."""
    if dialect == "sqlite":
        return f"json_extract(detail, '$.{key}')"
    return f"(detail->>'{key}')"


class AuditTail(TypedDict):
    """Which entries :meth:`AuditStore.audit_log` reads (a keyword left out, or None: any)."""

    limit: int
    workspace_id: NotRequired[str | None]
    action_prefix: NotRequired[str | None]
    after: NotRequired[datetime | None]


class AuditStore(Protocol):
    """The audit log, read."""

    async def audit_log(self, **tail: Unpack[AuditTail]) -> list[AuditEntry]:
        """Audit entries, oldest first: the newest ``limit``, or the ``limit`` after ``after``.

        ``action_prefix`` keeps entries whose action starts with it (``approval.``).
        """
        ...

    async def audit_page(self, query: AuditQuery) -> AuditPage:
        """A page of the audit log, newest first, under ``query``'s filters.

        ``next_cursor`` leads to older entries, ``previous_cursor`` to newer ones.
        """
        ...


class AuditQueries(Queries):
    """Filtered pages of the audit log; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def _audit_filter(self, query: AuditQuery) -> tuple[list[str], list[Any]]:
        dialect = self._db.dialect
        clauses: list[str] = []
        args: list[Any] = []

        def equal(expression: str, value: Any) -> None:
            args.append(value)
            clauses.append(f"{expression} = ${len(args)}")

        if query.workspace_id is not None:
            equal("workspace_id", query.workspace_id)
        if query.group_id is not None:
            equal(_detail("group_id", dialect), query.group_id)
        if query.actor is not None:
            equal("actor", query.actor)
        if query.oauth_client is not None:
            equal(_detail("oauth_client", dialect), query.oauth_client)
        if query.tool is not None:
            equal("target", query.tool)
        if query.decision is not None:
            equal(_detail("decision", dialect), query.decision.value)
        if query.action is not None:
            # A prefix, matched without LIKE, whose wildcards the prefix may hold.
            args.append(query.action)
            prefix = f"CAST(${len(args)} AS TEXT)"
            clauses.append(f"substr(action, 1, length({prefix})) = {prefix}")
        if query.since is not None:
            args.append(self._ts(query.since))
            clauses.append(f"created_at >= ${len(args)}")
        if query.until is not None:
            args.append(self._ts(query.until))
            clauses.append(f"created_at < ${len(args)}")
        return clauses, args

    async def _audit_scan(
        self, query: AuditQuery, *, key: Cursor | None, older: bool, limit: int
    ) -> list[AuditEntry]:
        """Entries older than ``key``, newest first (or newer than it, oldest first)."""
        table = table_for(AuditEntry)
        clauses, args = self._audit_filter(query)
        if key is not None:
            self._past_key(clauses, args, key, "<" if older else ">")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        order = "DESC" if older else "ASC"
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM audit_log{where}"
            f" ORDER BY created_at {order}, id {order} LIMIT {int(limit)}",
            *args,
        )
        return [table.decode(row, self._db.dialect) for row in rows]

    async def audit_page(self, query: AuditQuery) -> AuditPage:
        cursor = query.cursor
        # Going forward is going back in time: the list is newest first.
        forward = cursor is None or cursor.forward
        rows = await self._audit_scan(query, key=cursor, older=forward, limit=query.limit + 1)
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        if not forward:
            rows.reverse()
        first = Cursor(rows[0].created_at, rows[0].id) if rows else cursor
        last = Cursor(rows[-1].created_at, rows[-1].id) if rows else cursor

        async def beyond(key: Cursor, older: bool) -> bool:
            return bool(await self._audit_scan(query, key=key, older=older, limit=1))

        cursors = await page_cursors(
            first, last, more=more, forward=forward, from_cursor=cursor is not None, beyond=beyond
        )
        return AuditPage(tuple(rows), *cursors)

    async def audit_log(self, **tail: Unpack[AuditTail]) -> list[AuditEntry]:
        limit, after = tail["limit"], tail.get("after")
        workspace_id, action_prefix = tail.get("workspace_id"), tail.get("action_prefix")
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
