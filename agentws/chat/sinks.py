"""The :class:`ChatSink` protocol and the embedded sink, :class:`LocalSink`.

A sink posts one message per event, idempotently: posting again for an event
that already has a message returns that message and posts nothing. The
local sink gets this from the store (one message per event id); sinks of
chat services get it from the recorded message (and, where the service
allows, from asking it).
"""

from __future__ import annotations

from typing import Protocol

import attrs

from agentws.chat.channels import ChannelRef
from agentws.domain.models import ChatMessage
from agentws.errors import NotFoundError
from agentws.store import Store

__all__ = ["ChatSink", "LocalSink", "OutgoingMessage", "SinkError"]


class SinkError(Exception):
    """A post failed. ``retryable``: the service was busy or unreachable, not wrong."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@attrs.frozen
class OutgoingMessage:
    workspace_id: str
    channel: ChannelRef
    text: str
    event_id: str
    thread: str | None = None


class ChatSink(Protocol):
    """Where messages of one kind of channel go."""

    async def posted(self, event_id: str) -> ChatMessage | None:
        """The message already posted for ``event_id``, if any."""
        ...

    async def post(self, message: OutgoingMessage) -> ChatMessage:
        """Post ``message``; the message already posted for its event, if there is one.

        Error handling:
            :class:`SinkError` when it could not be posted.
        """
        ...


@attrs.define(eq=False)
class LocalSink:
    """The embedded chat: messages are rows of the store, read with ``agentws channel tail``."""

    store: Store

    async def posted(self, event_id: str) -> ChatMessage | None:
        return await self.store.find(ChatMessage, event_id=event_id)

    async def post(self, message: OutgoingMessage) -> ChatMessage:
        record = ChatMessage(
            workspace_id=message.workspace_id,
            channel=str(message.channel),
            text=message.text,
            event_id=message.event_id,
            thread=message.thread,
        )
        try:
            return await self.store.post_chat_message(record)
        except NotFoundError:
            raise SinkError("the workspace no longer exists", retryable=False) from None
