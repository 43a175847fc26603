"""Pure rules of incoming webhook deliveries: their dedup key, and the per-webhook rate limit.

**Dedup key.** Senders retry, and a retry must not make a second agent run.
The key is the first of these the delivery carries, named by where it came
from so that two senders' ids cannot collide::

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
from typing import Any

import attrs

__all__ = [
    "ALLOWED_HEADERS",
    "MAX_DEDUP_KEY_CHARS",
    "IngestOutcome",
    "Ingested",
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


def dedup_key(headers: Mapping[str, str], body: Any) -> str | None:
    """The delivery's dedup key, or None when it carries no id.

    Args:
        headers: request headers, names in lower case.
        body: the parsed JSON body.

    Raises:
        ValueError: an id that is empty after trimming or longer than
            ``MAX_DEDUP_KEY_CHARS`` (the sender should fix it; guessing a key
            could merge distinct events).
    """
    for header, source in _DEDUP_HEADERS:
        value = headers.get(header)
        if value is not None:
            return _key(source, value, header)
    if (
        isinstance(body, dict)
        and body.get("object") == "event"
        and isinstance(body.get("id"), str)
        and body["id"].startswith("evt_")
    ):
        return _key("stripe", body["id"], "the Stripe event's id")
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
    GONE = "gone"  # the webhook was deleted meanwhile
    INACTIVE = "inactive"  # the webhook was made a draft meanwhile


@attrs.frozen
class Ingested:
    """The store's answer for one delivery: what became of it, and which event is it."""

    outcome: IngestOutcome
    #: The new event (accepted), or the first one with that key (duplicate, conflict).
    event_id: str | None = None
