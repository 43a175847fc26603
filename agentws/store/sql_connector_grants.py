"""Connectors' grants upstream and the authorizations under way, in SQL (part of
:class:`~agentws.store.sql.SqlStore`).

What several instances must do once is one conditional statement each:

- **refreshing a grant's tokens**: an instance takes the grant's lease
  (``lease_holder`` until ``lease_until``) only if nobody holds it, so two
  instances never both spend a rotating refresh token; one that dies while
  refreshing leaves a lease that runs out;
- **saving what a refresh brought**: only the lease's holder, and only over
  the version it read, so a slower instance cannot put back older tokens;
- **losing a grant**: only a connected one turns *needs authorization*, so
  the loss is told (and alerted) once, whichever instances saw it;
- **answering an authorization**: the callback writes the code into the row
  of its ``state`` only while the row is unanswered and unexpired, so a
  ``state`` is used once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from agentws.domain.models import ConnectorAuthorization, ConnectorGrant
from agentws.store.queries import Queries
from agentws.store.tables import Dialect, table_for

__all__ = ["GrantQueries", "GrantStore"]


def _ts(value: datetime | None, dialect: Dialect) -> Any:
    return table_for(ConnectorGrant).encode_value("updated_at", value, dialect)


class GrantStore(Protocol):
    """Connectors' grants upstream, and the authorizations admins started."""

    async def take_grant_lease(
        self, grant_id: str, *, holder: str, now: datetime, until: datetime
    ) -> bool:
        """Whether ``holder`` now holds the grant's refresh lease (until ``until``):
        nobody else held it, or their lease ran out by ``now``."""
        ...

    async def release_grant_lease(self, grant_id: str, *, holder: str) -> None:
        """Give the grant's refresh lease back, if ``holder`` holds it."""
        ...

    async def save_refreshed_grant(self, grant: ConnectorGrant, *, holder: str) -> bool:
        """Store ``grant`` (its version one past the stored one) and release the lease,
        if ``holder`` holds it and nobody changed the grant meanwhile."""
        ...

    async def lose_grant(
        self, grant_id: str, *, reason: str, now: datetime, wanted_scope: str | None = None
    ) -> bool:
        """Mark a connected grant *needs authorization* for ``reason``, its tokens
        deleted; whether this call did (False: it was lost already, by anyone)."""
        ...

    async def answer_authorization(
        self,
        state_hash: str,
        *,
        now: datetime,
        code: bytes | None,
        iss: str | None,
        error: str | None,
    ) -> ConnectorAuthorization | None:
        """Record the upstream's answer to the authorization of ``state_hash``; the row
        answered, or None if there is none pending and unexpired (a ``state`` used twice)."""
        ...


class GrantQueries(Queries):
    """Grant leases and authorization answers; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def take_grant_lease(
        self, grant_id: str, *, holder: str, now: datetime, until: datetime
    ) -> bool:
        (taken,) = await self._db.execute_batch(
            [
                (
                    "UPDATE connector_grants SET lease_holder = $2, lease_until = $3"
                    " WHERE id = $1 AND (lease_until IS NULL OR lease_until <= $4"
                    " OR lease_holder = $2)",
                    (grant_id, holder, _ts(until, self.dialect), _ts(now, self.dialect)),
                )
            ]
        )
        return bool(taken)

    async def release_grant_lease(self, grant_id: str, *, holder: str) -> None:
        await self._db.execute_batch(
            [
                (
                    "UPDATE connector_grants SET lease_holder = NULL, lease_until = NULL"
                    " WHERE id = $1 AND lease_holder = $2",
                    (grant_id, holder),
                )
            ]
        )

    async def save_refreshed_grant(self, grant: ConnectorGrant, *, holder: str) -> bool:
        table = table_for(ConnectorGrant)
        values = dict(zip(table.columns, table.encode(grant, self.dialect), strict=True))
        changed = [c for c in table.columns if c not in ("id", "lease_holder", "lease_until")]
        assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(changed, start=3))
        (saved,) = await self._db.execute_batch(
            [
                (
                    f"UPDATE connector_grants SET {assignments},"
                    " lease_holder = NULL, lease_until = NULL"
                    f" WHERE id = $1 AND lease_holder = $2 AND version = ${len(changed) + 3}",
                    (
                        grant.id,
                        holder,
                        *(values[c] for c in changed),
                        grant.version - 1,
                    ),
                )
            ]
        )
        return bool(saved)

    async def lose_grant(
        self, grant_id: str, *, reason: str, now: datetime, wanted_scope: str | None = None
    ) -> bool:
        (lost,) = await self._db.execute_batch(
            [
                (
                    "UPDATE connector_grants SET state = 'needs_authorization', reason = $2,"
                    " tokens = NULL, expires_at = NULL, lease_holder = NULL,"
                    " lease_until = NULL, version = version + 1, updated_at = $3,"
                    " wanted_scope = COALESCE($4, wanted_scope)"
                    " WHERE id = $1 AND state = 'connected'",
                    (grant_id, reason, _ts(now, self.dialect), wanted_scope),
                )
            ]
        )
        return bool(lost)

    async def answer_authorization(
        self,
        state_hash: str,
        *,
        now: datetime,
        code: bytes | None,
        iss: str | None,
        error: str | None,
    ) -> ConnectorAuthorization | None:
        table = table_for(ConnectorAuthorization)
        (answered,) = await self._db.execute_batch(
            [
                (
                    "UPDATE connector_authorizations SET code = $2, iss = $3, error = $4"
                    " WHERE state_hash = $1 AND code IS NULL AND error IS NULL"
                    " AND expires_at > $5",
                    (
                        state_hash,
                        table.encode_value("code", code, self.dialect),
                        iss,
                        error,
                        table.encode_value("expires_at", now, self.dialect),
                    ),
                )
            ]
        )
        if not answered:
            return None
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM connector_authorizations"
            " WHERE state_hash = $1",
            state_hash,
        )
        found: ConnectorAuthorization = table.decode(rows[0], self.dialect)
        return found
