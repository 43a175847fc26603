"""Lists of queued calls and the cap on queueing, in SQL (a part of :class:`SqlStore`).

Lists read only what a row shows (:class:`~agentws.domain.approval_lists.ApprovalSummary`):
the arguments' stored preview and size, never the arguments, their sealed
copy or the result, which may be hundreds of KiB each. On SQLite those
large columns are the last of the row (migration 0014), so reading a row's
other columns does not walk the pages they overflow into; PostgreSQL keeps
large values out of line (TOAST) and reads them only when selected.

Pages are keyset pages over ``(created_at, id)`` (see :class:`Cursor`): a
page costs one indexed range scan of ``limit + 1`` rows, wherever it is.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from agentws.domain.approval_lists import (
    ApprovalPage,
    ApprovalQuery,
    ApprovalSummary,
    Cursor,
    shown_status,
)
from agentws.domain.models import Approval, ApprovalStatus, Capability
from agentws.store.queries import Queries, page_cursors
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from agentws.store.database import Row

__all__ = ["ApprovalQueries", "ApprovalStore"]

# Characters of an error a list shows; the whole is on the approval's own page.
_ERROR_CHARS = 300
_PENDING, _EXPIRED = ApprovalStatus.PENDING.value, ApprovalStatus.EXPIRED.value
_APPROVED = ApprovalStatus.APPROVED.value
_WEBHOOK_ACTOR = "webhook:"

_SUMMARY = (
    "a.id, w.slug AS workspace_slug, g.slug AS group_slug, a.token_id, t.name AS token_name,"
    " wh.name AS webhook_name, a.session_id, a.event_id, a.requested_by, a.tool_name,"
    " a.capability, a.arguments_preview, a.arguments_bytes, a.arguments_hash, a.status,"
    f" a.reason, a.decided_by, substr(a.error, 1, {_ERROR_CHARS}) AS error, a.created_at,"
    " a.expires_at, a.decided_at, a.finished_at, a.lease_owner"
)
# A webhook's run asks as ``webhook:<id>``; its webhook is found by that id (primary key).
_FROM = (
    " FROM approvals a JOIN workspace_groups g ON g.id = a.group_id"
    " JOIN workspaces w ON w.id = g.workspace_id"
    " LEFT JOIN mcp_tokens t ON t.id = a.token_id"
    f" LEFT JOIN webhooks wh ON substr(a.requested_by, 1, {len(_WEBHOOK_ACTOR)})"
    f" = '{_WEBHOOK_ACTOR}' AND wh.id = substr(a.requested_by, {len(_WEBHOOK_ACTOR) + 1})"
)


def _status_condition(status: ApprovalStatus, now: str) -> str:
    """Rows a person sees with ``status``: a pending row past its expiry counts as expired."""
    if status is ApprovalStatus.PENDING:
        return f"(a.status = '{_PENDING}' AND a.expires_at > {now})"
    if status is ApprovalStatus.EXPIRED:
        return f"(a.status = '{_EXPIRED}' OR (a.status = '{_PENDING}' AND a.expires_at <= {now}))"
    if status is ApprovalStatus.RUNNING:  # approved, and an instance holds its lease
        return f"(a.status = '{_APPROVED}' AND a.lease_owner IS NOT NULL)"
    if status is ApprovalStatus.APPROVED:
        return f"(a.status = '{_APPROVED}' AND a.lease_owner IS NULL)"
    return f"a.status = '{status.value}'"


class ApprovalStore(Protocol):
    """Queued calls: queued under a cap, listed, counted."""

    async def queue_approval(self, approval: Approval, *, max_pending: int, now: datetime) -> bool:
        """Store a new pending approval unless its requester already has ``max_pending``.

        Counts the requester's (``requested_by``: one token, one webhook)
        pending approvals not yet expired at ``now``, and inserts in the same
        transaction, serialized per requester: concurrent calls cannot pass
        the cap together. False, and nothing stored, when at the cap.
        """
        ...

    async def approval_page(self, query: ApprovalQuery, *, now: datetime) -> ApprovalPage:
        """One page of queued calls as summaries: previews, never whole arguments or results.

        Statuses are as a person sees them at ``now`` (a pending request past
        its expiry is expired). Ordered by ``(created_at, id)``, oldest first
        unless ``query.newest_first``; ``query.cursor`` is one a page gave.
        """
        ...

    async def count_approvals(self, query: ApprovalQuery, *, now: datetime) -> int:
        """How many queued calls ``query`` lists, over all its pages."""
        ...


class ApprovalQueries(Queries):
    """Approval list and queueing queries; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def _filter(self, query: ApprovalQuery, now: datetime) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if query.statuses is not None:
            at = f"${len(args) + 1}"
            shown = [_status_condition(s, at) for s in sorted(query.statuses)]
            if any(at in condition for condition in shown):  # pending and expired depend on now
                args.append(self._ts(now))
            clauses.append("(" + (" OR ".join(shown) or "1 = 0") + ")")
        if query.workspace_id is not None:
            args.append(query.workspace_id)
            clauses.append(f"g.workspace_id = ${len(args)}")
        return clauses, args

    async def _scan(
        self,
        query: ApprovalQuery,
        now: datetime,
        *,
        key: Cursor | None,
        ascending: bool,
        limit: int,
    ) -> list[Row]:
        """Rows after ``key`` in ascending (or before it in descending) key order."""
        clauses, args = self._filter(query, now)
        if key is not None:
            self._past_key(clauses, args, key, ">" if ascending else "<", prefix="a.")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        order = "ASC" if ascending else "DESC"
        return await self._db.fetch(
            f"SELECT {_SUMMARY}{_FROM}{where}"
            f" ORDER BY a.created_at {order}, a.id {order} LIMIT {int(limit)}",
            *args,
        )

    def _summary(self, row: Row, now: datetime) -> ApprovalSummary:
        table = table_for(Approval)

        def at(column: str) -> Any:
            return table.decode_value(column, row[column], self.dialect)

        expires_at = at("expires_at")
        return ApprovalSummary(
            id=row["id"],
            workspace_slug=row["workspace_slug"],
            group_slug=row["group_slug"],
            token_id=row["token_id"],
            token_name=row["token_name"],
            webhook_name=row["webhook_name"],
            session_id=row["session_id"],
            event_id=row["event_id"],
            requested_by=row["requested_by"],
            tool_name=row["tool_name"],
            capability=Capability(row["capability"]),
            arguments_preview=row["arguments_preview"],
            arguments_bytes=int(row["arguments_bytes"]),
            arguments_hash=row["arguments_hash"],
            status=shown_status(
                ApprovalStatus(row["status"]),
                expires_at,
                now,
                leased=row["lease_owner"] is not None,
            ),
            reason=row["reason"],
            decided_by=row["decided_by"],
            error=row["error"],
            created_at=at("created_at"),
            expires_at=expires_at,
            decided_at=at("decided_at"),
            finished_at=at("finished_at"),
        )

    async def approval_page(self, query: ApprovalQuery, *, now: datetime) -> ApprovalPage:
        # "Forward" is the list's own order: oldest first, or newest first for a history.
        cursor = query.cursor
        forward = cursor is None or cursor.forward
        ascending = forward != query.newest_first
        rows = await self._scan(query, now, key=cursor, ascending=ascending, limit=query.limit + 1)
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        if not forward:
            rows.reverse()
        items = tuple(self._summary(row, now) for row in rows)
        first = Cursor(items[0].created_at, items[0].id) if items else cursor
        last = Cursor(items[-1].created_at, items[-1].id) if items else cursor

        async def beyond(key: Cursor, onward: bool) -> bool:
            up = onward != query.newest_first
            return bool(await self._scan(query, now, key=key, ascending=up, limit=1))

        cursors = await page_cursors(
            first, last, more=more, forward=forward, from_cursor=cursor is not None, beyond=beyond
        )
        return ApprovalPage(items, *cursors)

    async def count_approvals(self, query: ApprovalQuery, *, now: datetime) -> int:
        clauses, args = self._filter(query, now)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = await self._db.fetch(
            "SELECT count(*) AS n FROM approvals a JOIN workspace_groups g ON g.id = a.group_id"
            + where,
            *args,
        )
        return int(rows[0]["n"])

    async def queue_approval(self, approval: Approval, *, max_pending: int, now: datetime) -> bool:
        table = table_for(Approval)
        marks = ", ".join(f"${i}" for i in range(1, len(table.columns) + 1))
        async with self._db.transaction() as tx:
            if self.dialect == "postgres":
                # One queuer per requester at a time, so the count below stays true until
                # the insert commits. SQLite's write transactions are one at a time anyway.
                await tx.fetch(
                    "SELECT pg_advisory_xact_lock("
                    "hashtext('agentws:approvals:' || current_schema() || ':' || $1))",
                    approval.requested_by,
                )
            rows = await tx.fetch(
                "SELECT count(*) AS n FROM approvals"
                f" WHERE requested_by = $1 AND status = '{_PENDING}' AND expires_at > $2",
                approval.requested_by,
                self._ts(now),
            )
            if int(rows[0]["n"]) >= max_pending:
                return False
            await tx.execute(
                f"INSERT INTO approvals ({', '.join(table.columns)}) VALUES ({marks})",
                *table.encode(approval, self.dialect),
            )
        return True
