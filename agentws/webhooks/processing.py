"""EventProcessor: what one attempt at an event does, from the webhook to the posted message.

It takes the event's webhook as the dispatcher read it with its claim, and
finds the channel (either gone: the event fails at once, there is nothing
to retry), returns the message already posted for the
event if there is one (a run that posted and then lost its lease must not
post twice), else runs the agent and posts its answer through the channel's
sink. Failures come out as :class:`RunFailure`, saying whether a retry can
help.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import attrs

from agentws.agent.runner import AgentRunner, RunLog
from agentws.chat.channels import ChannelRef, parse_channel
from agentws.chat.connectors import check_channel
from agentws.chat.sinks import ChatSink, OutgoingMessage
from agentws.core.errors import RetryableError, StoreUnavailableError, ValidationError
from agentws.domain.models import ChatMessage, Event, Group, Webhook
from agentws.store.sql_records import RecordStore

__all__ = ["EventProcessor", "RunFailure", "thread_of"]

# Slack's message timestamps: "1700000000.000100".
_THREAD = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")


class RunFailure(RetryableError):
    """An attempt at an event failed; ``retryable`` when trying again later may succeed.

    ``retry_after_s``: not before this (a rate limit said so), if known.
    """


@attrs.define(eq=False)
class EventProcessor:
    store: RecordStore
    agent: AgentRunner
    sinks: Callable[[ChannelRef], ChatSink]

    async def process(self, event: Event, webhook: Webhook | None, log: RunLog) -> ChatMessage:
        """Run the agent for ``event`` of ``webhook`` (None: deleted) and post its message once.

        Error handling:
            :class:`RunFailure`; StoreError when the store fails (retryable).
        """
        if webhook is None:
            raise RunFailure("the webhook was deleted", retryable=False)
        try:
            channel = parse_channel(webhook.channel)
        except ValidationError as exc:
            raise RunFailure(
                f"the channel cannot be used: {exc.message}", retryable=False
            ) from None
        try:
            # Before the run: a channel that cannot be posted to must not cost a model run.
            await check_channel(self.store, webhook.workspace_id, channel)
        except ValidationError as exc:
            raise RunFailure(f"chat: {exc.message}", retryable=False) from None
        # Parsed once per attempt; the run reads the same payload.
        body_error: ValueError | None = None
        try:
            payload = json.loads(event.body)
        except ValueError as exc:  # ingest stores JSON objects only
            payload, body_error = None, exc
        sink = self.sinks(channel)
        outgoing = OutgoingMessage(
            workspace_id=webhook.workspace_id,
            channel=channel,
            text="",
            event_id=event.id,
            thread=thread_of(payload),
            since=event.received_at,
            allow_mentions=webhook.allow_mentions,
        )
        # Only an earlier attempt can have posted (and then lost its lease or its record).
        existing = await sink.posted(outgoing) if event.attempts > 1 else None
        if existing is not None:
            log.text = existing.text
            return existing
        group = None
        if webhook.group_id is not None:
            group = await self.store.find(Group, id=webhook.group_id)
        prompt = event.prompt if event.prompt is not None else webhook.prompt
        if body_error is not None:
            raise body_error
        try:
            text = await self.agent.run(
                webhook=webhook, event=event, payload=payload, prompt=prompt, group=group, log=log
            )
        except RetryableError as exc:  # the model's: ModelError
            raise RunFailure(
                f"model: {exc.message}", retryable=exc.retryable, retry_after_s=exc.retry_after_s
            ) from None
        try:
            return await sink.post(attrs.evolve(outgoing, text=text))
        except RetryableError as exc:  # the chat's: SinkError
            raise RunFailure(
                f"chat: {exc.message}", retryable=exc.retryable, retry_after_s=exc.retry_after_s
            ) from None
        except StoreUnavailableError as exc:
            raise RunFailure(f"chat: {exc.message}", retryable=True) from None


def thread_of(payload: Any) -> str | None:
    """The chat thread an event's parsed body asks to be answered in: its top-level ``thread_ts``.

    (Slack's name; a Slack event forwarded to a webhook carries it.) The
    thread is in the webhook's channel, whatever the payload says: a
    payload can choose a thread, never a channel.
    """
    thread = payload.get("thread_ts") if isinstance(payload, dict) else None
    if isinstance(thread, str) and _THREAD.fullmatch(thread):
        return thread
    return None
