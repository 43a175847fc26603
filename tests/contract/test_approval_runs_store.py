"""Approved calls claimed under a lease, retries, and confirm tokens, on SQLite and PostgreSQL.

- ``claim_approvals`` hands each approved call to one claimer, however many
  claim at once (on PostgreSQL with ``FOR UPDATE SKIP LOCKED``), oldest
  first, never a pending, running or finished one;
- only the lease's holder renews it and records the outcome;
- ``lapse_approval_leases`` fails the calls whose lease ran out, never
  making them claimable again;
- ``retry_approval`` puts a failed call back to approved, once;
- a confirm token is taken once, only with the bearer token it was given
  to; a bearer token holds a bounded number, and expired ones are swept.
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest
import trio
import trio.lowlevel

from agentws.domain.models import Approval, ApprovalStatus, ConfirmToken, McpToken
from agentws.store import SqlStore
from tests.contract.test_approval_store import World, _approval, world

LEASE = timedelta(seconds=30)


async def _approve(store: SqlStore, w: World, n: int) -> Approval:
    pending = await store.insert(_approval(w, n))
    decided = await store.decide_approval(
        pending.id, status=ApprovalStatus.APPROVED, decided_by="admin:alice", reason=None, now=w.now
    )
    assert decided is not None
    return decided


async def test_approved_calls_are_claimed_oldest_first_and_only_once(store: SqlStore) -> None:
    w = await world(store)
    approved = [await _approve(store, w, n) for n in (3, 1, 2)]
    await store.insert(_approval(w, 4))  # pending: not claimable
    await store.insert(_approval(w, 5, status=ApprovalStatus.FAILED, error="x"))
    lease = w.now + LEASE
    first = await store.claim_approvals(owner="a", lease_expires_at=lease, limit=2)
    oldest = sorted(approved, key=lambda a: a.created_at)
    assert first == [
        attrs.evolve(a, lease_owner="a", lease_expires_at=lease, attempts=1) for a in oldest[:2]
    ]
    rest = await store.claim_approvals(owner="b", lease_expires_at=lease, limit=10)
    assert [a.id for a in rest] == [oldest[2].id]
    assert rest[0].lease_owner == "b"
    assert await store.claim_approvals(owner="c", lease_expires_at=lease, limit=10) == []
    assert await store.claim_approvals(owner="c", lease_expires_at=lease, limit=0) == []


async def test_racing_claimers_never_share_a_call(store: SqlStore) -> None:
    w = await world(store)
    ids = {(await _approve(store, w, n)).id for n in range(30)}
    got: dict[str, list[str]] = {}

    async def claim(owner: str) -> None:
        got[owner] = []
        while batch := await store.claim_approvals(
            owner=owner, lease_expires_at=w.now + LEASE, limit=3
        ):
            got[owner] += [a.id for a in batch]
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for owner in ("a", "b", "c", "d"):
            nursery.start_soon(claim, owner)
    claimed = [i for owned in got.values() for i in owned]
    assert sorted(claimed) == sorted(ids)  # each once, none lost
    for owner, owned in got.items():
        for approval in await store.approvals(owned):
            assert (approval.lease_owner, approval.attempts) == (owner, 1)


async def test_only_the_lease_holder_renews_and_finishes(store: SqlStore) -> None:
    w = await world(store)
    approved = await _approve(store, w, 1)
    (claimed,) = await store.claim_approvals(owner="a", lease_expires_at=w.now + LEASE, limit=1)
    later = w.now + 2 * LEASE
    assert not await store.renew_approval_lease(approved.id, owner="b", lease_expires_at=later)
    assert await store.renew_approval_lease(approved.id, owner="a", lease_expires_at=later)
    assert (await store.get(Approval, approved.id)).lease_expires_at == later
    assert (
        await store.finish_approval(
            approved.id, owner="b", status=ApprovalStatus.EXECUTED, result={}, error=None, now=later
        )
        is None
    )
    done = await store.finish_approval(
        approved.id, owner="a", status=ApprovalStatus.EXECUTED, result={}, error=None, now=later
    )
    assert done == attrs.evolve(
        claimed,
        status=ApprovalStatus.EXECUTED,
        result={},
        finished_at=later,
        lease_expires_at=None,
    )
    # Finished: nothing renews it, and it is never claimed again.
    assert not await store.renew_approval_lease(approved.id, owner="a", lease_expires_at=later)
    assert await store.claim_approvals(owner="a", lease_expires_at=later, limit=5) == []


async def test_a_lapsed_lease_fails_the_call_for_good(store: SqlStore) -> None:
    w = await world(store)
    lapsing = await _approve(store, w, 1)
    await store.claim_approvals(owner="a", lease_expires_at=w.now + LEASE, limit=1)
    live = await _approve(store, w, 2)
    await store.claim_approvals(owner="b", lease_expires_at=w.now + 2 * LEASE, limit=1)
    waiting = await _approve(store, w, 3)  # approved, not claimed: it has no lease to lapse

    assert await store.lapse_approval_leases(now=w.now + LEASE / 2, error="gone") == []
    at = w.now + LEASE
    (lapsed,) = await store.lapse_approval_leases(now=at, error="gone")
    assert lapsed.id == lapsing.id
    assert (lapsed.status, lapsed.error, lapsed.finished_at) == (ApprovalStatus.FAILED, "gone", at)
    assert (lapsed.lease_owner, lapsed.lease_expires_at) == ("a", None)
    assert await store.lapse_approval_leases(now=at, error="gone") == []
    # Its holder can no longer record an outcome or renew it; nobody claims it.
    assert not await store.renew_approval_lease(lapsing.id, owner="a", lease_expires_at=at)
    assert (
        await store.finish_approval(
            lapsing.id, owner="a", status=ApprovalStatus.EXECUTED, result={}, error=None, now=at
        )
        is None
    )
    (claimed,) = await store.claim_approvals(owner="c", lease_expires_at=at + LEASE, limit=5)
    assert claimed.id == waiting.id
    assert (await store.get(Approval, live.id)).lease_owner == "b"


async def test_a_failed_call_is_retried_once(store: SqlStore) -> None:
    w = await world(store)
    approved = await _approve(store, w, 1)
    await store.claim_approvals(owner="a", lease_expires_at=w.now + LEASE, limit=1)
    failed = await store.finish_approval(
        approved.id,
        owner="a",
        status=ApprovalStatus.FAILED,
        result=None,
        error="upstream down",
        now=w.now,
    )
    assert failed is not None
    await store.take_approval_report(approved.id, w.now)

    outcomes = []

    async def retry() -> None:
        outcomes.append(await store.retry_approval(approved.id))

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(retry)
    (retried,) = [o for o in outcomes if o is not None]
    assert outcomes.count(None) == 3
    assert retried == attrs.evolve(
        failed,
        status=ApprovalStatus.APPROVED,
        error=None,
        finished_at=None,
        lease_owner=None,
        lease_expires_at=None,
        reported_at=None,
    )
    (again,) = await store.claim_approvals(owner="b", lease_expires_at=w.now + LEASE, limit=5)
    assert (again.id, again.attempts, again.lease_owner) == (approved.id, 2, "b")
    # Running, executed, pending and denied calls are not retried.
    assert await store.retry_approval(approved.id) is None
    pending = await store.insert(_approval(w, 2))
    assert await store.retry_approval(pending.id) is None
    assert await store.retry_approval("apr_missing") is None


def _confirm(
    w: World, n: int, *, token: McpToken | None = None, ttl_s: float = 300
) -> ConfirmToken:
    created = w.now + timedelta(seconds=n)
    return ConfirmToken(
        id=f"hash-{n}",
        token_id=(token or w.token).id,
        tool_name="github_delete",
        arguments_hash=f"args-{n}",
        created_at=created,
        expires_at=created + timedelta(seconds=ttl_s),
    )


async def test_a_confirm_token_is_taken_once_with_its_own_bearer_token(store: SqlStore) -> None:
    w = await world(store)
    other = await store.insert(attrs.evolve(w.token, id="tok_other", name="other", token_hash="h"))
    given = _confirm(w, 1)
    await store.issue_confirm_token(given, keep=16)
    assert await store.take_confirm_token(given.id, other.id) is None
    assert await store.take_confirm_token("hash-missing", w.token.id) is None
    taken: list[ConfirmToken | None] = []

    async def take() -> None:
        taken.append(await store.take_confirm_token(given.id, w.token.id))

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(take)
    assert [t for t in taken if t is not None] == [given]
    assert await store.take_confirm_token(given.id, w.token.id) is None


async def test_confirm_tokens_are_bounded_per_bearer_token_and_expired_ones_swept(
    store: SqlStore,
) -> None:
    w = await world(store)
    other = await store.insert(attrs.evolve(w.token, id="tok_other", name="other", token_hash="h"))
    theirs = _confirm(w, 0, token=other, ttl_s=2)
    await store.issue_confirm_token(theirs, keep=3)
    mine = [_confirm(w, n) for n in range(1, 6)]
    for token in mine:
        await store.issue_confirm_token(token, keep=3)
    # The newest three of mine; theirs expired (at +2 s) when the fourth of mine came.
    assert await store.select(ConfirmToken) == mine[2:]
    assert await store.take_confirm_token(theirs.id, other.id) is None
    # Deleting the bearer token deletes its confirm tokens.
    await store.delete(McpToken, w.token.id)
    assert await store.count(ConfirmToken) == 0


@pytest.mark.parametrize("keep", [1, 2])
async def test_keeping_few_confirm_tokens(store: SqlStore, keep: int) -> None:
    w = await world(store)
    for n in range(4):
        await store.issue_confirm_token(_confirm(w, n), keep=keep)
    assert [t.id for t in await store.select(ConfirmToken)] == [
        f"hash-{n}" for n in range(4 - keep, 4)
    ]
