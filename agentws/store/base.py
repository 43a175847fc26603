"""The :class:`Store` protocol: everything the service layer asks of storage.

Records are the frozen attrs classes of :mod:`agentws.domain.models`; the
generic operations take the record type (``await store.get(Group, id)``)
and return records of that type. Operations that need more than one
statement, or a query the generic ones cannot say, are methods of their own.

Every implementation passes ``tests/contract``; both stores raise only
:mod:`agentws.errors`: :class:`~agentws.errors.NotFoundError` for a missing
record, :class:`~agentws.errors.ConflictError` for a broken uniqueness rule,
:class:`~agentws.errors.StoreUnavailableError` when the database cannot be
reached.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from agentws.domain.models import Group, McpToken, Workspace
from agentws.store.tables import Dialect

__all__ = ["R", "Store"]

R = TypeVar("R")


class Store(Protocol):
    """Durable storage for every record agentws keeps."""

    @property
    def dialect(self) -> Dialect: ...

    async def ping(self) -> None:
        """Round-trip to the database (readiness)."""
        ...

    async def insert(self, record: R) -> R:
        """Store a new record; ConflictError if it breaks a uniqueness rule."""
        ...

    async def get(self, kind: type[R], record_id: str, /) -> R:
        """The record of type ``kind`` with ``record_id``; NotFoundError if none."""
        ...

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        """The first record whose fields equal ``where``, or None."""
        ...

    async def select(
        self, kind: type[R], /, *, limit: int | None = None, offset: int = 0, **where: Any
    ) -> list[R]:
        """Records whose fields equal ``where`` (None matches NULL), oldest first."""
        ...

    async def count(self, kind: type[Any], /, **where: Any) -> int:
        """How many records of ``kind`` match ``where``."""
        ...

    async def update(self, record: R) -> R:
        """Replace the stored record with the same id; NotFoundError if none."""
        ...

    async def delete(self, kind: type[Any], record_id: str, /) -> None:
        """Delete a record and what belongs to it; NotFoundError if none."""
        ...

    async def workspace_by_slug(self, slug: str) -> Workspace:
        """NotFoundError naming the slug if there is no such workspace."""
        ...

    async def group_by_slug(self, workspace_slug: str, group_slug: str) -> Group:
        """NotFoundError naming the workspace or group that does not exist."""
        ...

    async def token_by_hash(self, token_hash: str) -> McpToken | None:
        """The token with this SHA-256, revoked or not; None if there is none."""
        ...

    async def revoke_token(self, token_id: str) -> McpToken:
        """Mark a token revoked (now); revoking twice keeps the first time."""
        ...

    async def touch_token(self, token_id: str) -> None:
        """Record that a token was just used."""
        ...
