"""SinkRouter: the sink a channel reference's messages go to."""

from __future__ import annotations

from typing import Protocol

import attrs

from agentws.chat.channels import ChannelRef
from agentws.chat.incoming_webhook import IncomingWebhookSink
from agentws.chat.sinks import ChatSink, KeyRing, LocalSink
from agentws.chat.slack import SlackSink
from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_chat import ChatStore
from agentws.store.sql_records import RecordStore

__all__ = ["SinkRouter"]


class _Store(RecordStore, ChatStore, Protocol):
    """The areas of the store this module uses."""


@attrs.define(eq=False)
class SinkRouter:
    """``router(channel)``: the sink for ``channel`` (one of each kind, shared)."""

    store: _Store
    settings: Settings
    keys: Keys
    resolve: Resolver = system_resolver
    _sinks: dict[str, ChatSink] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        keys = KeyRing(self.keys)
        self._sinks = {
            "local": LocalSink(self.store),
            "slack": SlackSink(self.store, self.settings, keys, self.resolve),
            "webhook": IncomingWebhookSink(self.store, self.settings, keys, self.resolve),
        }

    def __call__(self, channel: ChannelRef) -> ChatSink:
        return self._sinks[channel.sink]
