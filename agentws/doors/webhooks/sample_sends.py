"""Test events: a sample delivery, signed with the webhook's own secret, through the door's checks.

The URL's token is not kept (only its SHA-256), so agentws cannot POST to
its own ``/hooks/<token>``. What it can do, and does, is build the request
a sender would send (:mod:`agentws.domain.sample_deliveries`: a GitHub
ping, a Stripe event, a Standard Webhooks envelope, a Slack event
callback, or a plain object), signed with the webhook's secret exactly as
that sender signs, and hand it to the door at the point where a request's
token has been looked up and its body read: from there on it is the
door's own code (:meth:`agentws.doors.webhooks.ingest.HookDoor.take`): content
type, JSON, the signature check with the webhook's scheme and secret, the
rate limit, the delivery id and deduplication, the group commit. A draft
or paused webhook refuses it (403) as it refuses a sender. The answer is
the one a sender would get; a queued test event runs as any other and
posts its message. What a test event cannot check is the part before the
door: the sender's copy of the URL and secret.
"""

from __future__ import annotations

import secrets
import time

from agentws.common.audit import record_webhook_action
from agentws.core.errors import ConfigError, StoreError, error_body
from agentws.core.metrics import WEBHOOK_REPLAYS
from agentws.domain.models import Webhook
from agentws.domain.sample_deliveries import (
    SampleAnswer,
    SampleKind,
    default_sample,
    sample_delivery,
)
from agentws.doors.webhooks.ingest import HookDoor, inactive_refusal
from agentws.http.asgi import HttpRefusal, Receive, Scope, Send, respond_json
from agentws.settings.config import Settings
from agentws.webhooks.intake import Intake

__all__ = ["send_test_event"]

_STATUS_WORD = {202: "queued", 200: "duplicate"}


async def _no_other_path(scope: Scope, receive: Receive, send: Send) -> None:
    # The door made for test events takes deliveries through HookDoor.take
    # only; it never passes a request on.
    await respond_json(send, 404, error_body("not_found", "not here"))


async def send_test_event(
    settings: Settings,
    intake: Intake,
    webhook: Webhook,
    sample: SampleKind | None = None,
    *,
    actor: str,
) -> SampleAnswer:
    """Deliver a sample event to ``webhook`` through the door's checks; the door's answer.

    Args:
        intake: what the door hands deliveries to (the running service's, so
            that the rate limit is the door's and the worker is woken; the
            CLI makes its own).
        sample: whose delivery to imitate (default: the sender the webhook's
            verification scheme is for).

    Error handling:
        The store's errors while auditing; the door's refusals are answers.
    """
    kind = sample or default_sample(webhook.verification)
    answer: SampleAnswer
    try:
        secret = intake.secret(webhook)
    except (ConfigError, StoreError):
        answer = SampleAnswer(
            sample=kind,
            status=503,
            body=HttpRefusal(
                503, "verification_unavailable", "the webhook's secret cannot be read; retry later"
            ).body(),
        )
    else:
        answer = await _deliver(settings, intake, webhook, kind, secret)
    WEBHOOK_REPLAYS.labels("test").inc()
    await record_webhook_action(
        intake.store,
        webhook,
        actor,
        "webhook.test",
        sample=kind.value,
        status=answer.status,
        event_id=answer.event_id,
    )
    return answer


async def _deliver(
    settings: Settings, intake: Intake, webhook: Webhook, kind: SampleKind, secret: str | None
) -> SampleAnswer:
    delivery = sample_delivery(
        kind, webhook.verification, secret, now=int(time.time()), nonce=secrets.token_hex(16)
    )
    door = HookDoor(_no_other_path, settings, intake)
    try:
        # What the door checks before the body is read: a draft, the size.
        if not webhook.active:
            raise inactive_refusal(webhook)
        if len(delivery.body) > webhook.max_body_bytes:
            raise HttpRefusal(
                413,
                "payload_too_large",
                f"the body is larger than this webhook's limit of {webhook.max_body_bytes} bytes",
            )
        status, event_id = await door.take(intake, webhook, delivery.body, delivery.headers)
    except HttpRefusal as refusal:
        return SampleAnswer(sample=kind, status=refusal.status, body=refusal.body())
    return SampleAnswer(
        sample=kind,
        status=status,
        body={"event_id": event_id, "status": _STATUS_WORD[status]},
        event_id=event_id,
    )
