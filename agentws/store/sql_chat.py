"""The local chat channels, in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

A message posted for a webhook event is stored once per event (a unique
``event_id``): posting again returns the message already there. Messages are
committed without a flush to disk, like the queue's bookkeeping.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentws.domain.models import ChatMessage
from agentws.store.queries import Queries
from agentws.store.tables import table_for

__all__ = ["ChatQueries", "ChatStore"]


class ChatStore(Protocol):
    """The local chat channels."""

    async def post_chat_message(self, message: ChatMessage) -> ChatMessage:
        """Store a message; the one already stored for its event, if there is one.

        Committed without a flush to disk, like the queue's bookkeeping: a
        power loss takes it back only together with the event's ``done``.
        """
        ...

    async def channel_messages(
        self, workspace_id: str, channel: str, *, limit: int, after: ChatMessage | None = None
    ) -> list[ChatMessage]:
        """A channel's messages, oldest first: the newest ``limit``, or those after ``after``."""
        ...


class ChatQueries(Queries):
    """Channel messages; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def post_chat_message(self, message: ChatMessage) -> ChatMessage:
        table = table_for(ChatMessage)
        marks = ", ".join(f"${i}" for i in range(1, len(table.columns) + 1))
        (inserted,) = await self._db.execute_batch(
            [
                (
                    f"INSERT INTO chat_messages ({', '.join(table.columns)}) VALUES ({marks})"
                    " ON CONFLICT (event_id) DO NOTHING",
                    tuple(table.encode(message, self.dialect)),
                )
            ],
            durable=False,
        )
        if inserted or message.event_id is None:
            return message
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM chat_messages WHERE event_id = $1",
            message.event_id,
        )
        posted: ChatMessage = table.decode(rows[0], self.dialect)
        return posted

    async def channel_messages(
        self,
        workspace_id: str,
        channel: str,
        *,
        limit: int,
        after: ChatMessage | None = None,
    ) -> list[ChatMessage]:
        table = table_for(ChatMessage)
        columns = ", ".join(table.columns)
        args: list[Any] = [workspace_id, channel]
        if after is None:
            sql = (
                f"SELECT {columns} FROM chat_messages WHERE workspace_id = $1 AND channel = $2"
                f" ORDER BY created_at DESC, id DESC LIMIT {max(1, int(limit))}"
            )
        else:
            args += [self._ts(after.created_at), after.id]
            sql = (
                f"SELECT {columns} FROM chat_messages WHERE workspace_id = $1 AND channel = $2"
                " AND (created_at > $3 OR (created_at = $3 AND id > $4))"
                f" ORDER BY created_at, id LIMIT {max(1, int(limit))}"
            )
        rows = await self._db.fetch(sql, *args)
        messages: list[ChatMessage] = [table.decode(row, self.dialect) for row in rows]
        return messages if after is not None else messages[::-1]
