"""The delivery log's records and rules: an entry per request to a webhook's URL, and what
of a request's headers may be kept.

Every request to a known webhook's URL is in its log, accepted or refused
(:class:`Delivery`): when, the status and reason it was answered with (the
error code of a refusal, ``queued`` or ``duplicate`` for a delivery taken),
the body's size, its headers (:func:`redacted_headers`), where it came from
(:func:`source_address`) and the event it became. An accepted delivery's
entry is its event; every other answer is a row of its own.

**Headers.** A request's headers are kept so that an operator can see what a
sender sent, never what proves who it is: credentials and signatures are
not stored. Names are always kept. A value is kept as sent only for the
headers that say what the request is and how it travelled
(:data:`CLEAR_HEADERS`); a signature header keeps its shape with the
signatures hidden (``sha256=***``, ``t=1700000000,v1=***``), so that a wrong
scheme or a stale timestamp can still be told apart; every other value
(``Authorization``, ``Cookie``, ``X-Webhook-Secret``, ``X-Gitlab-Token``,
any header not known here) is ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Literal

import attrs

from agentws.domain.deliveries import ALLOWED_HEADERS

__all__ = [
    "ACCEPTED",
    "CLEAR_HEADERS",
    "DUPLICATE",
    "HIDDEN",
    "Delivery",
    "StatusFilter",
    "parse_status_filter",
    "redacted_headers",
    "source_address",
]

#: The reason of a delivery stored as a new event (202).
ACCEPTED = "queued"
#: The reason of a redelivery answered with its first event (200).
DUPLICATE = "duplicate"
#: What a hidden value is replaced with.
HIDDEN = "***"

#: Headers whose values are kept as sent: what the delivery is (the events'
#: own allow-list) and how it travelled. Never credentials or signatures.
CLEAR_HEADERS = ALLOWED_HEADERS | frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-encoding",
        "content-length",
        "expect",
        "forwarded",
        "host",
        "traceparent",
        "tracestate",
        "transfer-encoding",
        "via",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-real-ip",
        "x-slack-request-timestamp",
        "x-slack-retry-num",
        "x-slack-retry-reason",
    }
)
# Signature headers: the labels and timestamps kept, the signatures hidden.
_SIGNATURE_HEADERS = frozenset(
    {
        "x-hub-signature",
        "x-hub-signature-256",
        "stripe-signature",
        "webhook-signature",
        "svix-signature",
        "x-slack-signature",
    }
)
# ``label=value`` (GitHub, Slack, Stripe's parts) or ``label,value`` (Standard Webhooks).
_SIGNED_PART = re.compile(r"([A-Za-z0-9_-]{1,16})([=,])([^\s,]*)")
# The labels senders use (a scheme, a version, Stripe's timestamp): anything
# else before a ``=`` is no label and may be a part of a secret.
_LABEL = re.compile(r"sha1|sha256|sha512|v[0-9]a?|t")
# Stripe's parts that are no signature.
_STRIPE_CLEAR = frozenset({"t"})
# Kept values are for people to read; a request may not make a row large.
_MAX_VALUE_CHARS = 500
_MAX_HEADERS = 64


@attrs.frozen(kw_only=True)
class Delivery:
    """One request to a webhook's URL and how it was answered."""

    #: A row's, given by the store and growing with each row (None until
    #: stored, and for an accepted delivery, whose entry is its event).
    id: int | None = None
    webhook_id: str
    received_at: datetime
    #: The HTTP status answered.
    status: int
    #: ``queued``, ``duplicate``, or the refusal's error code (``invalid_signature``...).
    reason: str
    #: The body's size as received (as announced, for a body refused unread);
    #: an accepted delivery's is its event's (a form's: the event it carried).
    body_bytes: int
    #: The request's headers, redacted (:func:`redacted_headers`); an accepted
    #: delivery's are those its event keeps (no credential or signature either).
    headers: dict[str, str] = attrs.field(factory=dict)
    #: The address the request came from (the connection's peer).
    source: str | None = None
    #: The event it became (a duplicate: the first event).
    event_id: str | None = None
    #: Refusals of this webhook not logged just before this one (the log's rate bound).
    omitted: int = 0

    @property
    def accepted(self) -> bool:
        return self.status < 300


def source_address(client: object) -> str:
    """The peer's address of an ASGI ``scope["client"]`` (host, port); "" if the server gave none.

    The connection's peer: agentws trusts no forwarding header, so behind a
    proxy this is the proxy (the client is in its ``X-Forwarded-For``).
    """
    if isinstance(client, (list, tuple)) and client:
        return str(client[0])
    return ""


def redacted_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` (names in lower case) as the log keeps them: secrets hidden, values cut."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        if len(kept) >= _MAX_HEADERS:
            break
        if name in CLEAR_HEADERS:
            kept[name] = value[:_MAX_VALUE_CHARS]
        elif name in _SIGNATURE_HEADERS:
            kept[name] = _signature_shape(name, value[:_MAX_VALUE_CHARS])
        else:
            kept[name] = HIDDEN
    return kept


def _signature_shape(name: str, value: str) -> str:
    """``value`` with each signature replaced by :data:`HIDDEN`, labels (and Stripe's ``t``) kept.

    Only known labels are kept, and Stripe's timestamp only when it is one:
    whatever else a sender put there may hold a part of a secret.
    """
    parts = []
    for match in _SIGNED_PART.finditer(value):
        label, sep = match[1], match[2]
        if not _LABEL.fullmatch(label):
            parts.append(HIDDEN)
        elif name == "stripe-signature" and label in _STRIPE_CLEAR and _is_time(match[3]):
            parts.append(match[0])
        else:
            parts.append(f"{label}{sep}{HIDDEN}")
    if not parts:
        return HIDDEN
    joiner = "," if name == "stripe-signature" else " "
    return joiner.join(parts[:8])


def _is_time(value: str) -> bool:
    return value.isdigit() and len(value) <= 12


#: Which deliveries a listing keeps: ``accepted`` (2xx), ``refused`` (the
#: rest), or one HTTP status.
StatusFilter = Literal["accepted", "refused"] | int


def parse_status_filter(text: str | None) -> StatusFilter | None:
    """``accepted``, ``refused`` or an HTTP status (``401``); None for none.

    Raises:
        ValueError: anything else.
    """
    if text is None or not text.strip():
        return None
    text = text.strip().lower()
    if text in ("accepted", "refused"):
        return "accepted" if text == "accepted" else "refused"
    # ASCII digits only: '²' is a digit to str.isdigit(), and not to int().
    if len(text) == 3 and text.isascii() and text.isdigit() and 100 <= int(text) <= 599:
        return int(text)
    raise ValueError(
        f"status must be accepted, refused or an HTTP status such as 401, not {text!r}"
    )
