"""Dedup keys of webhook deliveries and the per-webhook token bucket."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.domain.deliveries import MAX_DEDUP_KEY_CHARS, TokenBucket, dedup_key
from agentws.domain.models import VerificationScheme as Scheme
from agentws.domain.signatures import (
    Signed,
    sign_github,
    sign_slack,
    sign_standard_webhooks,
    sign_stripe,
    verify,
)

NOW = 1_700_000_000
# Every id a delivery may carry, none of them signed.
UNSIGNED_IDS = {
    "idempotency-key": "i1",
    "webhook-id": "w1",
    "svix-id": "v1",
    "x-github-delivery": "g1",
    "x-shopify-webhook-id": "s1",
}
STANDARD_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_first_present_id_wins_in_the_documented_order() -> None:
    headers = {
        "x-shopify-webhook-id": "s1",
        "x-github-delivery": "g1",
        "svix-id": "v1",
        "webhook-id": "w1",
        "idempotency-key": "i1",
    }
    for header, expected in (
        ("idempotency-key", "idempotency:i1"),
        ("webhook-id", "webhook-id:w1"),
        ("svix-id", "webhook-id:v1"),
        ("x-github-delivery", "github:g1"),
        ("x-shopify-webhook-id", "shopify:s1"),
    ):
        assert dedup_key(headers, {}) == expected
        del headers[header]
    assert dedup_key(headers, {}) is None


def test_a_stripe_event_is_keyed_by_its_id() -> None:
    event = {"id": "evt_1Nx", "object": "event", "type": "invoice.payment_failed"}
    assert dedup_key({}, event) == "stripe:evt_1Nx"
    assert dedup_key({"idempotency-key": "k"}, event) == "idempotency:k"
    # Only Stripe's own events: any other body's "id" is the sender's business.
    assert dedup_key({}, {"id": "evt_1Nx"}) is None
    assert dedup_key({}, {"id": "order-7", "object": "event"}) is None
    assert dedup_key({}, ["evt_1"]) is None


def _signed(scheme: Scheme, secret: str, body: bytes, headers: dict[str, str]) -> Signed:
    lower = {k.lower(): v for k, v in headers.items()}
    return verify(scheme, secret, body, lower, now=NOW)


def test_a_signed_id_outranks_every_unsigned_one() -> None:
    """A replay cannot dodge dedup with a new Idempotency-Key (issue 21)."""
    body = b'{"id": "evt_1", "object": "event"}'
    event = {"id": "evt_1", "object": "event"}
    standard = sign_standard_webhooks(STANDARD_SECRET, body, message_id="msg_1", timestamp=NOW)
    # The signed webhook-id wins over an unsigned svix-id or webhook-id header too.
    signed = _signed(Scheme.STANDARD_WEBHOOKS, STANDARD_SECRET, body, standard)
    assert signed.message_id == "msg_1"
    assert dedup_key({**UNSIGNED_IDS, "webhook-id": "msg_1"}, event, signed) == "webhook-id:msg_1"
    stripe = _signed(Scheme.STRIPE, "whsec_s", body, sign_stripe("whsec_s", body, timestamp=NOW))
    assert dedup_key(UNSIGNED_IDS, event, stripe) == "stripe:evt_1"
    github = _signed(Scheme.GITHUB, "gh", body, sign_github("gh", body))
    assert dedup_key(UNSIGNED_IDS, event, github) == "github:g1"
    # GitHub without its delivery header: the general order.
    assert dedup_key({"idempotency-key": "i1"}, event, github) == "idempotency:i1"


def test_without_a_signed_id_the_timestamp_and_signature_are_the_key() -> None:
    body = b'{"type": "event_callback"}'
    headers = sign_slack("slack-secret", body, timestamp=NOW)
    slack = _signed(Scheme.SLACK, "slack-secret", body, headers)
    signature = headers["X-Slack-Signature"].removeprefix("v0=")
    assert dedup_key(UNSIGNED_IDS, {}, slack) == f"slack:{NOW}:{signature}"
    # Another spelling of the same signature is the same request.
    upper = {**headers, "X-Slack-Signature": "v0=" + signature.upper()}
    assert _signed(Scheme.SLACK, "slack-secret", body, upper) == slack
    later = _signed(
        Scheme.SLACK, "slack-secret", body, sign_slack("slack-secret", body, timestamp=NOW + 1)
    )
    assert dedup_key({}, {}, later) != dedup_key({}, {}, slack)
    # A Stripe-signed body that is no Stripe event: likewise.
    header = sign_stripe("whsec_s", body, timestamp=NOW)
    stripe = _signed(Scheme.STRIPE, "whsec_s", body, header)
    key = dedup_key(UNSIGNED_IDS, {"type": "x"}, stripe)
    assert key == f"stripe-signed:{NOW}:{header['Stripe-Signature'].rpartition('v1=')[2]}"
    assert len(key) <= MAX_DEDUP_KEY_CHARS


def test_unverified_webhooks_keep_the_general_order() -> None:
    for scheme, secret, headers in (
        (Scheme.NONE, None, {}),
        (Scheme.SHARED_SECRET, "s", {"x-webhook-secret": "s"}),
    ):
        signed = verify(scheme, secret, b"{}", headers, now=NOW)
        assert dedup_key(UNSIGNED_IDS, {}, signed) == "idempotency:i1"


def test_no_id_no_key_and_bad_ids_are_refused() -> None:
    assert dedup_key({}, {"event": "deploy"}) is None
    with pytest.raises(ValueError, match="1 to 200 characters"):
        dedup_key({"idempotency-key": "   "}, {})
    with pytest.raises(ValueError, match="x-github-delivery"):
        dedup_key({"x-github-delivery": "x" * (MAX_DEDUP_KEY_CHARS + 1)}, {})
    assert dedup_key({"x-github-delivery": " abc "}, {}) == "github:abc"


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(rate_per_min=60, burst=3)
    assert [bucket.take(100.0) for _ in range(3)] == [None, None, None]
    assert bucket.take(100.0) == 1  # one token a second
    assert bucket.take(100.5) == 1  # half a token: still at least a whole second
    assert bucket.take(101.0) is None
    assert bucket.take(101.0) == 1


def test_retry_after_is_whole_seconds_until_a_token() -> None:
    bucket = TokenBucket(rate_per_min=2, burst=1)  # one token every 30 s
    assert bucket.take(0.0) is None
    assert bucket.take(0.0) == 30
    assert bucket.take(20.0) == 10
    assert bucket.take(30.0) is None


def test_a_bucket_never_holds_more_than_its_burst_and_time_going_back_is_ignored() -> None:
    bucket = TokenBucket(rate_per_min=60, burst=2)
    assert bucket.take(0.0) is None
    assert bucket.take(1_000_000.0) is None
    assert bucket.take(1_000_000.0) is None
    assert bucket.take(1_000_000.0) == 1
    assert bucket.take(5.0) == 1  # a clock that went back adds nothing


def test_a_bucket_needs_a_rate_and_a_burst() -> None:
    with pytest.raises(ValueError, match="rate above 0"):
        TokenBucket(rate_per_min=0, burst=1)
    with pytest.raises(ValueError, match="burst of at least 1"):
        TokenBucket(rate_per_min=1, burst=0)


@settings(database=None, max_examples=200, deadline=None)
@given(
    rate=st.integers(1, 600),
    burst=st.integers(1, 50),
    gaps=st.lists(st.floats(0, 5, allow_nan=False), min_size=1, max_size=200),
)
def test_over_any_window_no_more_than_burst_plus_rate_get_through(
    rate: int, burst: int, gaps: list[float]
) -> None:
    bucket = TokenBucket(rate_per_min=rate, burst=burst)
    now, taken = 0.0, []
    for gap in gaps:
        now += gap
        if bucket.take(now) is None:
            taken.append(now)
        else:
            assert bucket.take(now) is not None  # refusal does not use anything up either
    for i, start in enumerate(taken):
        within = [t for t in taken[i:] if t - start <= 60.0]
        assert len(within) <= burst + rate + 1e-9
