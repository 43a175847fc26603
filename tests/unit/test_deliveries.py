"""Dedup keys of webhook deliveries and the per-webhook token bucket."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.domain.deliveries import MAX_DEDUP_KEY_CHARS, TokenBucket, dedup_key


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
