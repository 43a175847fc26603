"""Capture: the samples a draft webhook keeps of its deliveries, and what a prompt is tried on.

A draft set to capture (``agentws webhook create --draft --capture``,
``webhook update --capture``) answers deliveries that pass every check an
active webhook's pass (size, media type, JSON or form body, signature, rate
limit, delivery id) with 202 ``{"status": "captured", "sample_id": …}``
instead of 403, and keeps each as a :class:`~agentws.domain.models.WebhookSample`:
the event as it would have been stored, with its allow-listed headers. A
webhook keeps its newest :data:`KEEP`; older ones are dropped as new ones
come. Samples are never run and post nothing; they stay when the webhook is
activated, so the prompt written against them is there for its first event.

The door (:mod:`agentws.doors.webhooks.ingest`) stores a sample through the
store's group commit (:func:`capture`), as it does events. "Try a prompt"
(:mod:`agentws.agent.dry_run`) runs on a sample or on a past event of the
webhook: :func:`tried_delivery` finds either.
"""

from __future__ import annotations

import attrs
import outcome
import trio

from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.models import Event, Webhook, WebhookSample
from agentws.store.sql_ingest import IngestStore
from agentws.store.sql_records import RecordStore

__all__ = ["KEEP", "capture", "find_sample", "list_samples", "tried_delivery"]

#: Samples kept per webhook, the newest.
KEEP = 50


async def capture(
    store: IngestStore, webhook: Webhook, body: bytes, headers: dict[str, str]
) -> WebhookSample | None:
    """Keep a delivery to ``webhook``, a capturing draft, as a sample; None if it no longer
    is one (deleted, activated, or capture turned off since it was read).

    Answered once the sample's commit is durable, with the group commit of
    deliveries (one flush for many requests).

    Error handling:
        The store's :class:`~agentws.core.errors.StoreError`. Cancelled while
        waiting (the caller's deadline), the sample may still be stored.
    """
    sample = WebhookSample(webhook_id=webhook.id, body=body, headers=headers)
    answered = trio.Event()
    result: list[outcome.Outcome[bool]] = []

    def answer(stored: outcome.Outcome[bool]) -> None:
        result.append(stored)
        answered.set()

    store.capture_nowait(sample, keep=KEEP, answer=answer)
    await answered.wait()
    return sample if result[0].unwrap() else None


async def list_samples(store: RecordStore, webhook: Webhook) -> list[WebhookSample]:
    """The webhook's samples, newest first (at most :data:`KEEP`)."""
    kept = await store.select(WebhookSample, webhook_id=webhook.id)
    return list(reversed(kept))[:KEEP]


async def find_sample(store: RecordStore, webhook: Webhook, sample_id: str) -> WebhookSample:
    """The webhook's sample ``sample_id``; NotFoundError if it has none such (or dropped it)."""
    found = await store.find(WebhookSample, id=sample_id, webhook_id=webhook.id)
    if found is None:
        raise NotFoundError(
            f"webhook {webhook.name!r} has no sample {sample_id!r} (it keeps its newest {KEEP}; "
            "see `agentws webhook samples`)"
        )
    return found


async def tried_delivery(
    store: RecordStore, webhook: Webhook, *, sample_id: str | None, event_id: str | None
) -> tuple[Event, str]:
    """What a prompt is tried on: the sample or the past event of ``webhook`` named,
    and which it is (``sample`` or ``event``).

    A sample comes back as an event that is not stored (its id the
    sample's), so that a try reads it exactly as a run reads an event.

    Error handling:
        ValidationError unless exactly one of the two is given;
        NotFoundError if the webhook has no such sample or event.
    """
    if (sample_id is None) == (event_id is None):
        raise ValidationError("name what to try the prompt on: a sample id or an event id")
    if sample_id is not None:
        sample = await find_sample(store, webhook, sample_id)
        as_event = Event(
            id=sample.id,
            webhook_id=webhook.id,
            body=sample.body,
            headers=sample.headers,
            received_at=sample.received_at,
        )
        return as_event, "sample"
    event = await store.find(Event, id=event_id, webhook_id=webhook.id)
    if event is None:
        raise NotFoundError(
            f"webhook {webhook.name!r} has no event {event_id!r} (see `agentws event list`)"
        )
    # A replay's stored prompt is not the candidate: the try says which prompt runs.
    return attrs.evolve(event, prompt=None), "event"
