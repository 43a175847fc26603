"""Webhook signatures as senders really make them: checking them, and making them (tests, tools).

One scheme is named per webhook and only that one is checked; a request
signed some other way is refused, never "verified" by a fallback. Every
check runs over the raw body bytes exactly as received and compares in
constant time (``hmac.compare_digest``); where the format carries a
timestamp, it must be within ``tolerance_s`` (300 s) of now, either way,
so a captured request cannot be replayed later.

- ``shared_secret``: header ``X-Webhook-Secret`` equals the secret;
- ``github``: ``X-Hub-Signature-256: sha256=<hex>``, HMAC-SHA256(secret, body);
- ``stripe``: ``Stripe-Signature: t=<ts>,v1=<hex>[,v1=…]``,
  HMAC-SHA256(secret, "<ts>.<body>"); any ``v1`` may match;
- ``standard_webhooks``: ``webhook-id``, ``webhook-timestamp`` and
  ``webhook-signature: v1,<base64> [v1,<base64> …]``, HMAC-SHA256 keyed with
  the base64-decoded ``whsec_`` secret over "<id>.<ts>.<body>"; any ``v1``
  may match (secret rotation);
- ``slack``: ``X-Slack-Request-Timestamp`` and ``X-Slack-Signature: v0=<hex>``,
  HMAC-SHA256(secret, "v0:<ts>:<body>").

Standard Webhooks senders that still use the ``svix-`` header names are
accepted under those names too. Nothing here does I/O; ``now`` is passed in.

A valid signature also says what it vouches for (:class:`Signed`): the
signed message id (Standard Webhooks), and for schemes with a timestamp,
the timestamp and the signature that matched. The dedup key is made of
them (:func:`agentws.domain.deliveries.dedup_key`), so that a request
replayed within the window is known for what it is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

import attrs

from agentws.core.errors import ValidationError
from agentws.domain.models import VerificationScheme

__all__ = [
    "SHARED_SECRET_HEADER",
    "TOLERANCE_S",
    "SignatureError",
    "Signed",
    "check_secret",
    "sign_github",
    "sign_slack",
    "sign_standard_webhooks",
    "sign_stripe",
    "verify",
]

#: The header a ``shared_secret`` webhook's sender puts the secret in (never the query string).
SHARED_SECRET_HEADER = "x-webhook-secret"  # noqa: S105 - a header name
#: How far a signed timestamp may be from now, either way.
TOLERANCE_S = 300.0
# Signatures listed in one header at most: rotation needs a few, not hundreds.
_MAX_SIGNATURES = 16
_STANDARD_PREFIX = "whsec_"


class SignatureError(Exception):
    """The request is not signed as its webhook's scheme requires; ``reason`` says how.

    The reason is for the sender (it names what is missing or wrong) and
    never contains the secret or the expected signature.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class Signed:
    """What a request's valid signature vouches for, besides its body."""

    scheme: VerificationScheme
    #: The signed message id (Standard Webhooks' ``webhook-id``), else None.
    message_id: str | None = None
    #: The signed timestamp (Stripe, Standard Webhooks, Slack), else None.
    timestamp: int | None = None
    #: The signature that matched, as this module computes it (lower-case hex
    #: or base64): one spelling for every way a sender may write it.
    signature: str | None = None


def _hmac_hex(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _header(headers: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = headers.get(name)
        if value is not None:
            # HTTP's optional white space only: str.strip() would also take a
            # no-break space (or \x85) off a wrong secret and let it in.
            return value.strip(" \t")
    return None


def _timestamp(value: str | None, what: str, now: float, tolerance_s: float) -> int:
    if value is None:
        raise SignatureError(f"missing {what}")
    # ASCII digits only: '²' is a digit to str.isdigit(), and not to int().
    if not (value.isascii() and value.isdigit()) or len(value) > 12:
        raise SignatureError(f"{what} is not a Unix time in seconds")
    stamp = int(value)
    if abs(now - stamp) > tolerance_s:
        raise SignatureError(
            f"{what} is more than {tolerance_s:g} s from the server's clock "
            "(a replayed request, or a clock that is off)"
        )
    return stamp


def _standard_key(secret: str) -> bytes:
    raw = secret.removeprefix(_STANDARD_PREFIX)
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(
            "a Standard Webhooks secret is whsec_ followed by base64 (as the sender shows it)"
        ) from None
    if not key:
        raise ValidationError("the Standard Webhooks secret is empty")
    return key


def check_secret(scheme: VerificationScheme, secret: str | None) -> None:
    """Whether ``secret`` can serve ``scheme``; raises ValidationError saying why not.

    ``none`` takes no secret; every other scheme needs one (Standard
    Webhooks: ``whsec_`` + base64, as senders hand it out).
    """
    if scheme is VerificationScheme.NONE:
        if secret:
            raise ValidationError("verification 'none' takes no secret")
        return
    if not secret or not secret.strip():
        raise ValidationError(f"verification '{scheme.value}' needs a secret")
    if secret != secret.strip():
        raise ValidationError("the secret starts or ends with white space; paste it exactly")
    if scheme is VerificationScheme.STANDARD_WEBHOOKS:
        _standard_key(secret)


def verify(
    scheme: VerificationScheme,
    secret: str | None,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float,
    tolerance_s: float = TOLERANCE_S,
) -> Signed:
    """Check that the request is signed as ``scheme`` requires.

    Args:
        secret: the webhook's secret (None only for ``none``).
        body: the raw body bytes, exactly as received.
        headers: the request's headers, names in lower case.
        now: the current Unix time in seconds.

    Returns:
        What the signature vouches for (nothing more than the scheme for
        ``none`` and ``shared_secret``).

    Error handling:
        :class:`SignatureError` with the reason when it is not.
    """
    if scheme is VerificationScheme.NONE:
        return Signed(scheme)
    if not secret:
        raise SignatureError("this webhook has no secret to check signatures with")
    if scheme is VerificationScheme.SHARED_SECRET:
        given = _header(headers, SHARED_SECRET_HEADER)
        if given is None:
            raise SignatureError(f"missing {SHARED_SECRET_HEADER} header")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            raise SignatureError(f"wrong {SHARED_SECRET_HEADER}")
        return Signed(scheme)
    if scheme is VerificationScheme.GITHUB:
        return _verify_github(secret, body, headers)
    if scheme is VerificationScheme.STRIPE:
        return _verify_stripe(secret, body, headers, now, tolerance_s)
    if scheme is VerificationScheme.STANDARD_WEBHOOKS:
        return _verify_standard(secret, body, headers, now, tolerance_s)
    if scheme is VerificationScheme.SLACK:
        return _verify_slack(secret, body, headers, now, tolerance_s)
    raise SignatureError(f"unknown verification scheme {scheme!r}")  # pragma: no cover


def _verify_github(secret: str, body: bytes, headers: Mapping[str, str]) -> Signed:
    expected = _labelled_hex(headers, "X-Hub-Signature-256", "sha256", secret, body)
    return Signed(VerificationScheme.GITHUB, signature=expected)


def _labelled_hex(
    headers: Mapping[str, str], header: str, label: str, secret: str, signed: bytes
) -> str:
    """The hex HMAC-SHA256 of ``signed``, which ``header`` must give as ``<label>=<hex>``."""
    given = _header(headers, header.lower())
    if given is None:
        raise SignatureError(f"missing {header} header")
    given_label, _, signature = given.partition("=")
    if given_label != label or not signature:
        raise SignatureError(f"{header} is not {label}=<hex>")
    expected = _hmac_hex(secret.encode(), signed)
    if not hmac.compare_digest(signature.lower().encode(), expected.encode()):
        raise SignatureError(f"{header} does not match the body")
    return expected


def _verify_stripe(
    secret: str, body: bytes, headers: Mapping[str, str], now: float, tolerance_s: float
) -> Signed:
    given = _header(headers, "stripe-signature")
    if given is None:
        raise SignatureError("missing Stripe-Signature header")
    stamp: str | None = None
    signatures: list[str] = []
    for item in given.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            stamp = value
        elif key == "v1" and value:
            signatures.append(value)
    when = _timestamp(stamp, "Stripe-Signature timestamp (t=)", now, tolerance_s)
    if not signatures:
        raise SignatureError("Stripe-Signature has no v1 signature")
    expected = _hmac_hex(secret.encode(), f"{stamp}.".encode() + body)
    if not _any_matches(expected.encode(), [s.lower().encode() for s in signatures]):
        raise SignatureError("no v1 signature of Stripe-Signature matches the body")
    return Signed(VerificationScheme.STRIPE, timestamp=when, signature=expected)


def _verify_standard(
    secret: str, body: bytes, headers: Mapping[str, str], now: float, tolerance_s: float
) -> Signed:
    message_id = _header(headers, "webhook-id", "svix-id")
    if not message_id:
        raise SignatureError("missing webhook-id header")
    stamp = _header(headers, "webhook-timestamp", "svix-timestamp")
    when = _timestamp(stamp, "webhook-timestamp", now, tolerance_s)
    given = _header(headers, "webhook-signature", "svix-signature")
    if given is None:
        raise SignatureError("missing webhook-signature header")
    signatures = []
    for item in given.split():
        version, _, signature = item.partition(",")
        if version == "v1" and signature:
            signatures.append(signature.encode())
    if not signatures:
        raise SignatureError("webhook-signature has no v1 signature")
    try:
        key = _standard_key(secret)
    except ValidationError:
        raise SignatureError("this webhook's secret is not a Standard Webhooks secret") from None
    digest = hmac.new(key, f"{message_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    expected = base64.b64encode(digest)
    if not _any_matches(expected, signatures):
        raise SignatureError("no v1 signature of webhook-signature matches the body")
    return Signed(
        VerificationScheme.STANDARD_WEBHOOKS,
        message_id=message_id,
        timestamp=when,
        signature=expected.decode(),
    )


def _verify_slack(
    secret: str, body: bytes, headers: Mapping[str, str], now: float, tolerance_s: float
) -> Signed:
    stamp = _header(headers, "x-slack-request-timestamp")
    when = _timestamp(stamp, "X-Slack-Request-Timestamp", now, tolerance_s)
    signed = f"v0:{stamp}:".encode() + body
    expected = _labelled_hex(headers, "X-Slack-Signature", "v0", secret, signed)
    return Signed(VerificationScheme.SLACK, timestamp=when, signature=expected)


def _any_matches(expected: bytes, given: list[bytes]) -> bool:
    # Every candidate is compared (no early exit), so timing says nothing about which matched.
    matched = False
    for signature in given[:_MAX_SIGNATURES]:
        matched |= hmac.compare_digest(signature, expected)
    return matched


# --- signing, as senders do (tests, benchmarks, operators' own senders) ----------------------


def sign_github(secret: str, body: bytes) -> dict[str, str]:
    """The headers GitHub sends with ``body``."""
    return {"X-Hub-Signature-256": "sha256=" + _hmac_hex(secret.encode(), body)}


def sign_stripe(secret: str, body: bytes, *, timestamp: int) -> dict[str, str]:
    """The ``Stripe-Signature`` header Stripe sends with ``body`` at ``timestamp``."""
    signature = _hmac_hex(secret.encode(), f"{timestamp}.".encode() + body)
    return {"Stripe-Signature": f"t={timestamp},v1={signature}"}


def sign_standard_webhooks(
    secret: str, body: bytes, *, message_id: str, timestamp: int
) -> dict[str, str]:
    """The Standard Webhooks headers for ``body`` (``secret`` is ``whsec_…``)."""
    digest = hmac.new(
        _standard_key(secret), f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256
    ).digest()
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    }


def sign_slack(secret: str, body: bytes, *, timestamp: int) -> dict[str, str]:
    """The headers Slack sends with ``body`` at ``timestamp``."""
    signature = _hmac_hex(secret.encode(), f"v0:{timestamp}:".encode() + body)
    return {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": f"v0={signature}"}
