"""OAuth clients, grants and refresh tokens in SQL (part of :class:`~agentws.store.sql.SqlStore`).

The steps of the flow that must happen once are single statements guarded
by the row's state, so two instances (or two requests) racing for the same
code or refresh token see one winner: deciding a pending request, taking
an approved code, spending a refresh token. What a loser finds tells a
replay from a mistake: a code already used, or a refresh token already
spent, revokes everything its consent issued (OAuth 2.1 §4.1.3 and §4.3.1).

The cap on clients that register themselves is counted and kept in one
transaction that holds off every other registration meanwhile (an advisory
lock on PostgreSQL, the write lock on SQLite): a count followed by an
insert in another transaction let 26 registrations through a cap of 5.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, TypeVar, Unpack

from agentws.core.errors import ConflictError
from agentws.domain.models import (
    Capability,
    GrantStatus,
    McpToken,
    OAuthClient,
    OAuthGrant,
    OAuthRefreshToken,
)
from agentws.store.queries import Queries
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from agentws.store.database import Transaction

__all__ = ["GrantDecision", "OAuthQueries", "OAuthStore"]

# What a token was issued under: its consent or its client (the columns'
# names, never a caller's words).
_IssuedBy = Literal["family_id", "client_id"]
# Where a code's or a refresh token's hash is kept (a column's name, never a caller's words).
_HashColumn = Literal["code_hash", "token_hash"]
# A row used once: an authorization request's code, or a refresh token.
_Used = TypeVar("_Used", OAuthGrant, OAuthRefreshToken)


class GrantDecision(TypedDict):
    """A person's answer to an authorization request (:meth:`OAuthStore.decide_oauth_grant`)."""

    approve: bool
    # The scope granted, and the hash of the code an approval issues (None on a denial).
    scope: Capability
    code_hash: str | None
    decided_by: str
    expires_at: datetime


class OAuthStore(Protocol):
    """OAuth clients, grants, codes and refresh tokens."""

    async def insert_oauth_client_within(self, client: OAuthClient, *, limit: int) -> bool:
        """Insert ``client`` unless ``limit`` clients of its kind exist already; whether it was.

        Counted and inserted at once: registrations racing on any instance
        never pass the limit together.
        """
        ...

    async def decide_oauth_grant(self, grant_id: str, **decision: Unpack[GrantDecision]) -> bool:
        """Approve (with its code's hash and the scope granted) or deny a pending
        authorization request; False if it was not pending (decided already)."""
        ...

    async def take_oauth_code(
        self, code_hash: str, family_id: str, now: datetime
    ) -> tuple[OAuthGrant | None, bool]:
        """Take an approved, unexpired code once (its grant becomes used, of
        ``family_id``). Returns the grant, or None; and whether the code had been
        used before, in which case everything its first use issued is revoked."""
        ...

    async def spend_refresh_token(
        self, token_hash: str, now: datetime
    ) -> tuple[OAuthRefreshToken | None, bool]:
        """Spend a live refresh token once. Returns it, or None; and whether it had
        been spent before, in which case its whole family is revoked."""
        ...

    async def revoke_oauth_family(self, family_id: str, now: datetime) -> int:
        """Revoke the refresh tokens and access tokens of one consent; how many
        access tokens were live."""
        ...

    async def revoke_oauth_client(self, client_id: str, now: datetime) -> int:
        """Revoke every token of an OAuth client and forget its pending requests;
        how many access tokens were live."""
        ...

    async def forget_expired_oauth(self, before: datetime) -> int:
        """Delete authorization requests, codes and refresh tokens that expired
        before ``before``; how many."""
        ...


class OAuthQueries(Queries):
    """Authorization requests, codes and refresh tokens; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    async def insert_oauth_client_within(self, client: OAuthClient, *, limit: int) -> bool:
        table = table_for(OAuthClient)
        given = [
            (column, value)
            for column, value in zip(table.columns, table.encode(client, self.dialect), strict=True)
            if value is not None
        ]
        marks = ", ".join(f"${i}" for i in range(1, len(given) + 1))
        try:
            async with self._db.transaction() as tx:
                if self.dialect == "postgres":
                    # One registration at a time per schema, so the count below stays true
                    # until the insert commits. SQLite's write transactions are one at a time.
                    await tx.fetch(
                        "SELECT pg_advisory_xact_lock("
                        "hashtext('agentws:oauth_clients:' || current_schema()))"
                    )
                rows = await tx.fetch(
                    "SELECT count(*) AS n FROM oauth_clients WHERE kind = $1", client.kind.value
                )
                if int(rows[0]["n"]) >= limit:
                    return False
                await tx.execute(
                    f"INSERT INTO oauth_clients ({', '.join(c for c, _ in given)})"
                    f" VALUES ({marks})",
                    *(value for _, value in given),
                )
        except ConflictError:
            raise ConflictError(f"{table.describe(client)} already exists") from None
        return True

    async def decide_oauth_grant(self, grant_id: str, **decision: Unpack[GrantDecision]) -> bool:
        status = GrantStatus.APPROVED if decision["approve"] else GrantStatus.DENIED
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE oauth_grants SET status = $2, scope = $3, code_hash = $4,"
                " decided_by = $5, expires_at = $6 WHERE id = $1 AND status = $7",
                grant_id,
                status.value,
                decision["scope"].value,
                decision["code_hash"],
                decision["decided_by"],
                self._ts(decision["expires_at"]),
                GrantStatus.PENDING.value,
            )
        return changed == 1

    async def take_oauth_code(
        self, code_hash: str, family_id: str, now: datetime
    ) -> tuple[OAuthGrant | None, bool]:
        return await self._use_once(
            OAuthGrant,
            "UPDATE oauth_grants SET status = $2, family_id = $3"
            " WHERE code_hash = $1 AND status = $4 AND expires_at > $5",
            (GrantStatus.USED.value, family_id, GrantStatus.APPROVED.value),
            by=("code_hash", code_hash),
            now=now,
            # Used before: everything its first use issued goes.
            replayed=lambda grant: grant.family_id if grant.status is GrantStatus.USED else None,
        )

    async def spend_refresh_token(
        self, token_hash: str, now: datetime
    ) -> tuple[OAuthRefreshToken | None, bool]:
        return await self._use_once(
            OAuthRefreshToken,
            "UPDATE oauth_refresh_tokens SET spent_at = $2 WHERE token_hash = $1"
            " AND spent_at IS NULL AND revoked_at IS NULL AND expires_at > $2",
            (),
            by=("token_hash", token_hash),
            now=now,
            # Spent before, and not revoked since: its whole family goes.
            replayed=lambda token: (
                token.family_id if token.spent_at is not None and token.revoked_at is None else None
            ),
        )

    async def _use_once(
        self,
        record: type[_Used],
        update: str,
        args: tuple[object, ...],
        *,
        by: tuple[_HashColumn, str],
        now: datetime,
        replayed: Callable[[_Used], str | None],
    ) -> tuple[_Used | None, bool]:
        """Use a code or a refresh token once: ``update`` changes its row only if it may
        be used now (``$1``: its hash, found in the column ``by`` names; then ``args``,
        then ``now``).

        Returns the row as used, and False; or, if it had been used before (``replayed``
        names the consent whose tokens must then go), None and True, with everything
        that consent issued revoked; otherwise (unknown, expired, revoked) None and False.
        """
        table = table_for(record)
        column, value = by
        async with self._db.transaction() as tx:
            used = await tx.execute(update, value, *args, self._ts(now))
            rows = await tx.fetch(f"SELECT * FROM {table.name} WHERE {column} = $1", value)
            found: _Used | None = table.decode(rows[0], self.dialect) if rows else None
            if used == 1 or found is None:
                return found, False
            family_id = replayed(found)
            if family_id is not None:
                await self._revoke_tokens(tx, "family_id", family_id, now)
                return None, True
        return None, False

    async def revoke_oauth_family(self, family_id: str, now: datetime) -> int:
        async with self._db.transaction() as tx:
            return await self._revoke_tokens(tx, "family_id", family_id, now)

    async def _revoke_tokens(
        self, tx: Transaction, by: _IssuedBy, value: str, now: datetime
    ) -> int:
        """Revoke the live refresh and access tokens of one consent (``family_id``) or one
        client (``client_id``); how many access tokens were live."""
        await tx.execute(
            f"UPDATE oauth_refresh_tokens SET revoked_at = $2"
            f" WHERE {by} = $1 AND revoked_at IS NULL",
            value,
            self._ts(now),
        )
        return await tx.execute(
            f"UPDATE mcp_tokens SET revoked_at = $2 WHERE oauth_{by} = $1 AND revoked_at IS NULL",
            value,
            table_for(McpToken).encode_value("revoked_at", now, self.dialect),
        )

    async def revoke_oauth_client(self, client_id: str, now: datetime) -> int:
        async with self._db.transaction() as tx:
            await tx.execute("DELETE FROM oauth_grants WHERE client_id = $1", client_id)
            return await self._revoke_tokens(tx, "client_id", client_id, now)

    async def forget_expired_oauth(self, before: datetime) -> int:
        async with self._db.transaction() as tx:
            grants = await tx.execute(
                "DELETE FROM oauth_grants WHERE expires_at <= $1", self._ts(before)
            )
            tokens = await tx.execute(
                "DELETE FROM oauth_refresh_tokens WHERE expires_at <= $1", self._ts(before)
            )
        return grants + tokens
