"""The event log: listing events, an event's timeline, replaying an event.

An event's timeline is everything that happened to it, in order: the
request (allow-listed headers and the body), each attempt (when, where,
how it ended, the agent's transcript and tool calls), and the message
posted. A replay is a new event with the same body and headers, queued
now, run with the prompt the original last ran with (or, with
``current_prompt``, whatever the webhook's prompt is when it runs).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import attrs

from agentws.common.audit import record
from agentws.core.errors import NotFoundError
from agentws.domain.models import ChatMessage, Event, EventAttempt, EventStatus, Webhook
from agentws.store.sql_events import EventStore
from agentws.store.sql_records import RecordStore

__all__ = ["Timeline", "event_timeline", "find_event", "list_events", "replay_event"]


class _Store(RecordStore, EventStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class Timeline:
    event: Event
    webhook: Webhook
    attempts: list[EventAttempt]
    message: ChatMessage | None

    def request_body(self) -> Any:
        """The body as JSON if it parses (it did when it was accepted), else text."""
        try:
            return json.loads(self.event.body)
        except ValueError:
            return self.event.body.decode("utf-8", "replace")


async def find_event(store: RecordStore, event_id: str) -> tuple[Event, Webhook]:
    event = await store.find(Event, id=event_id)
    if event is None:
        raise NotFoundError(f"no event {event_id!r} (see `agentws event list WORKSPACE`)")
    return event, await store.get(Webhook, event.webhook_id)


async def list_events(
    store: _Store,
    workspace_slug: str,
    *,
    webhook: Webhook | None = None,
    status: EventStatus | None = None,
    limit: int = 50,
) -> list[Event]:
    """A workspace's events, newest first."""
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.recent_events(
        workspace.id, limit=limit, webhook_id=webhook.id if webhook else None, status=status
    )


async def event_timeline(store: RecordStore, event_id: str) -> Timeline:
    event, webhook = await find_event(store, event_id)
    attempts = await store.select(EventAttempt, event_id=event.id)
    message = None
    if event.message_id is not None:
        message = await store.find(ChatMessage, id=event.message_id)
    message = message or await store.find(ChatMessage, event_id=event.id)
    return Timeline(event, webhook, attempts, message)


async def replay_event(
    store: RecordStore, event_id: str, *, current_prompt: bool, actor: str
) -> Event:
    """Queue the event again as a new event; the worker runs it like any other."""
    timeline = await event_timeline(store, event_id)
    original = timeline.event
    prompt: str | None = None
    if not current_prompt:
        ran_with = [a.transcript.get("prompt") for a in timeline.attempts]
        prompts = [p for p in ran_with if isinstance(p, str) and p]
        # The prompt it last ran with; never run: the one it would have run with.
        prompt = prompts[-1] if prompts else (original.prompt or timeline.webhook.prompt)
    replay = Event(
        webhook_id=original.webhook_id,
        body=original.body,
        headers=original.headers,
        prompt=prompt,
        replay_of=original.id,
    )
    await store.insert(replay)
    await record(
        store,
        timeline.webhook.workspace_id,
        actor,
        "event.replay",
        original.id,
        replay_id=replay.id,
        current_prompt=current_prompt,
    )
    return replay
