"""The admin API's answers about webhooks: the webhook, its rotation, failures, replays,
test events, events, deliveries, samples and tries of a prompt.

Each is the JSON :mod:`agentws.doors.views` (or the webhook module that owns it:
:func:`agentws.webhooks.replays.replay_json`,
:func:`agentws.webhooks.delivery_listing.delivery_json`) gives a record.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentws.domain.dry_runs import TriedOutcome
from agentws.domain.models import Capability, EventStatus
from agentws.doors.api.shapes.base import (
    Headers,
    MaybeText,
    MaybeTime,
    Names,
    Shape,
    Time,
    choice,
    page,
)

__all__ = [
    "BulkReplay",
    "Delivery",
    "DryRun",
    "Event",
    "EventSummary",
    "IssuedWebhook",
    "RotationStatus",
    "Sample",
    "SampleDetail",
    "TestEvent",
    "Webhook",
    "WebhookFailures",
]

_WEBHOOK_STATUS = Literal["active", "draft", "paused"]
_EVENT_STATUS = choice(EventStatus)


class Webhook(Shape):
    """A webhook, never its URL's secret part or its signing secret."""

    id: str
    workspace: str
    name: str
    channel: str
    group: MaybeText
    active: bool
    status: _WEBHOOK_STATUS
    verification: str
    rate_per_min: int
    burst: int
    max_body_bytes: int
    concurrency: int
    allowed_tools: Names
    allow_mentions: bool
    capture: bool
    alert_after: int
    alerts_channel: MaybeText
    pause_on_failure: bool
    paused_at: MaybeTime
    prompt: str
    url_generation: int = Field(description="1, one more at each rotation")
    previous_url_until: MaybeTime = Field(
        description="until when the URL before the last rotation still works"
    )
    secret_generation: int | None
    previous_secret_until: MaybeTime = Field(
        description="until when the secret before the last rotation still verifies"
    )
    created_at: Time
    updated_at: Time


class IssuedWebhook(Webhook):
    """A new webhook, or a rotated one, with its URL."""

    url: str = Field(description="shown this once")


class RotationStatus(Shape):
    """How far senders have moved to the new URL and secret."""

    url_generation: int
    previous_url_until: MaybeTime
    via_new_url: int
    via_previous_url: int
    last_via_previous_url: MaybeTime
    secret_generation: int
    previous_secret_until: MaybeTime
    via_new_secret: int
    via_previous_secret: int
    last_via_previous_secret: MaybeTime


class FailureStreak(Shape):
    failures: int
    open: bool
    started_at: Time
    last_failed_at: Time
    last_event_id: MaybeText
    last_error: MaybeText
    alerted_at: MaybeTime
    paused_at: MaybeTime
    alert_posted_at: MaybeTime
    alert_message_id: MaybeText
    ended_at: MaybeTime
    recovered_event_id: MaybeText
    recovery_posted_at: MaybeTime
    recovery_message_id: MaybeText
    notice_error: MaybeText


class WebhookFailures(Shape):
    """A webhook's failure alerts: settings, pause, latest streak, replayable events."""

    webhook: str
    status: _WEBHOOK_STATUS
    paused_at: MaybeTime
    alert_after: int
    alerts_channel: MaybeText
    pause_on_failure: bool
    failure_streak: FailureStreak | None
    replayable: int = Field(
        description="failed events never replayed: what a bulk replay would take"
    )


class _ReplaySelection(Shape):
    status: Literal["failed"]
    since: MaybeTime
    until: MaybeTime
    error_contains: MaybeText


class _Replayed(Shape):
    id: str
    received_at: Time
    error: MaybeText
    replay_id: MaybeText


class BulkReplay(Shape):
    """A bulk replay of a webhook's failed events."""

    id: str
    webhook: str
    webhook_id: str
    dry_run: bool
    selection: _ReplaySelection
    rate_per_min: int
    matched: int
    queued: int
    left: int = Field(description="more events match: replay again")
    events: list[_Replayed]


class TestEvent(Shape):
    """What the webhook's door answered a signed sample delivery."""

    webhook: str
    sample: str
    status: int = Field(description="the door's HTTP status")
    answer: dict[str, Any] = Field(description="the door's JSON answer")
    event_id: MaybeText


class _EventFields(Shape):
    """An event: what became of one delivery, and the URL and secret generations it came by."""

    id: str
    webhook: str
    webhook_id: str
    status: Annotated[str, _EVENT_STATUS]
    attempts: int
    error: MaybeText
    message_id: MaybeText
    received_at: Time
    finished_at: MaybeTime
    url_generation: int | None
    secret_generation: int | None


class Event(_EventFields):
    """An event."""


class EventSummary(_EventFields):
    """An event as a list shows it, with the size of its body."""

    body_bytes: int = Field(description="the size of the body")


class Delivery(Shape):
    """An entry of a webhook's delivery log."""

    id: int | None = Field(
        description="a refusal's (or duplicate's) row; null for an accepted delivery, which is "
        "its event"
    )
    received_at: Time
    status: int = Field(description="the HTTP status answered")
    reason: str = Field(description="queued, duplicate, or the refusal's error code")
    accepted: bool = Field(description="answered 2xx")
    body_bytes: int
    headers: Headers = Field(
        description="the request's headers, credentials and signatures ***; for an accepted "
        "delivery, the headers its event keeps"
    )
    source: MaybeText
    event_id: MaybeText
    omitted: int = Field(
        description="refusals just before this one that the log's rate bound left out"
    )


class Sample(Shape):
    """A delivery a capturing draft kept, as a list shows it."""

    id: str
    webhook_id: str
    received_at: Time
    size: int = Field(description="bytes of the body kept")
    headers: Headers
    preview: str = Field(description="the start of the body, on one line")


class SampleDetail(Sample):
    """A sample with its body."""

    body: Any = Field(description="the event kept (JSON)")


class TriedCall(Shape):
    name: str
    capability: Annotated[str | None, choice(Capability, nullable=True)]
    arguments: dict[str, Any]
    outcome: Annotated[str, choice(TriedOutcome)]
    outcome_label: str
    detail: str = Field(description="a read's result, or what would happen")


class DryRun(Shape):
    """What the agent would have done with a candidate prompt, nothing posted."""

    text: str = Field(description="the message it would post (not posted)")
    model: str
    prompt: str
    source: Literal["sample", "event"]
    source_id: str
    tool_calls: list[TriedCall]
    usage: dict[str, int]


WebhookPage = page(Webhook, "WebhookPage")
DeliveryPage = page(Delivery, "DeliveryPage")
SamplePage = page(Sample, "SamplePage")
EventPage = page(
    EventSummary,
    "EventPage",
    next_cursor=(
        MaybeText,
        Field(description="pass as `cursor` for older events; null on the last page"),
    ),
    previous_cursor=(
        MaybeText,
        Field(description="pass as `cursor` for newer events; null on the first page"),
    ),
    unindexed=(
        int,
        Field(
            description="with q: events stored but not yet in the search index (any "
            "workspace), which the search could not look at; 0 otherwise"
        ),
    ),
)
