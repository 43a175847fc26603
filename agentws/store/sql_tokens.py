"""MCP tokens by hash, their use and their revocation, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from agentws.domain.models import McpToken
from agentws.domain.rules import utcnow
from agentws.store.sql_records import RecordQueries
from agentws.store.tables import table_for

__all__ = ["TokenQueries", "TokenStore"]

# Ids per `IN (...)` lookup: far below either database's limit on parameters.
_IDS_PER_QUERY = 500


class TokenStore(Protocol):
    """MCP tokens: looked up by hash, used, revoked."""

    async def token_by_hash(self, token_hash: str) -> McpToken | None:
        """The token with this SHA-256, revoked or not; None if there is none."""
        ...

    async def revoke_token(self, token_id: str) -> McpToken:
        """Mark a token revoked (now); revoking twice keeps the first time."""
        ...

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        """Those of ``token_ids`` that exist and are not revoked (open sessions' tokens)."""
        ...

    async def touch_token(self, token_id: str) -> None:
        """Record that a token was just used."""
        ...


class TokenQueries(RecordQueries):
    """Token lookups; mixed into :class:`~agentws.store.sql.SqlStore`."""

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
