"""What ``/metrics`` reads from the store, on SQLite and PostgreSQL.

``pending_approvals_summary``: how many approval requests wait, and the
oldest one's age (decided ones do not count). ``event_counts``: webhook
events by status, with every status present.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    Capability,
    Event,
    EventStatus,
    Group,
    McpToken,
    Webhook,
    Workspace,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.store import SqlStore


async def test_pending_approvals_and_event_counts(store: SqlStore) -> None:
    assert await store.pending_approvals_summary() == (0, 0.0)
    assert await store.event_counts() == {"queued": 0, "running": 0, "done": 0, "failed": 0}

    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    group = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops"))
    token = await store.insert(
        McpToken(group_id=group.id, name="t", token_hash=hashlib.sha256(b"t").hexdigest(), hint="t")
    )
    now = utcnow()
    for minutes, status in (
        (1, ApprovalStatus.PENDING),
        (5, ApprovalStatus.PENDING),
        (60, ApprovalStatus.DENIED),
    ):
        await store.insert(
            Approval(
                group_id=group.id,
                token_id=token.id,
                requested_by=f"mcp:{token.id}",
                tool_name="gh_merge",
                capability=Capability.WRITE,
                definition_hash="d" * 64,
                arguments={"m": minutes},
                arguments_hash=arguments_hash("gh_merge", {"m": minutes}),
                status=status,
                created_at=now - timedelta(minutes=minutes),
                expires_at=now + timedelta(hours=1),
            )
        )
    pending, oldest_s = await store.pending_approvals_summary()
    assert pending == 2
    assert 5 * 60 <= oldest_s < 5 * 60 + 30  # the older pending one; the denied one is older still

    webhook = await store.insert(
        Webhook(
            workspace_id=ws.id,
            name="ci",
            channel="local:ops",
            prompt="p",
            token_hash=hashlib.sha256(b"w").hexdigest(),
        )
    )
    for n, status in enumerate([EventStatus.DONE, EventStatus.DONE, EventStatus.FAILED]):
        await store.insert(
            Event(webhook_id=webhook.id, body=b"{}", headers={}, status=status, dedup_key=f"k{n}")
        )
    assert await store.event_counts() == {"queued": 0, "running": 0, "done": 2, "failed": 1}
