"""Test events: a sample delivery per sender, signed as that sender signs it.

A sample is a body and headers as a sender would send them: a GitHub
``ping`` (``X-GitHub-Event``, ``X-GitHub-Delivery``), a Stripe event
(``invoice.payment_failed``, amounts in minor units), a Standard Webhooks
envelope (``type``, ``timestamp``, ``data``, with its ``webhook-id``), a
Slack ``event_callback`` (an ``app_mention``), or a plain JSON object with
an ``Idempotency-Key``. The signature is always the one the webhook's
verification scheme checks, made with the webhook's own secret exactly as
the sender makes it (:mod:`agentws.domain.signatures`): over the body as
sent, with the current time where the scheme has one. Every sample carries a
delivery id of its own, so each test event is a new event. Nothing here
does I/O; the time and the unique part of the ids are passed in.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import attrs

from agentws.core.errors import ValidationError
from agentws.domain.models import VerificationScheme
from agentws.domain.signatures import (
    SHARED_SECRET_HEADER,
    sign_github,
    sign_slack,
    sign_standard_webhooks,
    sign_stripe,
)

__all__ = ["SampleAnswer", "SampleDelivery", "SampleKind", "default_sample", "sample_delivery"]


class SampleKind(StrEnum):
    """Whose delivery a test event imitates."""

    GITHUB = "github"
    STRIPE = "stripe"
    STANDARD_WEBHOOKS = "standard_webhooks"
    SLACK = "slack"
    PLAIN = "plain"


# The sample a webhook's scheme calls for when none is named.
_DEFAULT = {
    VerificationScheme.GITHUB: SampleKind.GITHUB,
    VerificationScheme.STRIPE: SampleKind.STRIPE,
    VerificationScheme.STANDARD_WEBHOOKS: SampleKind.STANDARD_WEBHOOKS,
    VerificationScheme.SLACK: SampleKind.SLACK,
}


def default_sample(scheme: VerificationScheme) -> SampleKind:
    """The sample of the sender ``scheme`` is for (``plain`` for ``none`` and ``shared_secret``)."""
    return _DEFAULT.get(scheme, SampleKind.PLAIN)


@attrs.frozen
class SampleDelivery:
    """A test delivery: the body as sent and its headers (names in lower case)."""

    sample: SampleKind
    body: bytes = attrs.field(repr=False)
    headers: dict[str, str] = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class SampleAnswer:
    """What the webhook's door answered a test event: its status and JSON body."""

    sample: SampleKind
    status: int
    body: dict[str, Any]
    #: The event it became (202: queued; 200: a duplicate's), else None.
    event_id: str | None = None


def _github(now: int, nonce: str) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "zen": "Keep it logically awesome.",
        "hook_id": 0,
        "hook": {
            "type": "Repository",
            "id": 0,
            "name": "web",
            "active": True,
            "events": ["push", "pull_request", "workflow_run"],
            "config": {"content_type": "json", "insecure_ssl": "0"},
        },
        "repository": {
            "id": 0,
            "name": "example",
            "full_name": "agentws-test/example",
            "html_url": "https://github.com/agentws-test/example",
            "default_branch": "main",
            "private": False,
        },
        "sender": {"login": "agentws-test", "type": "User"},
    }
    headers = {
        "user-agent": "GitHub-Hookshot/agentws-test",
        "x-github-event": "ping",
        "x-github-delivery": _uuid(nonce),
        "x-github-hook-id": "0",
    }
    return body, headers


def _stripe(now: int, nonce: str) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "id": f"evt_test_{nonce}",
        "object": "event",
        "api_version": "2024-06-20",
        "created": now,
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": "invoice.payment_failed",
        "data": {
            "object": {
                "id": f"in_test_{nonce}",
                "object": "invoice",
                "amount_due": 129900,
                "amount_paid": 0,
                "currency": "usd",
                "customer": "cus_test",
                "customer_email": "billing@example.com",
                "status": "open",
                "attempt_count": 1,
                "hosted_invoice_url": "https://invoice.stripe.com/i/test",
            }
        },
    }
    return body, {"user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"}


def _standard(now: int, nonce: str) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "type": "agentws.test",
        "timestamp": _iso(now),
        "data": {
            "id": f"test_{nonce}",
            "name": "agentws test event",
            "message": "A test event sent from agentws: if you read this, the webhook works.",
        },
    }
    return body, {
        "user-agent": "agentws-test",
        "webhook-id": f"msg_{nonce}",
        "webhook-timestamp": str(now),
    }


def _slack(now: int, nonce: str) -> tuple[dict[str, Any], dict[str, str]]:
    ts = f"{now}.000100"
    body = {
        "token": "agentws-test",
        "team_id": "T00000000",
        "api_app_id": "A00000000",
        "type": "event_callback",
        "event_id": f"Ev{nonce.upper()}",
        "event_time": now,
        "event": {
            "type": "app_mention",
            "user": "U00000000",
            "text": "<@U00000001> this is a test event from agentws",
            "ts": ts,
            "channel": "C00000000",
            "event_ts": ts,
        },
    }
    return body, {"user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)"}


def _plain(now: int, nonce: str) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "event": "agentws.test",
        "id": f"test_{nonce}",
        "message": "A test event sent from agentws: if you read this, the webhook works.",
        "sent_at": _iso(now),
    }
    return body, {"user-agent": "agentws-test", "idempotency-key": f"test_{nonce}"}


_SAMPLES = {
    SampleKind.GITHUB: _github,
    SampleKind.STRIPE: _stripe,
    SampleKind.STANDARD_WEBHOOKS: _standard,
    SampleKind.SLACK: _slack,
    SampleKind.PLAIN: _plain,
}


def _iso(now: int) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z")


def _uuid(nonce: str) -> str:
    """``nonce`` (32 hex digits) spelled as a UUID, as GitHub's delivery ids are."""
    digits = nonce.ljust(32, "0")[:32]
    return "-".join((digits[:8], digits[8:12], digits[12:16], digits[16:20], digits[20:]))


def sample_delivery(
    sample: SampleKind,
    scheme: VerificationScheme,
    secret: str | None,
    *,
    now: int,
    nonce: str,
) -> SampleDelivery:
    """``sample``'s delivery, signed for ``scheme`` with ``secret`` at ``now`` (Unix seconds).

    Args:
        nonce: 32 lower-case hex digits, unique per test event (its ids).

    Error handling:
        ValidationError when ``scheme`` needs a secret and there is none.
    """
    payload, headers = _SAMPLES[sample](now, nonce)
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {"content-type": "application/json", **headers}
    if scheme is not VerificationScheme.NONE and not secret:
        raise ValidationError(f"verification {scheme.value!r} needs the webhook's secret")
    signed: dict[str, str] = {}
    if scheme is VerificationScheme.SHARED_SECRET and secret:
        signed = {SHARED_SECRET_HEADER: secret}
    elif scheme is VerificationScheme.GITHUB and secret:
        signed = sign_github(secret, body)
    elif scheme is VerificationScheme.STRIPE and secret:
        signed = sign_stripe(secret, body, timestamp=now)
    elif scheme is VerificationScheme.STANDARD_WEBHOOKS and secret:
        message_id = headers.get("webhook-id", f"msg_{nonce}")
        signed = sign_standard_webhooks(secret, body, message_id=message_id, timestamp=now)
    elif scheme is VerificationScheme.SLACK and secret:
        signed = sign_slack(secret, body, timestamp=now)
    headers.update({name.lower(): value for name, value in signed.items()})
    return SampleDelivery(sample, body, headers)
