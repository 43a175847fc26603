"""Approved calls run under a lease, and one-time confirm tokens, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

An approved call waits (``status = 'approved'``, no ``lease_owner``) until a
service claims it; the claim is one conditional ``UPDATE``, with ``FOR
UPDATE SKIP LOCKED`` on PostgreSQL so that instances claiming at once take
different calls, and so one instance runs each. Its owner renews the lease
while the call runs and finishes it only while it holds it. A lease that
lapses (its instance died) fails the call: it is never run again unasked,
because whether the upstream acted cannot be known. An admin's retry puts
a failed call back to ``approved``, once (the move is conditional too).

A confirm token is taken by deleting its row (``DELETE … RETURNING``): of
any number of calls presenting it at once, on any instances, one gets it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agentws.domain.models import Approval, ConfirmToken
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = ["ApprovalRunQueries", "ApprovalRunStore"]


class ApprovalRunStore(Protocol):
    """Approved calls run under a lease, and confirm tokens."""

    async def claim_approvals(
        self, *, owner: str, lease_expires_at: datetime, limit: int
    ) -> list[Approval]:
        """Claim up to ``limit`` approved calls no service has taken, oldest first, to run.

        Each is leased to ``owner`` until ``lease_expires_at`` (its
        ``attempts`` counts one more); concurrent claimers, on any instance,
        never get the same call.
        """
        ...

    async def renew_approval_lease(
        self, approval_id: str, *, owner: str, lease_expires_at: datetime
    ) -> bool:
        """Extend ``owner``'s lease on a call it runs; False if it no longer holds it."""
        ...

    async def lapse_approval_leases(self, *, now: datetime, error: str) -> list[Approval]:
        """Fail the running calls whose lease ran out by ``now`` (their instance stopped)
        with ``error``; the ones this call failed."""
        ...

    async def retry_approval(self, approval_id: str) -> Approval | None:
        """Put a failed call back to approved (outcome cleared, to be claimed again);
        None if it is not failed (of concurrent retries, one wins)."""
        ...

    async def issue_confirm_token(self, token: ConfirmToken, *, keep: int) -> None:
        """Keep a confirm token; its bearer token's oldest beyond ``keep`` and every
        expired one are forgotten."""
        ...

    async def take_confirm_token(self, token_hash: str, token_id: str) -> ConfirmToken | None:
        """Take (delete) the confirm token with this hash given to ``token_id``; None if
        there is none (never given, given to another token, or taken already)."""
        ...


class ApprovalRunQueries(Queries):
    """Approval runs and confirm tokens; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def claim_approvals(
        self, *, owner: str, lease_expires_at: datetime, limit: int
    ) -> list[Approval]:
        if limit < 1:
            return []
        # Asked every poll: a read first, so that nothing waiting costs no write.
        if not await self._db.fetch(
            "SELECT 1 FROM approvals WHERE status = 'approved' AND lease_owner IS NULL LIMIT 1"
        ):
            return []
        table = table_for(Approval)
        candidates = (
            "SELECT id FROM approvals WHERE status = 'approved' AND lease_owner IS NULL"
            " ORDER BY created_at, id LIMIT $3"
        )
        if self.dialect == "postgres":
            # Locked rows are skipped, so concurrent claimers take different calls; the
            # ARRAY makes PostgreSQL run the subquery once (an IN list may be run again
            # per row, and then take more than the limit).
            chosen = f"id = ANY(ARRAY({candidates} FOR UPDATE SKIP LOCKED))"
        else:
            chosen = f"id IN ({candidates})"  # SQLite: one writer at a time anyway
        # Durable: a claim lost in a crash after the call ran would let it run again.
        async with self._db.transaction() as tx:
            rows = await tx.fetch(
                "UPDATE approvals SET lease_owner = $1, lease_expires_at = $2,"
                f" attempts = attempts + 1 WHERE {chosen}"
                " AND status = 'approved' AND lease_owner IS NULL"
                f" RETURNING {', '.join(table.columns)}",
                owner,
                self._ts(lease_expires_at),
                limit,
            )
        claimed = [table.decode(row, self.dialect) for row in rows]
        return sorted(claimed, key=lambda a: (a.created_at, a.id))

    async def renew_approval_lease(
        self, approval_id: str, *, owner: str, lease_expires_at: datetime
    ) -> bool:
        async with self._db.transaction(durable=False) as tx:
            changed = await tx.execute(
                "UPDATE approvals SET lease_expires_at = $3"
                " WHERE id = $1 AND status = 'approved' AND lease_owner = $2",
                approval_id,
                owner,
                self._ts(lease_expires_at),
            )
        return bool(changed)

    async def lapse_approval_leases(self, *, now: datetime, error: str) -> list[Approval]:
        table = table_for(Approval)
        lapsed = "status = 'approved' AND lease_owner IS NOT NULL AND lease_expires_at <= $1"
        if not await self._db.fetch(
            f"SELECT 1 FROM approvals WHERE {lapsed} LIMIT 1", self._ts(now)
        ):
            return []
        async with self._db.transaction() as tx:
            rows = await tx.fetch(
                "UPDATE approvals SET status = 'failed', error = $2, finished_at = $1,"
                f" lease_expires_at = NULL WHERE {lapsed}"
                f" RETURNING {', '.join(table.columns)}",
                self._ts(now),
                error,
            )
        found = [table.decode(row, self.dialect) for row in rows]
        return sorted(found, key=lambda a: (a.created_at, a.id))

    async def retry_approval(self, approval_id: str) -> Approval | None:
        table = table_for(Approval)
        async with self._db.transaction() as tx:
            rows = await tx.fetch(
                "UPDATE approvals SET status = 'approved', result = NULL, error = NULL,"
                " finished_at = NULL, lease_owner = NULL, lease_expires_at = NULL,"
                " reported_at = NULL"
                " WHERE id = $1 AND status = 'failed'"
                f" RETURNING {', '.join(table.columns)}",
                approval_id,
            )
        return table.decode(rows[0], self.dialect) if rows else None

    async def issue_confirm_token(self, token: ConfirmToken, *, keep: int) -> None:
        table = table_for(ConfirmToken)
        now = table.encode_value("created_at", token.created_at, self.dialect)
        marks = ", ".join(f"${i}" for i in range(1, len(table.columns) + 1))
        async with self._db.transaction() as tx:
            # Expired tokens go whenever one is given: the table holds live ones only.
            await tx.execute("DELETE FROM confirm_tokens WHERE expires_at <= $1", now)
            # A bearer token holds ``keep`` at most: asking for more forgets the oldest.
            await tx.execute(
                "DELETE FROM confirm_tokens WHERE id IN (SELECT id FROM confirm_tokens"
                " WHERE token_id = $1 ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET $2)"
                if self.dialect == "sqlite"
                else "DELETE FROM confirm_tokens WHERE id IN (SELECT id FROM confirm_tokens"
                " WHERE token_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2)",
                token.token_id,
                max(0, keep - 1),
            )
            await tx.execute(
                f"INSERT INTO confirm_tokens ({', '.join(table.columns)}) VALUES ({marks})",
                *table.encode(token, self.dialect),
            )

    async def take_confirm_token(self, token_hash: str, token_id: str) -> ConfirmToken | None:
        table = table_for(ConfirmToken)
        async with self._db.transaction() as tx:
            rows = await tx.fetch(
                "DELETE FROM confirm_tokens WHERE id = $1 AND token_id = $2"
                f" RETURNING {', '.join(table.columns)}",
                token_hash,
                token_id,
            )
        return table.decode(rows[0], self.dialect) if rows else None
