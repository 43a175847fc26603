"""Incoming webhooks and what they bring: events, the runs of an event, the chat messages posted."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any

import attrs

from agentws.domain.record_fields import id_field, now_field

__all__ = [
    "ChatMessage",
    "Event",
    "EventAttempt",
    "EventStatus",
    "VerificationScheme",
    "Webhook",
]


class VerificationScheme(StrEnum):
    """How an incoming webhook proves who sent it; exactly one per webhook."""

    NONE = "none"
    SHARED_SECRET = "shared_secret"  # noqa: S105 - a scheme name
    GITHUB = "github"
    STRIPE = "stripe"
    STANDARD_WEBHOOKS = "standard_webhooks"
    SLACK = "slack"


class EventStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (EventStatus.DONE, EventStatus.FAILED)


@attrs.frozen(kw_only=True)
class Webhook:
    """An incoming webhook: a secret URL whose events the agent turns into a message."""

    id: str = id_field("wh")
    workspace_id: str
    #: The group whose tools the agent may use for this webhook's events.
    group_id: str | None = None
    name: str
    #: Where the message goes: ``<sink>:<name>`` (``local:ops``).
    channel: str
    prompt: str
    #: False: a draft, which refuses deliveries with 403.
    active: bool = True
    #: A draft that captures keeps its deliveries as samples (never run) instead
    #: of refusing them (:mod:`agentws.webhooks.samples`); no effect while active.
    capture: bool = False
    token_hash: str = attrs.field(repr=False)
    #: The URL's generation: 1 when made, one more at each rotation.
    token_generation: int = 1
    #: The URL before the last rotation (generation ``token_generation - 1``),
    #: which keeps working until ``previous_token_until``.
    previous_token_hash: str | None = attrs.field(default=None, repr=False)
    previous_token_until: datetime | None = None
    #: When the URL was last rotated (None: never).
    token_rotated_at: datetime | None = None
    verification: VerificationScheme = VerificationScheme.NONE
    #: The verification secret, sealed with the service key.
    secret: bytes | None = attrs.field(default=None, repr=False)
    #: The secret's generation: 1 when set, one more at each rotation.
    secret_generation: int = 1
    #: The secret before the last rotation, sealed, which still verifies
    #: until ``previous_secret_until``.
    previous_secret: bytes | None = attrs.field(default=None, repr=False)
    previous_secret_until: datetime | None = None
    #: When the secret was last rotated (None: never).
    secret_rotated_at: datetime | None = None
    rate_per_min: int = 60
    burst: int = 30
    max_body_bytes: int = 1024 * 1024
    #: Events of this webhook run at once at most (1: strictly in arrival order).
    concurrency: int = 4
    #: Its messages may ping a whole channel (``@channel``, ``@here``...); off:
    #: sinks make mass mentions inert (:mod:`agentws.chat.mentions`).
    allow_mentions: bool = False
    #: Write tools an admin pre-authorized for this webhook's runs: name → the
    #: definition hash it was authorized for (a changed tool loses it).
    allowed_tools: dict[str, str] = attrs.field(factory=dict)
    #: Failed events in a row that post one alert (0: no alerts); see
    #: :class:`~agentws.domain.streak_records.FailureStreak`.
    alert_after: int = 3
    #: Where alerts and recoveries go; None: the webhook's own channel.
    alerts_channel: str | None = None
    #: The alert also pauses the webhook: it becomes a draft, with ``paused_at``.
    pause_on_failure: bool = False
    #: When an alert paused it (inactive since); activating clears it.
    paused_at: datetime | None = None
    created_at: datetime = now_field()
    updated_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class Event:
    """One accepted webhook delivery and what became of it."""

    id: str = id_field("evt")
    webhook_id: str
    status: EventStatus = EventStatus.QUEUED
    #: The event's JSON: the body exactly as received (signatures are over
    #: these bytes), or the event a form body carries (domain/form_bodies).
    body: bytes = attrs.field(repr=False)
    #: SHA-256 of ``body``: a redelivery with the same key must carry the same body.
    body_hash: str = attrs.field()
    #: Allow-listed request headers.
    headers: dict[str, str] = attrs.field(factory=dict)
    dedup_key: str | None = None
    #: Attempts begun so far (a run cut short by shutdown gives its attempt back).
    attempts: int = 0
    #: Not run before this (retry backoff).
    available_at: datetime = now_field()
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    error: str | None = None
    #: The posted chat message, recorded before the event is marked done.
    message_id: str | None = None
    #: A replay's prompt (the one its original ran with); None: the webhook's current one.
    prompt: str | None = None
    replay_of: str | None = None
    received_at: datetime = now_field()
    started_at: datetime | None = None
    finished_at: datetime | None = None
    #: The webhook URL's generation the delivery came through (None: not
    #: delivered to the URL, e.g. a replay), and the secret's that verified it
    #: (None: no secret checked): the operator sees when senders have moved.
    url_generation: int | None = None
    secret_generation: int | None = None
    #: The address its request came from (the connection's peer; None: not
    #: a request to the webhook's URL, such as a replay).
    source: str | None = None

    @body_hash.default
    def _hash_body(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


@attrs.frozen(kw_only=True)
class EventAttempt:
    """One run of an event: the agent's transcript, its tool calls and how it ended."""

    id: str = id_field("att")
    event_id: str
    number: int
    instance_id: str
    #: ``running``, then ``done``, ``retry``, ``failed`` or ``interrupted``.
    outcome: str = "running"
    error: str | None = None
    #: The model's conversation: system prompt, user turn, replies, tool results.
    transcript: dict[str, Any] = attrs.field(factory=dict)
    tool_calls: dict[str, Any] = attrs.field(factory=dict)
    #: Tokens used, per the model (empty for the offline model).
    usage: dict[str, Any] = attrs.field(factory=dict)
    started_at: datetime = now_field()
    finished_at: datetime | None = None


@attrs.frozen(kw_only=True)
class ChatMessage:
    """A message the agent posted; local channels keep it here, other sinks record its id."""

    id: str = id_field("msg")
    workspace_id: str
    #: The channel reference, ``<sink>:<name>``.
    channel: str
    text: str
    event_id: str | None = None
    thread: str | None = None
    #: The chat service's id for the posted message, once posted.
    external_id: str | None = None
    created_at: datetime = now_field()
