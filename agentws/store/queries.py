"""What every part of :class:`~agentws.store.sql.SqlStore` stands on: its database,
and the keyset pages several areas list.

Each ``sql_<area>`` module mixes one area's queries into the store; they all
read the same :class:`~agentws.store.database.Database` and write SQL for
its dialect. Lists (queued calls, events, the audit log) are keyset pages
over ``(created_at, id)`` (see :class:`~agentws.domain.approval_lists.Cursor`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentws.domain.approval_lists import Cursor
from agentws.store.tables import encode_datetime

if TYPE_CHECKING:
    from datetime import datetime

    from agentws.store.database import Database, Row
    from agentws.store.tables import Dialect

__all__ = ["Queries", "page_cursors"]


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

    def _past_key(
        self, clauses: list[str], args: list[Any], key: Cursor, op: str, prefix: str = ""
    ) -> None:
        """Keep a keyset scan to the rows past ``key`` (``op``: ``>`` or ``<``)."""
        args += [self._ts(key.created_at), key.id]
        clauses.append(f"({prefix}created_at, {prefix}id) {op} (${len(args) - 1}, ${len(args)})")


async def page_cursors(
    first: Cursor | None,
    last: Cursor | None,
    *,
    more: bool,
    forward: bool,
    from_cursor: bool,
    beyond: Callable[[Cursor, bool], Awaitable[bool]],
) -> tuple[str | None, str | None]:
    """A page's cursors: onward from its ``last`` row, and back from its ``first``.

    ``more``: the scan that read the page (onward when ``forward``) found a row
    past it; whether there are rows the other way is asked of ``beyond(key,
    onward)``. A first page (not ``from_cursor``) has nothing before it.
    """
    has_next = more if forward else last is not None and await beyond(last, True)
    has_previous = (
        more if not forward else from_cursor and first is not None and await beyond(first, False)
    )
    onward = Cursor(last.created_at, last.id).encode() if has_next and last else None
    back = (
        Cursor(first.created_at, first.id, forward=False).encode()
        if has_previous and first
        else None
    )
    return onward, back
