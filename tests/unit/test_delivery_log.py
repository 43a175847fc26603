"""The delivery log's rules and its writer, on a real SQLite store and trio's autojump clock.

Headers keep their names and never a credential or a signature; the status
filter reads what people type; refusal rows are bounded in rate per webhook
(the next row says how many refusals were left out); the trimmer keeps each
log to its bound once the overview's rollup has counted its rows, and sweeps
rows past their age at start.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import outcome
import pytest
import trio
import trio.testing

from agentws.domain.delivery_log import (
    HIDDEN,
    Delivery,
    parse_status_filter,
    redacted_headers,
)
from agentws.domain.models import Webhook, Workspace
from agentws.domain.rollups import RollupMark
from agentws.domain.rules import utcnow
from agentws.store import SqlStore, open_store
from agentws.webhooks.delivery_log import REFUSAL_ROWS_BURST, DeliveryLog
from tests.e2e.polling import wait_until

# The store's work runs in threads, which the clock cannot see: it jumps only
# once every task has waited this long (real time), which a store call never does.
_IDLE_S = 0.2


def test_headers_keep_their_names_and_no_credential_or_signature() -> None:
    kept = redacted_headers(
        {
            "content-type": "application/json",
            "user-agent": "GitHub-Hookshot/a1b2c3d",
            "x-github-delivery": "72d3162e",
            "x-forwarded-for": "203.0.113.9",
            "x-hub-signature-256": "sha256=" + "ab" * 32,
            "x-hub-signature": "sha1=" + "cd" * 20,
            "stripe-signature": "t=1714641247,v1=" + "ef" * 32 + ",v0=" + "01" * 32,
            "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1a,abc",
            "x-slack-signature": "v0=" + "23" * 32,
            "x-webhook-secret": "s3cr3t",
            "authorization": "Bearer agws_token",
            "cookie": "session=abc",
            "x-gitlab-token": "glpat-secret",
            "x-custom-anything": "unknown: hidden too",
        }
    )
    assert kept == {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/a1b2c3d",
        "x-github-delivery": "72d3162e",
        "x-forwarded-for": "203.0.113.9",
        "x-hub-signature-256": "sha256=***",
        "x-hub-signature": "sha1=***",
        "stripe-signature": "t=1714641247,v1=***,v0=***",
        "webhook-signature": "v1,*** v1a,***",
        "x-slack-signature": "v0=***",
        "x-webhook-secret": HIDDEN,
        "authorization": HIDDEN,
        "cookie": HIDDEN,
        "x-gitlab-token": HIDDEN,
        "x-custom-anything": HIDDEN,
    }


@pytest.mark.parametrize(
    "value",
    [
        "s3cr3t",  # a secret where a signature goes
        "mysecret=abc",  # no label a sender uses
        "t=s3cr3t,v1=abc",  # Stripe's timestamp that is none
    ],
)
def test_a_signature_header_of_another_shape_keeps_nothing_of_its_value(value: str) -> None:
    shown = redacted_headers({"stripe-signature": value, "x-hub-signature-256": value})
    assert all("s3cr3t" not in v and "abc" not in v for v in shown.values()), shown
    assert "mysecret" not in str(shown)


def test_kept_values_are_cut_and_headers_bounded() -> None:
    kept = redacted_headers({"user-agent": "x" * 5000, **{f"x-h-{n}": "v" for n in range(100)}})
    assert len(kept["user-agent"]) == 500
    assert len(kept) == 64


def test_status_filters_read_as_typed() -> None:
    assert parse_status_filter(None) is None
    assert parse_status_filter(" ") is None
    assert parse_status_filter("Refused") == "refused"
    assert parse_status_filter("accepted") == "accepted"
    assert parse_status_filter("401") == 401
    for wrong in ("4xx", "99", "600", "ok", "4²1", "\u0664\u0660\u0661", "0401"):
        with pytest.raises(ValueError, match="status must be"):
            parse_status_filter(wrong)


async def _hook(store: SqlStore) -> Webhook:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    return await store.insert(
        Webhook(workspace_id=ws.id, name="ci", channel="local:ops", prompt="p", token_hash="h")
    )


async def _rows(store: SqlStore, hook: Webhook, n: int) -> list[Delivery]:
    """The webhook's log once it holds ``n`` rows (rows are written after the call)."""
    return await wait_until(
        lambda: store.webhook_deliveries(hook.id, limit=10_000),
        lambda rows: len(rows) >= n,
        what=f"{n} rows logged",
    )


def _refuse(log: DeliveryLog, hook: Webhook) -> None:
    log.answered(
        hook.id,
        429,
        "rate_limited",
        headers={"content-type": "application/json"},
        body_bytes=12,
        client=("198.51.100.4", 40000),
    )


async def test_a_flood_of_refusals_writes_a_bounded_number_of_rows_and_counts_the_rest(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    mock_clock.rate, mock_clock.autojump_threshold = 1.0, _IDLE_S
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await _hook(store)
        log = DeliveryLog(store, keep=1000)
        for _ in range(REFUSAL_ROWS_BURST + 50):
            _refuse(log, hook)
        rows = await _rows(store, hook, REFUSAL_ROWS_BURST)
        assert {(d.status, d.reason, d.source, d.omitted) for d in rows} == {
            (429, "rate_limited", "198.51.100.4", 0)
        }
        await trio.sleep(1)  # the bound refills: the next row says what was left out
        _refuse(log, hook)
        newest = (await _rows(store, hook, REFUSAL_ROWS_BURST + 1))[0]
        assert newest.omitted == 50
        assert len(await store.webhook_deliveries(hook.id, limit=10_000)) == REFUSAL_ROWS_BURST + 1


def _duplicate(log: DeliveryLog, hook: Webhook) -> None:
    log.answered(
        hook.id,
        200,
        "duplicate",
        headers={"content-type": "application/json"},
        body_bytes=12,
        client=("198.51.100.4", 40000),
        event_id="ev_1",
    )


async def test_rows_left_out_carry_the_refusals_only_on_whatever_row_comes_next(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    # Duplicates share the rate bound but are no refusals: the overview counts
    # ``omitted`` as refused deliveries, so only refusals left out are carried.
    mock_clock.rate, mock_clock.autojump_threshold = 1.0, _IDLE_S
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await _hook(store)
        log = DeliveryLog(store, keep=1000)
        for _ in range(REFUSAL_ROWS_BURST):
            _refuse(log, hook)
        for _ in range(7):
            _refuse(log, hook)
            _duplicate(log, hook)
        await _rows(store, hook, REFUSAL_ROWS_BURST)
        await trio.sleep(1)  # the bound refills: a duplicate's row carries the refusals
        _duplicate(log, hook)
        newest = (await _rows(store, hook, REFUSAL_ROWS_BURST + 1))[0]
        assert (newest.status, newest.omitted) == (200, 7)


async def test_the_trimmer_keeps_the_bound_once_counted_and_sweeps_old_rows_at_start(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    mock_clock.rate, mock_clock.autojump_threshold = 1.0, _IDLE_S
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await _hook(store)
        old = Delivery(
            webhook_id=hook.id,
            received_at=utcnow() - timedelta(days=31),
            status=401,
            reason="invalid_signature",
            body_bytes=1,
        )
        written = trio.Event()

        def done(result: outcome.Outcome[int]) -> None:
            assert result.unwrap() == 1
            written.set()

        store.log_deliveries_nowait([old], done)
        await written.wait()
        log = DeliveryLog(store, keep=10, max_age_s=30 * 86400)
        async with trio.open_nursery() as nursery:
            await nursery.start(log.serve)
            # The sweep at start deletes the old row.
            await wait_until(
                lambda: store.webhook_deliveries(hook.id, limit=10),
                lambda rows: not rows,
                what="the old row swept",
            )
            for _ in range(35):
                _refuse(log, hook)
            rows = await _rows(store, hook, 35)
            # The overview's rollup has not run yet (no mark): it counts refusals from
            # these rows, so the trims after each row keep them all.
            await trio.sleep(10)
            assert len(await store.webhook_deliveries(hook.id, limit=100)) == 35
            # Once counted, the next trim brings the log back to its bound.
            counted = max(d.id or 0 for d in rows)
            await store.roll_up([], [], mark=None, to=RollupMark(minute=0, delivery_id=counted))
            _refuse(log, hook)
            await wait_until(
                lambda: store.webhook_deliveries(hook.id, limit=100),
                lambda rows: len(rows) == 10,
                what="the log trimmed to its bound",
            )
            log.close()
        assert len(await store.webhook_deliveries(hook.id, limit=100)) == 10


async def test_no_log_writes_nothing(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await _hook(store)
        log = DeliveryLog(store, keep=0)
        _refuse(log, hook)
        async with trio.open_nursery() as nursery:
            await nursery.start(log.serve)
            log.close()
        assert await store.webhook_deliveries(hook.id, limit=10) == []
