"""The leases of :class:`~agentws.approvals.runs.ApprovalRuns` on trio's clock, autojumped.

An instance renews the lease of a call it runs every ``_RENEW_S``, each
time to ``_LEASE_S`` ahead, and stops once the lease is no longer its own;
every ``_LAPSE_EVERY_S`` it fails the calls whose lease ran out (an instance
died running them), recording each in the audit log. When a lease has run
out is the store's business (wall clock, ``lease_expires_at``: see
tests/contract/test_approval_runs_store.py); when the instance looks is
trio's, which jumps here. The store is an in-memory stand-in: a query run in
a thread would let the autojump clock run ahead while it works.
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from agentws.approvals import runs
from agentws.approvals.runs import ApprovalRuns
from agentws.common.changes import ChangeFeed
from agentws.domain.models import Approval, ApprovalStatus, AuditEntry, Capability
from agentws.domain.rules import utcnow
from agentws.store.sql_records import R
from tests.unit.store_fakes import (
    UnusedApprovalDecisions,
    UnusedApprovalRuns,
    UnusedCatalog,
    UnusedChanges,
    UnusedRecords,
)

OWNER = "inst-a"


def _approved(**changes: Any) -> Approval:
    approval = Approval(
        group_id="grp_x",
        requested_by="tests",
        tool_name="third_send",
        capability=Capability.WRITE,
        definition_hash="d",
        arguments_hash="a",
        status=ApprovalStatus.APPROVED,
        expires_at=utcnow() + timedelta(days=1),
    )
    return attrs.evolve(approval, **changes)


@attrs.define(eq=False)
class _RunStore(
    UnusedRecords, UnusedApprovalDecisions, UnusedApprovalRuns, UnusedCatalog, UnusedChanges
):
    """The queries of the claim loop, on lists; a call's run stays in its first query
    (its group's lookup) until :attr:`release` is set. Its change feed cannot listen."""

    to_claim: list[Approval] = attrs.field(factory=list)
    to_lapse: list[Approval] = attrs.field(factory=list)
    #: (trio time, lease_expires_at - utcnow() in seconds) of each renewal.
    renewals: list[tuple[float, float]] = attrs.field(factory=list)
    renew_answers: list[bool] = attrs.field(factory=list)
    lapses: list[float] = attrs.field(factory=list)
    audit: list[AuditEntry] = attrs.field(factory=list)
    release: trio.Event = attrs.field(factory=trio.Event)

    async def claim_approvals(
        self, *, owner: str, lease_expires_at: datetime, limit: int
    ) -> list[Approval]:
        await trio.lowlevel.checkpoint()
        claimed, self.to_claim = self.to_claim[:limit], self.to_claim[limit:]
        return [
            attrs.evolve(a, lease_owner=owner, lease_expires_at=lease_expires_at) for a in claimed
        ]

    async def renew_approval_lease(
        self, approval_id: str, *, owner: str, lease_expires_at: datetime
    ) -> bool:
        await trio.lowlevel.checkpoint()
        ahead = (lease_expires_at - utcnow()).total_seconds()
        self.renewals.append((trio.current_time(), ahead))
        return self.renew_answers.pop(0) if self.renew_answers else True

    async def lapse_approval_leases(self, *, now: datetime, error: str) -> list[Approval]:
        await trio.lowlevel.checkpoint()
        self.lapses.append(trio.current_time())
        lapsed, self.to_lapse = self.to_lapse, []
        return [attrs.evolve(a, status=ApprovalStatus.FAILED, error=error) for a in lapsed]

    @property
    def notifies(self) -> bool:
        return False

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        await self.release.wait()
        return None  # the group is gone: the call ends without running anything

    async def finish_approval(
        self,
        approval_id: str,
        *,
        owner: str,
        status: ApprovalStatus,
        result: dict[str, Any] | None,
        error: str | None,
        now: datetime,
    ) -> Approval | None:
        await trio.lowlevel.checkpoint()
        return _approved(id=approval_id, status=status, error=error)

    async def insert(self, record: R) -> R:
        await trio.lowlevel.checkpoint()
        if isinstance(record, AuditEntry):
            self.audit.append(record)
        return record


@asynccontextmanager
async def _running(store: _RunStore) -> AsyncIterator[ApprovalRuns]:
    instance = ApprovalRuns(
        store,
        runner=None,  # type: ignore[arg-type]
        keys=types.SimpleNamespace(optional=lambda: None),  # type: ignore[arg-type]
        changes=ChangeFeed(store),
        owner=OWNER,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(instance.serve)
        yield instance
        store.release.set()
        instance.close()


async def test_a_running_call_renews_its_lease_every_renew_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = _RunStore(to_claim=[_approved()])
    async with _running(store):
        started = trio.current_time()
        await trio.sleep(runs._LEASE_S * 3 + 1)
        times = [at - started for at, _ in store.renewals]
        # The lease never came closer than _LEASE_S - _RENEW_S to running out.
        assert times == pytest.approx(
            [runs._RENEW_S * n for n in range(1, len(times) + 1)], abs=0.01
        )
        assert len(times) == int((runs._LEASE_S * 3 + 1) // runs._RENEW_S)
        assert all(ahead == pytest.approx(runs._LEASE_S, abs=1) for _, ahead in store.renewals)


async def test_renewing_stops_once_the_lease_is_lost(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = _RunStore(to_claim=[_approved()], renew_answers=[True, False])
    async with _running(store):
        await trio.sleep(runs._RENEW_S * 10)
        assert len(store.renewals) == 2


async def test_lapsed_leases_are_looked_for_every_lapse_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = _RunStore()
    store.release.set()
    async with _running(store):
        started = trio.current_time()
        await trio.sleep(runs._LAPSE_EVERY_S / 2)
        cut_off = _approved(status=ApprovalStatus.RUNNING, lease_owner="dead-instance")
        store.to_lapse.append(cut_off)
        await trio.sleep(runs._LAPSE_EVERY_S * 0.4)
        assert store.audit == []
        await trio.sleep(runs._LAPSE_EVERY_S * 2.2)
        (entry,) = store.audit
        assert (entry.action, entry.target) == ("approval.execute", cut_off.id)
        assert entry.detail["instance"] == "dead-instance"
        assert entry.detail["outcome"] == "failed"
    sweeps = [at - started for at in store.lapses]
    assert sweeps[:4] == pytest.approx([runs._LAPSE_EVERY_S * n for n in range(4)], abs=0.01)
