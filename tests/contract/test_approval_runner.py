"""ApprovalRuns on SQLite and PostgreSQL: each approved call runs once, on one instance.

Two runners (two instances' ``ApprovalRuns``, owners ``a`` and ``b``) share
one store; the remote MCP call is a fake :data:`~agentws.tools.execution.RemoteCall`
(the runner's transport seam) that counts calls. Neither runner listens to
the change feed, so they poll, as on SQLite.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import mcp_types as types
import trio

from agentws.approvals.decisions import approve
from agentws.approvals.runs import ApprovalRuns
from agentws.common.changes import ChangeFeed
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    CachedTool,
    Connector,
    ConnectorKind,
    Group,
    GroupConnector,
    Workspace,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store import SqlStore
from agentws.tools.catalog import group_tool
from agentws.tools.execution import ToolRunner

TIMEOUT_S = 20.0


async def _group(store: SqlStore) -> Group:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    group = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops"))
    docs = await store.insert(
        Connector(
            workspace_id=ws.id,
            name="docs",
            kind=ConnectorKind.REMOTE_MCP,
            url="https://mcp.example.com/mcp",
        )
    )
    await store.insert(
        CachedTool(
            connector_id=docs.id,
            name="send",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            definition_hash="send-v1",
        )
    )
    await store.insert(GroupConnector(group_id=group.id, connector_id=docs.id))
    return group


async def _queue(store: SqlStore, group: Group, n: int) -> Approval:
    tool = await group_tool(store, group, "docs_send")
    assert tool is not None
    now = utcnow()
    arguments = {"n": n}
    return await store.insert(
        Approval(
            group_id=group.id,
            requested_by="mcp:someone",
            tool_name=tool.name,
            capability=tool.capability,
            definition_hash=tool.definition_hash,
            arguments=arguments,
            arguments_hash=arguments_hash(tool.name, arguments),
            created_at=now + timedelta(microseconds=n),
            expires_at=now + timedelta(hours=1),
        )
    )


class Upstream:
    """The fake remote: counts calls by argument; ``hold`` keeps them running."""

    def __init__(self) -> None:
        self.calls: Counter[int] = Counter()
        self.hold = False
        self.started = trio.Event()

    async def __call__(
        self,
        connector: Connector,
        name: str,
        arguments: dict[str, Any],
        *,
        retry_safe: bool,
        channel: object = None,
    ) -> types.CallToolResult:
        self.calls[arguments["n"]] += 1
        self.started.set()
        if self.hold:
            await trio.sleep_forever()
        await trio.sleep(0.01)
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])


def _runs(store: SqlStore, upstream: Upstream, owner: str) -> ApprovalRuns:
    runner = ToolRunner(store, Settings.from_env({}), Keys(None, "no key"), upstream)
    return ApprovalRuns(store, runner, Keys(None, "no key"), ChangeFeed(store), owner)


async def _until_finished(store: SqlStore, ids: list[str]) -> list[Approval]:
    with trio.fail_after(TIMEOUT_S):
        while True:
            found = await store.approvals(ids)
            if len(found) == len(ids) and all(a.status.finished for a in found):
                return found
            await trio.sleep(0.05)


async def test_two_instances_run_each_approved_call_once(store: SqlStore) -> None:
    group = await _group(store)
    upstream = Upstream()
    ids = [(await _queue(store, group, n)).id for n in range(20)]
    async with trio.open_nursery() as nursery:
        a, b = _runs(store, upstream, "a"), _runs(store, upstream, "b")
        await nursery.start(a.serve)
        await nursery.start(b.serve)
        for approval_id in ids:
            await approve(store, approval_id, actor="admin:alice", reason=None)
        done = await _until_finished(store, ids)
        a.close()
        b.close()
    assert upstream.calls == Counter(range(20))  # every call once
    assert {x.status for x in done} == {ApprovalStatus.EXECUTED}
    assert {x.attempts for x in done} == {1}
    assert {x.lease_owner for x in done} <= {"a", "b"}


async def test_a_call_cut_off_by_shutdown_is_failed_not_left_running(store: SqlStore) -> None:
    group = await _group(store)
    upstream = Upstream()
    upstream.hold = True
    queued = await _queue(store, group, 1)
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            runs = _runs(store, upstream, "a")
            await nursery.start(runs.serve)
            await approve(store, queued.id, actor="admin:alice", reason=None)
            runs.wake()
            await upstream.started.wait()
            runs.close()
            nursery.cancel_scope.cancel()  # the shutdown grace is over
    cut = await store.get(Approval, queued.id)
    assert cut.status is ApprovalStatus.FAILED
    assert "the service stopped while docs_send ran" in (cut.error or "")
    assert "unknown" in (cut.error or "")
    assert upstream.calls == Counter({1: 1})
    # Never run again by itself: nothing is left to claim.
    lease = utcnow() + timedelta(seconds=30)
    assert await store.claim_approvals(owner="b", lease_expires_at=lease, limit=5) == []
