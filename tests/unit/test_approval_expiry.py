"""Approval expiry by :class:`~agentws.approvals.notifier.ApprovalWatch`, on the autojump clock.

The watch sweeps pending requests past their time every ``_EXPIRE_S`` of
trio's clock, recording each in the audit log, and tells a session waiting
on a request past its time at its next poll (``_POLL_S``), expiring it
first. Whether a request is past its time is the store's business (wall
clock, ``expires_at``); when the watch looks is trio's, which jumps here.
The store is an in-memory stand-in: a query run in a thread would let the
autojump clock run ahead while it works.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, cast

import attrs
import pytest
import trio
import trio.testing

from agentws.approvals import notifier
from agentws.approvals.notifier import ACTOR, ApprovalWatch
from agentws.common.changes import ChangeFeed
from agentws.domain.models import (
    Approval,
    ApprovalOutcome,
    ApprovalOutcomes,
    ApprovalStatus,
    AuditEntry,
    Capability,
    Group,
)
from agentws.domain.rules import utcnow
from agentws.store.sql_records import R
from tests.unit.store_fakes import UnusedApprovalDecisions, UnusedChanges, UnusedRecords


class _ApprovalStore(UnusedRecords, UnusedApprovalDecisions, UnusedChanges):
    """The queries the watch makes, on a dict; its change feed cannot listen (it polls)."""

    @property
    def notifies(self) -> bool:
        return False

    def __init__(self) -> None:
        self.approvals_by_id: dict[str, Approval] = {}
        self.audit: list[AuditEntry] = []
        self.group = Group(workspace_id="ws_x", slug="ops", name="Ops")

    def add(self, approval: Approval) -> None:
        self.approvals_by_id[approval.id] = approval

    async def expire_approvals(self, now: datetime) -> list[Approval]:
        await trio.lowlevel.checkpoint()
        expired = []
        for approval in list(self.approvals_by_id.values()):
            if approval.status is ApprovalStatus.PENDING and approval.expires_at <= now:
                done = attrs.evolve(approval, status=ApprovalStatus.EXPIRED, finished_at=now)
                self.approvals_by_id[approval.id] = done
                expired.append(done)
        return expired

    async def approval_outcomes(self, ids: list[str], *, now: datetime) -> ApprovalOutcomes:
        await trio.lowlevel.checkpoint()
        found = [self.approvals_by_id[i] for i in ids if i in self.approvals_by_id]
        settled = [
            a
            for a in found
            if a.status.finished or (a.status is ApprovalStatus.PENDING and a.expires_at <= now)
        ]
        fields = [f.name for f in attrs.fields(ApprovalOutcome)]
        outcomes = (
            ApprovalOutcome(**{name: getattr(a, name) for name in fields})
            for a in sorted(settled, key=lambda a: (a.created_at, a.id))
        )
        return ApprovalOutcomes(frozenset(a.id for a in found), tuple(outcomes))

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        await trio.lowlevel.checkpoint()
        assert kind is Group, kind
        return cast(R, self.group)

    async def insert(self, record: R) -> R:
        await trio.lowlevel.checkpoint()
        if isinstance(record, AuditEntry):
            self.audit.append(record)
        return record


@attrs.define
class _Listener:
    """A session supervisor that waits for some requests and notes what it is told."""

    waiting: set[str] = attrs.field(factory=set)
    told: list[tuple[str, str, float]] = attrs.field(factory=list)

    def awaited(self) -> set[str]:
        return set(self.waiting)

    async def deliver(self, approval: ApprovalOutcome, data: dict[str, Any]) -> int:
        self.waiting.discard(approval.id)
        self.told.append((approval.id, data["status"], trio.current_time()))
        return 1

    def forget(self, approval_id: str) -> None:
        self.waiting.discard(approval_id)


def _overdue() -> Approval:
    """A pending request whose time passed a minute ago."""
    return Approval(
        group_id="grp_x",
        requested_by="tests",
        tool_name="third_send",
        capability=Capability.WRITE,
        definition_hash="d",
        arguments_hash="a",
        expires_at=utcnow() - timedelta(minutes=1),
    )


@asynccontextmanager
async def _watching(store: _ApprovalStore, listener: _Listener) -> AsyncIterator[ApprovalWatch]:
    watch = ApprovalWatch(store, listener, ChangeFeed(store))
    async with trio.open_nursery() as nursery:
        await nursery.start(watch.serve)
        yield watch
        watch.close()


async def test_overdue_requests_are_swept_every_expire_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store, listener = _ApprovalStore(), _Listener()
    async with _watching(store, listener):
        started = trio.current_time()
        await trio.sleep(notifier._EXPIRE_S / 10)  # the first sweep ran at the start
        overdue = _overdue()
        store.add(overdue)
        await trio.sleep(notifier._EXPIRE_S * 0.8)
        assert store.approvals_by_id[overdue.id].status is ApprovalStatus.PENDING
        assert store.audit == []
        await trio.sleep(notifier._EXPIRE_S * 0.2)
        assert trio.current_time() - started == pytest.approx(notifier._EXPIRE_S * 1.1)
        assert store.approvals_by_id[overdue.id].status is ApprovalStatus.EXPIRED
        (entry,) = store.audit
        assert (entry.actor, entry.action, entry.target) == (ACTOR, "approval.expire", overdue.id)
    assert listener.told == []  # nobody waited for it


async def test_a_waiting_session_hears_of_the_expiry_at_the_next_poll(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store, listener = _ApprovalStore(), _Listener()
    async with _watching(store, listener):
        await trio.sleep(notifier._EXPIRE_S / 10)
        overdue = _overdue()
        store.add(overdue)
        listener.waiting.add(overdue.id)
        added = trio.current_time()
        await trio.sleep(notifier._EXPIRE_S / 2)
    ((told_id, status, at),) = listener.told
    assert (told_id, status) == (overdue.id, "expired")
    assert at - added <= notifier._POLL_S
    # Expired (and recorded) before the session was told, not at the next sweep.
    assert store.approvals_by_id[overdue.id].status is ApprovalStatus.EXPIRED
    assert [e.action for e in store.audit] == ["approval.expire"]
