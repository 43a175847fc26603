"""Approvals decided, finished, expired and reported back, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

Each change of state is one conditional ``UPDATE`` (``WHERE status = …``), so
of two instances deciding, expiring or finishing the same approval at once,
one changes it and the other learns it lost (``None``, or the approval left
out). A finished approval that came from a webhook event is reported back to
its chat once: the report is taken by setting ``reported_at``, and given back
if posting it failed.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar, Unpack

from agentws.domain.models import Approval, ApprovalOutcome, ApprovalOutcomes, ApprovalStatus
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = [
    "ApprovalDecision",
    "ApprovalDecisionQueries",
    "ApprovalDecisionStore",
    "ApprovalEnding",
]

R = TypeVar("R")

# Ids per IN list: far below either database's limit on parameters.
_IDS_PER_STATEMENT = 200
# An approval whose outcome is settled at $1: finished, or pending past its time.
_SETTLED = (
    "(status IN ('executed', 'failed', 'denied', 'expired')"
    " OR (status = 'pending' AND expires_at <= $1))"
)
# What a caller is told of a settled approval (agentws.tools.approval_queue.outcome_data),
# and whom: never the arguments.
_OUTCOME_COLUMNS = (
    "id",
    "group_id",
    "token_id",
    "tool_name",
    "status",
    "created_at",
    "expires_at",
    "decided_at",
    "reason",
    "error",
    "lease_owner",
)


class ApprovalDecision(TypedDict):
    """A person's decision on a pending approval (:meth:`ApprovalDecisionStore.decide_approval`)."""

    status: ApprovalStatus
    decided_by: str
    reason: str | None
    now: datetime


class ApprovalEnding(TypedDict):
    """The outcome of an approved call ``owner`` ran
    (:meth:`ApprovalDecisionStore.finish_approval`)."""

    owner: str
    status: ApprovalStatus
    result: dict[str, Any] | None
    error: str | None
    now: datetime


class ApprovalDecisionStore(Protocol):
    """Approvals decided, finished, expired and reported back."""

    async def decide_approval(
        self, approval_id: str, **decision: Unpack[ApprovalDecision]
    ) -> Approval | None:
        """Move a pending, unexpired approval to ``status`` (approved or denied).

        One statement decides it, so of concurrent deciders exactly one gets
        the approval back; the others get None (it was decided, or expired).
        """
        ...

    async def finish_approval(
        self, approval_id: str, **ending: Unpack[ApprovalEnding]
    ) -> Approval | None:
        """Record the outcome of an approved call (executed or failed) that ``owner`` runs;
        None if it does not (it is not approved, or another holds its lease)."""
        ...

    async def approvals(self, ids: list[str]) -> list[Approval]:
        """The approvals with these ids (those that exist), in no particular order."""
        ...

    async def approval_outcomes(self, ids: list[str], *, now: datetime) -> ApprovalOutcomes:
        """Which of these approvals exist, and the outcomes of those settled at ``now``.

        Settled: denied, executed, failed, expired, or pending past its time.
        Only what a caller is told is read, never the arguments: a session
        waiting on its token's queued calls asks four times a second.
        """
        ...

    async def expire_approvals(self, now: datetime) -> list[Approval]:
        """Mark pending approvals whose time is up as expired; the ones this call expired."""
        ...

    async def unreported_approvals(self, *, limit: int) -> list[Approval]:
        """Finished approvals queued by a webhook's run whose outcome the channel has not had."""
        ...

    async def take_approval_report(self, approval_id: str, now: datetime) -> bool:
        """Claim the report of an approval's outcome; False if another took it first."""
        ...

    async def release_approval_report(self, approval_id: str) -> None:
        """Give a claimed report back (it could not be posted): it is taken again later."""
        ...


class ApprovalDecisionQueries(Queries):
    """Approval decisions, outcomes, expiry and reports; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    if TYPE_CHECKING:
        # The store's own lookup (SqlStore.get), declared for the type checker only.
        async def get(self, kind: type[R], record_id: str, /) -> R: ...

    async def decide_approval(
        self, approval_id: str, **decision: Unpack[ApprovalDecision]
    ) -> Approval | None:
        return await self._change(
            "UPDATE approvals SET status = $2, decided_by = $3, reason = $4, decided_at = $5,"
            " finished_at = CASE WHEN $2 = 'approved' THEN NULL ELSE $5 END"
            " WHERE id = $1 AND status = 'pending' AND expires_at > $5",
            approval_id,
            decision["status"].value,
            decision["decided_by"],
            decision["reason"],
            table_for(Approval).encode_value("decided_at", decision["now"], self.dialect),
        )

    async def _change(self, sql: str, approval_id: str, *args: Any) -> Approval | None:
        """Run one conditional ``UPDATE`` of an approval (``$1``: its id) in a transaction
        of its own: the approval as changed, or None if it was not (another changed it
        first, or it is not in the state the statement wants)."""
        async with self._db.transaction() as tx:
            changed = await tx.execute(sql, approval_id, *args)
        return await self.get(Approval, approval_id) if changed else None

    async def finish_approval(
        self, approval_id: str, **ending: Unpack[ApprovalEnding]
    ) -> Approval | None:
        table = table_for(Approval)
        return await self._change(
            "UPDATE approvals SET status = $2, result = $3, error = $4, finished_at = $5,"
            " lease_expires_at = NULL"
            " WHERE id = $1 AND status = 'approved' AND lease_owner = $6",
            approval_id,
            ending["status"].value,
            table.encode_value("result", ending["result"], self.dialect),
            ending["error"],
            table.encode_value("finished_at", ending["now"], self.dialect),
            ending["owner"],
        )

    async def approvals(self, ids: list[str]) -> list[Approval]:
        table = table_for(Approval)
        found: list[Approval] = []
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            chunk = ids[start : start + _IDS_PER_STATEMENT]
            marks = ", ".join(f"${i}" for i in range(1, len(chunk) + 1))
            rows = await self._db.fetch(
                f"SELECT {', '.join(table.columns)} FROM approvals WHERE id IN ({marks})", *chunk
            )
            found += [table.decode(row, self.dialect) for row in rows]
        return found

    async def approval_outcomes(self, ids: list[str], *, now: datetime) -> ApprovalOutcomes:
        table = table_for(Approval)
        dialect = self.dialect
        when = table.encode_value("expires_at", now, dialect)
        known: set[str] = set()
        finished: list[ApprovalOutcome] = []
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            chunk = ids[start : start + _IDS_PER_STATEMENT]
            marks = ", ".join(f"${i}" for i in range(2, len(chunk) + 2))
            # Every id, and the outcome only of the settled (what current_status
            # counts as settled): never the arguments.
            rows = await self._db.fetch(
                f"SELECT id, {_SETTLED} AS settled,"
                f" CASE WHEN {_SETTLED} THEN result END AS settled_result,"
                f" {', '.join(_OUTCOME_COLUMNS)}"
                f" FROM approvals WHERE id IN ({marks})",
                when,
                *chunk,
            )
            for row in rows:
                known.add(row["id"])
                if not row["settled"]:
                    continue
                values = {
                    column: table.decode_value(column, row[column], dialect)
                    for column in _OUTCOME_COLUMNS
                }
                values["result"] = table.decode_value("result", row["settled_result"], dialect)
                finished.append(ApprovalOutcome(**values))
        finished.sort(key=lambda outcome: (outcome.created_at, outcome.id))
        return ApprovalOutcomes(frozenset(known), tuple(finished))

    async def unreported_approvals(self, *, limit: int) -> list[Approval]:
        table = table_for(Approval)
        rows = await self._db.fetch(
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
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM approvals"
            " WHERE status = 'pending' AND expires_at <= $1 ORDER BY created_at, id",
            when,
        )
        expired: list[Approval] = []
        for row in rows:
            approval = await self._change(
                "UPDATE approvals SET status = 'expired', finished_at = $2"
                " WHERE id = $1 AND status = 'pending'",
                row["id"],
                when,
            )
            if approval is not None:
                expired.append(approval)
        return expired
