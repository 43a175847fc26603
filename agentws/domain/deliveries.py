"""Pure rules of incoming webhook deliveries: their dedup key, and the per-webhook rate limit.

**Dedup key.** Senders retry, and a retry must not make a second agent run.
The key is named by where it came from so that two senders' ids cannot
collide. A webhook that verifies a signature takes the id its scheme
signs, whatever else the delivery carries, so that a captured request sent
again (within the signature's time window) with a new ``Idempotency-Key``
is still the same delivery::

    standard_webhooks   webhook-id / svix-id (signed)             webhook-id:<value>
    stripe              the event body's id (signed)              stripe:<evt_…>
                        a body without one: timestamp, signature  stripe-signed:<t>:<hex>
    slack               timestamp and signature (no id at all)    slack:<ts>:<hex>
    github              X-GitHub-Delivery                         github:<value>

(GitHub's signature covers the body only, and its delivery header is the
id GitHub retries with; without that header, or for another scheme, the
general order below applies.) Otherwise the key is the first of these the
delivery carries::

    Idempotency-Key            idempotency:<value>
    webhook-id / svix-id       webhook-id:<value>     (Standard Webhooks, Svix)
    X-GitHub-Delivery          github:<value>
    X-Shopify-Webhook-Id       shopify:<value>
    a Stripe event body's id   stripe:<evt_…>         (a JSON object with "object": "event")

**Rate limit.** A token bucket per webhook: ``burst`` tokens, refilled at
``rate_per_min`` a minute. A delivery takes one token; with none left it is
refused with the whole seconds (at least 1) after which one will be there.
Time is passed in, so the bucket is the same on any clock (trio's, tests'
autojump clock) and can be kept anywhere (memory now, a shared store later).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from agentws.domain.models import VerificationScheme
from agentws.domain.signatures import Signed

__all__ = [
    "ALLOWED_HEADERS",
    "MAX_DEDUP_KEY_CHARS",
    "DeliveryGenerations",
    "IngestOutcome",
    "Ingested",
    "RotationStatus",
    "TokenBucket",
    "allowed_headers",
    "dedup_key",
]

_EPSILON = 1e-9
#: Longer ids are not ids a sender made up; they are refused as keys (and cut in errors).
MAX_DEDUP_KEY_CHARS = 200

# Headers that carry a delivery id, in the order they are preferred.
_DEDUP_HEADERS = (
    ("idempotency-key", "idempotency"),
    ("webhook-id", "webhook-id"),
    ("svix-id", "webhook-id"),
    ("x-github-delivery", "github"),
    ("x-shopify-webhook-id", "shopify"),
)

# Request headers kept with an event, for its timeline and for the agent: what
# says what the delivery is. Never credentials, cookies or signatures.
ALLOWED_HEADERS = frozenset(
    {
        "content-type",
        "user-agent",
        "idempotency-key",
        "webhook-id",
        "webhook-timestamp",
        "svix-id",
        "svix-timestamp",
        "x-github-event",
        "x-github-delivery",
        "x-github-hook-id",
        "x-github-hook-installation-target-type",
        "x-github-hook-installation-target-id",
        "x-shopify-topic",
        "x-shopify-webhook-id",
        "x-shopify-shop-domain",
        "x-gitlab-event",
        "x-request-id",
        "x-event-type",
    }
)
# Longer header values are cut when kept: they are for people to read.
_MAX_KEPT_HEADER_CHARS = 500


def allowed_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers of ``headers`` (names in lower case) an event keeps."""
    return {
        name: value[:_MAX_KEPT_HEADER_CHARS]
        for name, value in sorted(headers.items())
        if name in ALLOWED_HEADERS
    }


def dedup_key(headers: Mapping[str, str], body: Any, signed: Signed | None = None) -> str | None:
    """The delivery's dedup key, or None when it carries no id.

    Args:
        headers: request headers, names in lower case.
        body: the parsed JSON body.
        signed: what the webhook's verified signature vouches for (None: unverified).

    Raises:
        ValueError: an id that is empty after trimming or longer than
            ``MAX_DEDUP_KEY_CHARS`` (the sender should fix it; guessing a key
            could merge distinct events).
    """
    if signed is not None:
        key = _signed_key(headers, body, signed)
        if key is not None:
            return key
    for header, source in _DEDUP_HEADERS:
        value = headers.get(header)
        if value is not None:
            return _key(source, value, header)
    if _stripe_event_id(body) is not None:
        return _key("stripe", body["id"], "the Stripe event's id")
    return None


def _signed_key(headers: Mapping[str, str], body: Any, signed: Signed) -> str | None:
    scheme = signed.scheme
    if scheme is VerificationScheme.STANDARD_WEBHOOKS and signed.message_id is not None:
        return _key("webhook-id", signed.message_id, "webhook-id")
    if scheme is VerificationScheme.GITHUB:
        delivery = headers.get("x-github-delivery")
        return None if delivery is None else _key("github", delivery, "x-github-delivery")
    if scheme is VerificationScheme.STRIPE and _stripe_event_id(body) is not None:
        return _key("stripe", body["id"], "the Stripe event's id")
    # No signed id: the signed timestamp and the signature are the request
    # itself, and the timestamp's window bounds how long a replay can come.
    if (
        scheme in (VerificationScheme.STRIPE, VerificationScheme.SLACK)
        and signed.timestamp is not None
    ):
        source = "slack" if scheme is VerificationScheme.SLACK else "stripe-signed"
        return f"{source}:{signed.timestamp}:{signed.signature}"
    return None


def _stripe_event_id(body: Any) -> str | None:
    if (
        isinstance(body, dict)
        and body.get("object") == "event"
        and isinstance(body.get("id"), str)
        and body["id"].startswith("evt_")
    ):
        return str(body["id"])
    return None


def _key(source: str, value: str, where: str) -> str:
    value = value.strip()
    if not value or len(value) > MAX_DEDUP_KEY_CHARS:
        raise ValueError(f"{where} must be 1 to {MAX_DEDUP_KEY_CHARS} characters")
    return f"{source}:{value}"


@attrs.define
class TokenBucket:
    """``burst`` deliveries at once, then ``rate_per_min`` a minute.

    Args:
        rate_per_min: tokens added per minute (> 0).
        burst: tokens the bucket holds at most (>= 1); it starts full.
    """

    rate_per_min: float
    burst: int
    _tokens: float = attrs.field(init=False)
    _at: float | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        if not self.rate_per_min > 0 or self.burst < 1:
            raise ValueError("a rate limit needs a rate above 0 and a burst of at least 1")
        self._tokens = float(self.burst)

    def take(self, now: float) -> int | None:
        """Take a token at time ``now`` (seconds); None if taken, else whole seconds to wait."""
        self._refill(now)
        # A token refilled in steps adds up to a hair under 1.0 in floating point.
        if self._tokens >= 1.0 - _EPSILON:
            self._tokens = max(0.0, self._tokens - 1.0)
            return None
        missing = 1.0 - self._tokens
        return max(1, math.ceil(missing * 60.0 / self.rate_per_min - _EPSILON))

    def _refill(self, now: float) -> None:
        if self._at is not None and now > self._at:
            added = (now - self._at) * self.rate_per_min / 60.0
            self._tokens = min(float(self.burst), self._tokens + added)
        if self._at is None or now > self._at:
            self._at = now


class IngestOutcome(enum.StrEnum):
    """What became of one delivery handed to the store."""

    ACCEPTED = "accepted"  # stored as a new event
    DUPLICATE = "duplicate"  # its key and body were seen: the first event stands
    CONFLICT = "conflict"  # its key was seen with another body
    GONE = "gone"  # the webhook was deleted meanwhile (or the URL rotated past its grace)
    INACTIVE = "inactive"  # the webhook was made a draft meanwhile
    UNVERIFIED = "unverified"  # its secret was rotated past its grace meanwhile


@attrs.frozen
class Ingested:
    """The store's answer for one delivery: what became of it, and which event is it."""

    outcome: IngestOutcome
    #: The new event (accepted), or the first one with that key (duplicate, conflict).
    event_id: str | None = None


@attrs.frozen
class DeliveryGenerations:
    """Events received since a rotation, by the generation they came through."""

    current: int
    previous: int
    #: When the last event through the previous generation came (None: none did).
    last_previous: datetime | None


@attrs.frozen
class RotationStatus:
    """A webhook's rotations as an operator follows them.

    ``*_until`` is when the previous URL (secret) stops working, None when
    there is none in grace. The counts are of the events received since the
    last rotation (or since the webhook was made), by the generation they
    came through.
    """

    url_generation: int
    previous_url_until: datetime | None
    via_new_url: int
    via_previous_url: int
    last_via_previous_url: datetime | None
    secret_generation: int
    previous_secret_until: datetime | None
    via_new_secret: int
    via_previous_secret: int
    last_via_previous_secret: datetime | None
