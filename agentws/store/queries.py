"""What every part of :class:`~agentws.store.sql.SqlStore` stands on: its database.

Each ``sql_<area>`` module mixes one area's queries into the store; they all
read the same :class:`~agentws.store.database.Database` and write SQL for
its dialect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentws.store.tables import encode_datetime

if TYPE_CHECKING:
    from datetime import datetime

    from agentws.store.database import Database, Row
    from agentws.store.tables import Dialect

__all__ = ["Queries"]


class Queries:
    """The database an area's queries run on; a base of every ``*Queries`` mixin."""

    _db: Database

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    async def _fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self._db.fetch(sql, *args)

    def _ts(self, value: datetime) -> Any:
        """``value`` as a timestamp column of this dialect holds it (every one alike)."""
        return encode_datetime(value, self.dialect)
