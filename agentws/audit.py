"""The audit log: one append-only record per change an operator or caller makes."""

from __future__ import annotations

from typing import Any

from agentws.domain.models import AuditEntry
from agentws.store import Store

__all__ = ["record"]


async def record(
    store: Store, workspace_id: str | None, actor: str, action: str, target: str, **detail: Any
) -> AuditEntry:
    """Append ``actor`` did ``action`` to ``target`` (``detail`` is extra, non-secret context)."""
    return await store.insert(
        AuditEntry(
            workspace_id=workspace_id, actor=actor, action=action, target=target, detail=detail
        )
    )
