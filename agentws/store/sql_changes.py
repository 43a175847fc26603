"""Changes made by any writer, announced or counted (a part of
:class:`~agentws.store.sql.SqlStore`).

PostgreSQL announces them (``LISTEN``/``NOTIFY``); SQLite counts commits
(its data version), which readers poll.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

from agentws.store.queries import Queries

__all__ = ["ChangeQueries", "ChangeStore"]


class ChangeStore(Protocol):
    """Changes made by any writer: counted, or announced."""

    def data_version(self) -> int | None:
        """Changes whenever anyone commits; None when unknown (then assume a change)."""
        ...

    @property
    def notifies(self) -> bool:
        """Whether :meth:`listen_for_changes` works here (PostgreSQL: yes; SQLite: no)."""
        ...

    async def listen_for_changes(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``on_change(topic)`` for each change announced by any writer.

        Topics: ``tokens`` (a token revoked or deleted), ``approvals`` (one
        decided, run, expired or deleted), ``catalog`` (the catalog version
        moved). Reports started once listening; runs until the connection
        is lost, which raises :class:`~agentws.core.errors.StoreUnavailableError`
        (changes made meanwhile are not announced: callers re-read).
        """
        ...


class ChangeQueries(Queries):
    """The change feed; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def data_version(self) -> int | None:
        return self._db.data_version()

    @property
    def notifies(self) -> bool:
        return self._db.notifies

    async def listen_for_changes(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self._db.listen(on_change, task_status=task_status)
