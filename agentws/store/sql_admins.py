"""Deleting an admin, never the last one, in SQL (a part of :class:`SqlStore`).

The check and the delete are one transaction that first locks every admin
row (PostgreSQL: ``FOR UPDATE``; SQLite's write transaction holds the
database's one write lock): two admins deleting each other at once cannot
both succeed and leave nobody who can sign in.
"""

from __future__ import annotations

from typing import Protocol

from agentws.core.errors import NotFoundError
from agentws.store.queries import Queries

__all__ = ["AdminQueries", "AdminStore"]


class AdminStore(Protocol):
    """Admins deleted, never the last one."""

    async def delete_admin_unless_last(self, admin_id: str) -> bool:
        """Delete the admin (its sessions and API tokens with it) unless no other is left.

        Returns:
            False, deleting nothing, when it is the only admin.

        Error handling:
            NotFoundError for an unknown id.
        """
        ...


class AdminQueries(Queries):
    """Admin deletion; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def delete_admin_unless_last(self, admin_id: str) -> bool:
        lock = " FOR UPDATE" if self._db.dialect == "postgres" else ""
        async with self._db.transaction() as tx:
            rows = await tx.fetch(f"SELECT id FROM admins ORDER BY id{lock}")
            ids = {row["id"] for row in rows}
            if admin_id not in ids:
                raise NotFoundError(f"no admin with id {admin_id!r}")
            if len(ids) == 1:
                return False
            # Sessions and admin API tokens go with it (ON DELETE CASCADE).
            await tx.execute("DELETE FROM admins WHERE id = $1", admin_id)
        return True
