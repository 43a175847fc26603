"""The approval queue, tool permissions and the audit log, on SQLite and PostgreSQL.

These are the store operations that need more than the generic ones:
``insert_many`` (chunked multi-row inserts in one transaction),
``decide_approval`` / ``finish_approval`` / ``expire_approvals`` (each move
of an approval guarded by its current status, so racing callers cannot both
win), ``tool_permissions`` (a group's own rows and its workspace's), the two
partial unique indexes on ``tool_permissions``, the catalog version moving
with permissions, and ``audit_log`` (newest ``limit``, filters, paging by
``after``).

The world of these tests (see :func:`world`): workspace ``acme`` with groups
``ops`` and ``dev`` and a token of ``ops``, and workspace ``other`` with a
group ``foreign``. Times are relative to one ``now`` taken at the start of a
test and passed explicitly, so no test depends on the clock moving.
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest
import trio

from agentws.core.errors import ConflictError
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    Capability,
    Group,
    McpToken,
    Permission,
    ToolPermission,
    Workspace,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.store import SqlStore
from agentws.tools.approval_queue import outcome_data
from tests.tiers import examples

# Parents are created this long before ``now``, so they sort before anything else.
_PARENTS_AGO = timedelta(days=1)
_TTL = timedelta(hours=1)
# The instance that runs approved calls in these tests.
OWNER = "inst-1"


@attrs.frozen
class World:
    now: datetime
    ws: Workspace
    other_ws: Workspace
    ops: Group
    dev: Group
    foreign: Group
    token: McpToken


async def world(store: SqlStore) -> World:
    now = utcnow()
    born = now - _PARENTS_AGO
    ws = await store.insert(Workspace(slug="acme", name="Acme", created_at=born))
    other_ws = await store.insert(Workspace(slug="other", name="Other", created_at=born))
    ops = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops", created_at=born))
    dev = await store.insert(Group(workspace_id=ws.id, slug="dev", name="Dev", created_at=born))
    foreign = await store.insert(
        Group(workspace_id=other_ws.id, slug="foreign", name="Foreign", created_at=born)
    )
    token = await store.insert(
        McpToken(
            group_id=ops.id,
            name="laptop",
            token_hash=hashlib.sha256(b"secret token").hexdigest(),
            hint="oken",
            created_at=born,
        )
    )
    return World(now, ws, other_ws, ops, dev, foreign, token)


def _approval(
    w: World,
    n: int,
    *,
    status: ApprovalStatus = ApprovalStatus.PENDING,
    expires_in: timedelta = _TTL,
    **changes: Any,
) -> Approval:
    """The n-th approval of a test: created n seconds before ``now``, later as n grows."""
    tool = f"github_merge_{n}"
    arguments = {"repo": "acme/app", "pr": n, "nested": {"labels": ["a", "b"], "draft": False}}
    created = w.now - timedelta(minutes=10) + timedelta(seconds=n, microseconds=n)
    return Approval(
        group_id=w.ops.id,
        token_id=w.token.id,
        session_id=f"session-{n}",
        requested_by=f"mcp:{w.token.id}",
        tool_name=tool,
        capability=Capability.WRITE,
        definition_hash=hashlib.sha256(tool.encode()).hexdigest(),
        arguments=arguments,
        sealed_arguments=b"\x00sealed\xff" if n % 2 else None,
        arguments_hash=arguments_hash(tool, arguments),
        status=status,
        created_at=created,
        expires_at=w.now + expires_in,
        **changes,
    )


def _permission(
    w: World,
    n: int,
    *,
    workspace: Workspace | None = None,
    group: Group | None = None,
    tool: str = "github_merge",
    permission: Permission = Permission.ALLOW,
) -> ToolPermission:
    created = w.now - timedelta(minutes=10) + timedelta(seconds=n)
    return ToolPermission(
        workspace_id=(workspace or w.ws).id,
        group_id=group.id if group is not None else None,
        tool_name=tool,
        permission=permission,
        definition_hash=hashlib.sha256(tool.encode()).hexdigest(),
        set_by="admin:alice",
        created_at=created,
        updated_at=created,
    )


def _entry(
    w: World, n: int, *, action: str = "group.create", workspace: Workspace | None = None
) -> AuditEntry:
    return AuditEntry(
        workspace_id=workspace.id if workspace is not None else None,
        actor=f"admin:{n % 3}",
        action=action,
        target=f"thing:{n}",
        detail={"n": n, "nested": {"list": [1, "two", None]}},
        created_at=w.now - timedelta(hours=2) + timedelta(seconds=n, microseconds=n),
    )


# -- insert_many ---------------------------------------------------------------


async def test_insert_many_stores_more_than_one_chunk_in_one_call(store: SqlStore) -> None:
    w = await world(store)
    entries = [
        _entry(w, n, workspace=w.ws if n % 2 else None, action=f"bulk.{n % 5}") for n in range(450)
    ]
    await store.insert_many(entries)
    assert await store.count(AuditEntry) == 450
    assert await store.select(AuditEntry) == entries
    assert await store.select(AuditEntry, workspace_id=w.ws.id) == entries[1::2]
    assert await store.get(AuditEntry, entries[449].id) == entries[449]


async def test_insert_many_of_nothing_is_a_no_op(store: SqlStore) -> None:
    w = await world(store)
    await store.insert(_entry(w, 0))
    version = await store.catalog_version()
    await store.insert_many([])
    assert await store.count(AuditEntry) == 1
    assert await store.catalog_version() == version


async def test_insert_many_is_all_or_nothing(store: SqlStore) -> None:
    w = await world(store)
    entries = [_entry(w, n) for n in range(300)]
    # The duplicate id is in the second chunk: the first chunk must not stay.
    entries[250] = attrs.evolve(entries[250], id=entries[0].id)
    with pytest.raises(ConflictError):
        await store.insert_many(entries)
    assert await store.count(AuditEntry) == 0


# -- decide_approval -----------------------------------------------------------


async def test_approving_a_pending_approval_returns_it_decided(store: SqlStore) -> None:
    w = await world(store)
    pending = await store.insert(_approval(w, 1))
    got = await store.decide_approval(
        pending.id,
        status=ApprovalStatus.APPROVED,
        decided_by="admin:alice",
        reason="looks fine",
        now=w.now,
    )
    expected = attrs.evolve(
        pending,
        status=ApprovalStatus.APPROVED,
        decided_by="admin:alice",
        reason="looks fine",
        decided_at=w.now,
        finished_at=None,
    )
    assert got == expected
    assert await store.get(Approval, pending.id) == expected


async def test_denying_a_pending_approval_finishes_it(store: SqlStore) -> None:
    w = await world(store)
    pending = await store.insert(_approval(w, 2))
    got = await store.decide_approval(
        pending.id, status=ApprovalStatus.DENIED, decided_by="admin:bob", reason=None, now=w.now
    )
    expected = attrs.evolve(
        pending,
        status=ApprovalStatus.DENIED,
        decided_by="admin:bob",
        reason=None,
        decided_at=w.now,
        finished_at=w.now,
    )
    assert got == expected
    assert await store.get(Approval, pending.id) == expected


@pytest.mark.parametrize("first", [ApprovalStatus.APPROVED, ApprovalStatus.DENIED])
@pytest.mark.parametrize("second", [ApprovalStatus.APPROVED, ApprovalStatus.DENIED])
async def test_an_approval_is_decided_once(
    store: SqlStore, first: ApprovalStatus, second: ApprovalStatus
) -> None:
    w = await world(store)
    pending = await store.insert(_approval(w, 1))
    decided = await store.decide_approval(
        pending.id, status=first, decided_by="admin:alice", reason="first", now=w.now
    )
    assert decided is not None
    later = w.now + timedelta(seconds=5)
    again = await store.decide_approval(
        pending.id, status=second, decided_by="admin:bob", reason="second", now=later
    )
    assert again is None
    assert await store.get(Approval, pending.id) == decided


@pytest.mark.parametrize("expires_in", [timedelta(seconds=-1), timedelta(0)])
async def test_an_expired_approval_cannot_be_decided(
    store: SqlStore, expires_in: timedelta
) -> None:
    w = await world(store)
    pending = await store.insert(_approval(w, 1, expires_in=expires_in))
    for status in (ApprovalStatus.APPROVED, ApprovalStatus.DENIED):
        got = await store.decide_approval(
            pending.id, status=status, decided_by="admin:alice", reason=None, now=w.now
        )
        assert got is None
    assert await store.get(Approval, pending.id) == pending


async def test_deciding_a_missing_approval_is_none(store: SqlStore) -> None:
    await world(store)
    got = await store.decide_approval(
        "apr_missing",
        status=ApprovalStatus.APPROVED,
        decided_by="admin:alice",
        reason=None,
        now=utcnow(),
    )
    assert got is None


async def _race(
    store: SqlStore, approval_id: str, deciders: dict[str, ApprovalStatus], now: datetime
) -> dict[str, Approval | None]:
    """Let each decider (name: status) decide the approval at once, in one nursery."""
    outcomes: dict[str, Approval | None] = {}

    async def decide(who: str, status: ApprovalStatus) -> None:
        outcomes[who] = await store.decide_approval(
            approval_id, status=status, decided_by=who, reason=f"decided by {who}", now=now
        )

    async with trio.open_nursery() as nursery:
        for who, status in deciders.items():
            nursery.start_soon(decide, who, status)
    assert set(outcomes) == set(deciders)
    return outcomes


@pytest.mark.parametrize(
    "deciders",
    [
        pytest.param(
            {"admin:alice": ApprovalStatus.APPROVED, "admin:bob": ApprovalStatus.APPROVED},
            id="approve-approve",
        ),
        pytest.param(
            {"admin:alice": ApprovalStatus.APPROVED, "admin:bob": ApprovalStatus.DENIED},
            id="approve-deny",
        ),
    ],
)
async def test_racing_deciders_decide_exactly_once(
    store: SqlStore, deciders: dict[str, ApprovalStatus]
) -> None:
    w = await world(store)
    for n in range(20):
        pending = await store.insert(_approval(w, n))
        outcomes = await _race(store, pending.id, deciders, w.now)
        winners = {who: got for who, got in outcomes.items() if got is not None}
        assert len(winners) == 1, (n, outcomes)
        ((who, got),) = winners.items()
        assert got == attrs.evolve(
            pending,
            status=deciders[who],
            decided_by=who,
            reason=f"decided by {who}",
            decided_at=w.now,
            finished_at=None if deciders[who] is ApprovalStatus.APPROVED else w.now,
        )
        assert await store.get(Approval, pending.id) == got


# -- finish_approval -----------------------------------------------------------


async def _approved(store: SqlStore, w: World, n: int) -> Approval:
    """An approval approved, and claimed by ``OWNER`` to run."""
    pending = await store.insert(_approval(w, n))
    decided = await store.decide_approval(
        pending.id, status=ApprovalStatus.APPROVED, decided_by="admin:alice", reason=None, now=w.now
    )
    assert decided is not None
    lease = w.now + timedelta(seconds=30)
    (claimed,) = await store.claim_approvals(owner=OWNER, lease_expires_at=lease, limit=10)
    assert claimed == attrs.evolve(decided, lease_owner=OWNER, lease_expires_at=lease, attempts=1)
    return claimed


async def test_finishing_an_approved_call_records_its_result(store: SqlStore) -> None:
    w = await world(store)
    approved = await _approved(store, w, 1)
    result = {
        "content": [{"type": "text", "text": "merged ✓"}],
        "structuredContent": {"sha": "abc123", "checks": {"ci": True, "count": 3, "none": None}},
        "isError": False,
    }
    done_at = w.now + timedelta(seconds=3)
    got = await store.finish_approval(
        approved.id,
        owner=OWNER,
        status=ApprovalStatus.EXECUTED,
        result=result,
        error=None,
        now=done_at,
    )
    expected = attrs.evolve(
        approved,
        status=ApprovalStatus.EXECUTED,
        result=result,
        error=None,
        finished_at=done_at,
        lease_expires_at=None,
    )
    assert got == expected
    assert await store.get(Approval, approved.id) == expected


async def test_finishing_a_failed_call_records_its_error(store: SqlStore) -> None:
    w = await world(store)
    approved = await _approved(store, w, 1)
    done_at = w.now + timedelta(seconds=3)
    got = await store.finish_approval(
        approved.id,
        owner=OWNER,
        status=ApprovalStatus.FAILED,
        result=None,
        error="tool definition changed",
        now=done_at,
    )
    expected = attrs.evolve(
        approved,
        status=ApprovalStatus.FAILED,
        result=None,
        error="tool definition changed",
        finished_at=done_at,
        lease_expires_at=None,
    )
    assert got == expected
    assert await store.get(Approval, approved.id) == expected


async def test_only_an_approved_call_can_be_finished(store: SqlStore) -> None:
    w = await world(store)
    pending = await store.insert(_approval(w, 1))
    denied = await store.insert(_approval(w, 2))
    denied = await store.decide_approval(
        denied.id, status=ApprovalStatus.DENIED, decided_by="admin:bob", reason="no", now=w.now
    )
    assert denied is not None
    expired = await store.insert(_approval(w, 3, status=ApprovalStatus.EXPIRED))
    finished = await _approved(store, w, 4)
    finished = await store.finish_approval(
        finished.id,
        owner=OWNER,
        status=ApprovalStatus.EXECUTED,
        result={"ok": 1},
        error=None,
        now=w.now,
    )
    assert finished is not None

    later = w.now + timedelta(seconds=9)
    for approval in (pending, denied, expired, finished):
        for status in (ApprovalStatus.EXECUTED, ApprovalStatus.FAILED):
            got = await store.finish_approval(
                approval.id,
                owner=OWNER,
                status=status,
                result={"late": True},
                error="late",
                now=later,
            )
            assert got is None, (approval.status, status)
        assert await store.get(Approval, approval.id) == approval
    assert (
        await store.finish_approval(
            "apr_missing",
            owner=OWNER,
            status=ApprovalStatus.EXECUTED,
            result=None,
            error=None,
            now=later,
        )
        is None
    )


# -- expire_approvals ----------------------------------------------------------


async def test_expire_approvals_expires_only_pending_ones_whose_time_is_up(
    store: SqlStore,
) -> None:
    w = await world(store)
    past = timedelta(minutes=-1)
    # Inserted out of creation order: the result is ordered by creation.
    late_due = await store.insert(_approval(w, 5, expires_in=past))
    due = await store.insert(_approval(w, 1, expires_in=timedelta(minutes=-30)))
    due_now = await store.insert(_approval(w, 3, expires_in=timedelta(0)))
    not_yet = await store.insert(_approval(w, 2, expires_in=timedelta(microseconds=1)))
    approved = await store.insert(
        _approval(w, 4, status=ApprovalStatus.APPROVED, expires_in=past, decided_by="a")
    )
    denied = await store.insert(
        _approval(w, 6, status=ApprovalStatus.DENIED, expires_in=past, decided_by="b")
    )
    executed = await store.insert(
        _approval(w, 7, status=ApprovalStatus.EXECUTED, expires_in=past, result={"ok": True})
    )
    failed = await store.insert(
        _approval(w, 8, status=ApprovalStatus.FAILED, expires_in=past, error="x")
    )

    expired = await store.expire_approvals(w.now)

    expected = [
        attrs.evolve(a, status=ApprovalStatus.EXPIRED, finished_at=w.now)
        for a in (due, due_now, late_due)
    ]
    assert expired == expected
    for approval in expected:
        assert await store.get(Approval, approval.id) == approval
    for untouched in (not_yet, approved, denied, executed, failed):
        assert await store.get(Approval, untouched.id) == untouched

    assert await store.expire_approvals(w.now) == []
    assert await store.get(Approval, not_yet.id) == not_yet

    # Once its time is up, the last pending one goes too, and nothing else.
    later = w.now + timedelta(seconds=1)
    assert await store.expire_approvals(later) == [
        attrs.evolve(not_yet, status=ApprovalStatus.EXPIRED, finished_at=later)
    ]
    assert await store.expire_approvals(later) == []
    assert await store.count(Approval, status=ApprovalStatus.EXPIRED) == 4
    assert await store.count(Approval, status=ApprovalStatus.PENDING) == 0


async def test_expire_approvals_with_nothing_due_is_empty(store: SqlStore) -> None:
    w = await world(store)
    assert await store.expire_approvals(w.now) == []
    pending = await store.insert(_approval(w, 1))
    assert await store.expire_approvals(w.now) == []
    assert await store.get(Approval, pending.id) == pending


async def test_an_expired_approval_cannot_be_decided_or_finished(store: SqlStore) -> None:
    w = await world(store)
    pending = await store.insert(_approval(w, 1, expires_in=timedelta(seconds=-1)))
    (expired,) = await store.expire_approvals(w.now)
    # Even at a time before it expired, an expired approval is no longer pending.
    before = w.now - timedelta(minutes=5)
    got = await store.decide_approval(
        pending.id, status=ApprovalStatus.APPROVED, decided_by="admin:a", reason=None, now=before
    )
    assert got is None
    got = await store.finish_approval(
        pending.id, owner=OWNER, status=ApprovalStatus.EXECUTED, result=None, error=None, now=w.now
    )
    assert got is None
    assert await store.get(Approval, pending.id) == expired


# -- tool_permissions ----------------------------------------------------------


async def test_tool_permissions_are_the_groups_own_and_its_workspaces(store: SqlStore) -> None:
    w = await world(store)
    # Inserted out of creation order: the result is ordered by creation.
    ops_merge = _permission(w, 2, group=w.ops, permission=Permission.DENY)
    ws_merge = _permission(w, 1, permission=Permission.REQUIRES_APPROVAL)
    ws_delete = _permission(w, 5, tool="github_delete", permission=Permission.DENY)
    ops_push = _permission(w, 3, group=w.ops, tool="github_push")
    dev_merge = _permission(w, 4, group=w.dev)
    other_ws_merge = _permission(w, 0, workspace=w.other_ws)
    foreign_merge = _permission(w, 6, workspace=w.other_ws, group=w.foreign)
    for permission in (
        ops_merge,
        ws_merge,
        ws_delete,
        ops_push,
        dev_merge,
        other_ws_merge,
        foreign_merge,
    ):
        await store.insert(permission)

    assert await store.tool_permissions(w.ws.id, w.ops.id) == [
        ws_merge,
        ops_merge,
        ops_push,
        ws_delete,
    ]
    assert await store.tool_permissions(w.ws.id, w.dev.id) == [ws_merge, dev_merge, ws_delete]
    assert await store.tool_permissions(w.other_ws.id, w.foreign.id) == [
        other_ws_merge,
        foreign_merge,
    ]
    # A group of another workspace gets only this workspace's own rows.
    assert await store.tool_permissions(w.ws.id, w.foreign.id) == [ws_merge, ws_delete]
    assert await store.tool_permissions(w.ws.id, "grp_missing") == [ws_merge, ws_delete]
    assert await store.tool_permissions("ws_missing", w.ops.id) == []


async def test_one_workspace_permission_per_tool(store: SqlStore) -> None:
    w = await world(store)
    await store.insert(_permission(w, 1))
    with pytest.raises(ConflictError):
        await store.insert(_permission(w, 2, permission=Permission.DENY))
    # Other tools, and the same tool in another workspace, are fine.
    await store.insert(_permission(w, 3, tool="github_push"))
    await store.insert(_permission(w, 4, workspace=w.other_ws))
    assert await store.count(ToolPermission) == 3


async def test_one_group_permission_per_tool(store: SqlStore) -> None:
    w = await world(store)
    await store.insert(_permission(w, 1, group=w.ops))
    with pytest.raises(ConflictError):
        await store.insert(_permission(w, 2, group=w.ops, permission=Permission.DENY))
    # Other groups, and other tools of the group, are fine.
    await store.insert(_permission(w, 3, group=w.dev))
    await store.insert(_permission(w, 4, group=w.ops, tool="github_push"))
    assert await store.count(ToolPermission) == 3


async def test_a_workspace_and_a_group_permission_for_one_tool_coexist(store: SqlStore) -> None:
    w = await world(store)
    workspace_level = await store.insert(_permission(w, 1))
    group_level = await store.insert(_permission(w, 2, group=w.ops, permission=Permission.DENY))
    assert await store.select(ToolPermission) == [workspace_level, group_level]
    # Moving the group's row to the workspace level collides with the workspace's.
    with pytest.raises(ConflictError):
        await store.update(attrs.evolve(group_level, group_id=None))
    # Moving the workspace's row to the group collides with the group's.
    with pytest.raises(ConflictError):
        await store.update(attrs.evolve(workspace_level, group_id=w.ops.id))
    assert await store.select(ToolPermission) == [workspace_level, group_level]


async def test_the_catalog_version_moves_with_tool_permissions(store: SqlStore) -> None:
    w = await world(store)
    versions = [await store.catalog_version()]

    async def moved() -> bool:
        versions.append(await store.catalog_version())
        return versions[-1] != versions[-2]

    permission = await store.insert(_permission(w, 1))
    assert await moved()
    changed = attrs.evolve(permission, permission=Permission.DENY, updated_at=w.now)
    await store.update(changed)
    assert await moved()
    await store.delete(ToolPermission, permission.id)
    assert await moved()
    await store.insert_many([_permission(w, 2), _permission(w, 3, group=w.ops)])
    assert await moved()
    # A failed insert leaves it alone.
    with pytest.raises(ConflictError):
        await store.insert(_permission(w, 4))
    assert not await moved()
    # Deleting a group deletes its permissions: that is a change too.
    await store.delete(Group, w.ops.id)
    assert await store.count(ToolPermission) == 1
    assert await moved()
    assert versions == sorted(versions)


# -- audit_log -----------------------------------------------------------------


@attrs.frozen
class Log:
    w: World
    entries: list[AuditEntry]

    def by_action(self, *actions: str) -> list[AuditEntry]:
        return [e for e in self.entries if e.action in actions]


async def audit_world(store: SqlStore) -> Log:
    w = await world(store)
    specs = [
        ("approval.request", w.ws),
        ("group.create", w.ws),
        ("approval.decide", w.other_ws),
        ("approvals", w.ws),  # starts with "approval" but not "approval."
        ("a%b.x", w.ws),
        ("axb.x", None),
        ("a_b.x", w.ws),
        ("approval.execute", w.ws),
        ("APPROVAL.decide", w.ws),  # prefixes are case-sensitive
        ("übung.start", None),
        ("token.revoke", None),
        ("approval.expire", w.ws),
    ]
    entries = [
        _entry(w, n, action=action, workspace=workspace)
        for n, (action, workspace) in enumerate(specs)
    ]
    # Inserted newest first: the log is ordered by time, not by insertion.
    for entry in reversed(entries):
        await store.insert(entry)
    return Log(w, entries)


async def test_audit_log_is_the_newest_entries_oldest_first(store: SqlStore) -> None:
    log = await audit_world(store)
    assert await store.audit_log(limit=3) == log.entries[-3:]
    assert await store.audit_log(limit=1) == log.entries[-1:]
    assert await store.audit_log(limit=len(log.entries)) == log.entries
    assert await store.audit_log(limit=100) == log.entries


async def test_audit_log_of_one_workspace(store: SqlStore) -> None:
    log = await audit_world(store)
    ours = [e for e in log.entries if e.workspace_id == log.w.ws.id]
    assert await store.audit_log(limit=100, workspace_id=log.w.ws.id) == ours
    assert await store.audit_log(limit=2, workspace_id=log.w.ws.id) == ours[-2:]
    theirs = [e for e in log.entries if e.workspace_id == log.w.other_ws.id]
    assert await store.audit_log(limit=100, workspace_id=log.w.other_ws.id) == theirs
    assert await store.audit_log(limit=100, workspace_id="ws_missing") == []


@pytest.mark.parametrize(
    ("prefix", "actions"),
    [
        (
            "approval.",
            ["approval.request", "approval.decide", "approval.execute", "approval.expire"],
        ),
        (
            "approval",
            [
                "approval.request",
                "approval.decide",
                "approvals",
                "approval.execute",
                "approval.expire",
            ],
        ),
        ("approval.decide", ["approval.decide"]),
        ("APPROVAL.", ["APPROVAL.decide"]),
        # LIKE wildcards are plain characters in a prefix.
        ("a%", ["a%b.x"]),
        ("a_b", ["a_b.x"]),
        ("%", []),
        ("_", []),
        ("ü", ["übung.start"]),
        ("token.revoke", ["token.revoke"]),
        ("token.revoke.", []),
        ("nothing.", []),
    ],
)
async def test_audit_log_by_action_prefix(store: SqlStore, prefix: str, actions: list[str]) -> None:
    log = await audit_world(store)
    expected = log.by_action(*actions)
    assert len(expected) == len(actions)
    assert await store.audit_log(limit=100, action_prefix=prefix) == expected


async def test_audit_log_filters_combine(store: SqlStore) -> None:
    log = await audit_world(store)
    ours = log.w.ws.id
    expected = log.by_action("approval.request", "approval.execute", "approval.expire")
    assert await store.audit_log(limit=100, workspace_id=ours, action_prefix="approval.") == (
        expected
    )
    assert (
        await store.audit_log(limit=2, workspace_id=ours, action_prefix="approval.")
        == (expected[-2:])
    )
    after = log.entries[0].created_at
    assert (
        await store.audit_log(limit=100, workspace_id=ours, action_prefix="approval.", after=after)
        == (expected[1:])
    )


async def test_audit_log_after_a_time_is_what_came_strictly_after(store: SqlStore) -> None:
    log = await audit_world(store)
    entries = log.entries
    # Exactly at an entry's time: that entry is not "after" it.
    assert await store.audit_log(limit=100, after=entries[4].created_at) == entries[5:]
    # The first ``limit`` after the time, not the newest ``limit``.
    assert await store.audit_log(limit=3, after=entries[4].created_at) == entries[5:8]
    # Between two entries.
    between = entries[4].created_at + timedelta(microseconds=1)
    assert await store.audit_log(limit=100, after=between) == entries[5:]
    before_all = entries[0].created_at - timedelta(seconds=1)
    assert await store.audit_log(limit=2, after=before_all) == entries[:2]
    assert await store.audit_log(limit=100, after=entries[-1].created_at) == []
    # Paging: each page starts after the last entry of the one before.
    pages: list[AuditEntry] = []
    cursor = before_all
    while page := await store.audit_log(limit=5, after=cursor):
        pages.extend(page)
        cursor = page[-1].created_at
    assert pages == entries


async def test_audit_log_of_an_empty_store_is_empty(store: SqlStore) -> None:
    await world(store)
    assert await store.audit_log(limit=10) == []
    assert await store.audit_log(limit=10, after=utcnow()) == []


async def test_approvals_by_ids_returns_those_that_exist(store: SqlStore) -> None:
    w = await world(store)
    stored = [await store.insert(_approval(w, n)) for n in range(250)]  # more than one chunk
    wanted = [a.id for a in stored[::2]] + ["apr_missing"]
    found = await store.approvals(wanted)
    assert sorted(a.id for a in found) == sorted(a.id for a in stored[::2])
    assert {a.id: a for a in found}[stored[0].id] == stored[0]
    assert await store.approvals([]) == []


async def test_approval_outcomes_are_the_settled_ones_read_without_arguments(
    store: SqlStore,
) -> None:
    w = await world(store)
    stored = [await store.insert(_approval(w, n)) for n in range(250)]  # more than one chunk
    late = await store.insert(_approval(w, 250, expires_in=-timedelta(seconds=1)))
    denied = await store.decide_approval(
        stored[1].id, status=ApprovalStatus.DENIED, decided_by="admin:a", reason="no", now=w.now
    )
    executed = await _approved(store, w, 251)
    executed = await store.finish_approval(
        executed.id,
        owner=OWNER,
        status=ApprovalStatus.EXECUTED,
        result={"content": [{"type": "text", "text": "done ✓"}], "isError": False},
        error=None,
        now=w.now,
    )
    approved = await _approved(store, w, 252)
    assert denied is not None and executed is not None
    asked = [a.id for a in stored] + [late.id, executed.id, approved.id, "apr_missing"]
    outcomes = await store.approval_outcomes(asked, now=w.now)
    assert outcomes.known == frozenset(asked) - {"apr_missing"}
    # Pending and approved ones have no outcome yet; a pending one past its time has.
    finished = {o.id: o for o in outcomes.finished}
    assert set(finished) == {denied.id, late.id, executed.id}
    for approval in (denied, late, executed):
        # What the caller is told, the same whether read whole or not.
        assert outcome_data(finished[approval.id]) == outcome_data(approval)
        assert not hasattr(finished[approval.id], "arguments")
    assert outcome_data(finished[late.id])["status"] == "expired"
    assert (await store.approval_outcomes([], now=w.now)).known == frozenset()


async def test_approval_outcomes_cost_nothing_per_argument_byte(store: SqlStore) -> None:
    # A session waits for its token's calls, up to 100 of 256 KiB each: the
    # watch asks where they stand four times a second. A quarter of them is
    # enough to see arguments read back (the default run); all of them in the
    # thorough tier.
    w = await world(store)
    arguments = {f"k{m:07d}": m for m in range(18_000)}
    queued = [
        await store.insert(attrs.evolve(_approval(w, n), arguments=arguments))
        for n in range(examples(100, 25))
    ]
    ids = [a.id for a in queued]
    await store.approval_outcomes(ids, now=w.now)  # statements prepared, caches warm
    started = time.thread_time()
    outcomes = await store.approval_outcomes(ids, now=w.now)
    used_s = time.thread_time() - started
    assert outcomes.known == frozenset(ids) and outcomes.finished == ()
    # Reading all 100 calls' arguments back took a quarter of a second of this thread.
    assert used_s < 0.03
