"""The :class:`ChatSink` protocol and the embedded sink, :class:`LocalSink`.

A sink posts one message per event, idempotently: posting again for an event
that already has a message returns that message and posts nothing. Every
sink records what it posted as a :class:`~agentws.domain.models.ChatMessage`
(one per event id, by the store's unique key); the local sink's record *is*
the message, the others' records carry the chat service's message id. Before
a retry posts, :meth:`ChatSink.posted` looks for the record and, where the
service allows, asks the service (a post whose record was lost).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import attrs

from agentws.chat.channels import ChannelRef
from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.core.errors import ConfigError, NotFoundError, RetryableError
from agentws.domain.models import ChatMessage
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys, SecretBox
from agentws.store.sql_chat import ChatStore
from agentws.store.sql_records import RecordStore

__all__ = ["ChatSink", "ConnectorSink", "KeyRing", "LocalSink", "OutgoingMessage", "SinkError"]


class _Store(RecordStore, ChatStore, Protocol):
    """The areas of the store this module uses."""


class SinkError(RetryableError):
    """A post failed. ``retryable``: the service was busy or unreachable, not wrong.

    ``retry_after_s``: not before this (the service's rate limit said so), if known.
    """


@attrs.frozen
class OutgoingMessage:
    workspace_id: str
    channel: ChannelRef
    text: str
    #: The event it answers (None: a follow-up, such as an approval's outcome).
    event_id: str | None
    #: Reply in this thread (the chat service's id of the thread's first message).
    thread: str | None = None
    #: No message for the event can be older than this (its receipt).
    since: datetime | None = None
    #: Mass mentions (``@channel``, ``<!here>``...) may ping: the webhook allows them.
    allow_mentions: bool = False


class ChatSink(Protocol):
    """Where messages of one kind of channel go."""

    async def posted(self, message: OutgoingMessage) -> ChatMessage | None:
        """The message already posted for ``message``'s event, if any (its text is not read)."""
        ...

    async def post(self, message: OutgoingMessage) -> ChatMessage:
        """Post ``message``; the message already posted for its event, if there is one.

        Error handling:
            :class:`SinkError` when it could not be posted; StoreError when
            it was posted and cannot be recorded (a retry finds it where
            the service allows).
        """
        ...


@attrs.define(eq=False)
class KeyRing:
    """The service key (read once, when the service started), for the sinks."""

    keys: Keys

    def box(self) -> SecretBox:
        """The service key's box.

        Error handling:
            A terminal :class:`SinkError` when no key is configured.
        """
        try:
            return self.keys.box()
        except ConfigError as exc:
            raise SinkError(exc.message, retryable=False) from None


@attrs.define(eq=False)
class ConnectorSink:
    """What a sink posting through a workspace's connector holds (Slack, incoming webhooks).

    ``keys`` open the connector's secret; ``settings`` and ``resolve`` guard
    the address it posts to, as every connector's.
    """

    store: _Store
    settings: Settings
    keys: KeyRing
    resolve: Resolver = system_resolver


def record_of(message: OutgoingMessage, *, external_id: str | None = None) -> ChatMessage:
    """The store's record of ``message``, posted (with the service's id for it)."""
    return ChatMessage(
        workspace_id=message.workspace_id,
        channel=str(message.channel),
        text=message.text,
        event_id=message.event_id,
        thread=message.thread,
        external_id=external_id,
    )


async def recorded(store: RecordStore, message: OutgoingMessage) -> ChatMessage | None:
    """The record of the message posted for ``message``'s event, if there is one."""
    if message.event_id is None:
        return None
    return await store.find(ChatMessage, event_id=message.event_id)


@attrs.define(eq=False)
class LocalSink:
    """The embedded chat: messages are rows of the store, read with ``agentws channel tail``."""

    store: _Store

    async def posted(self, message: OutgoingMessage) -> ChatMessage | None:
        return await recorded(self.store, message)

    async def post(self, message: OutgoingMessage) -> ChatMessage:
        try:
            return await self.store.post_chat_message(record_of(message))
        except NotFoundError:
            raise SinkError("the workspace no longer exists", retryable=False) from None
