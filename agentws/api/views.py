"""How the admin API shows records: JSON objects, the shapes ``/api/v1/openapi.json`` names."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentws.approvals.queue import current_status
from agentws.domain.models import Approval, Event, Group, McpToken, Webhook, Workspace

__all__ = ["approval_json", "event_json", "token_json", "webhook_json", "workspace_json"]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def workspace_json(w: Workspace) -> dict[str, Any]:
    return {"id": w.id, "slug": w.slug, "name": w.name, "created_at": _iso(w.created_at)}


def webhook_json(w: Webhook, workspace: str, group: str | None) -> dict[str, Any]:
    return {
        "id": w.id,
        "workspace": workspace,
        "name": w.name,
        "channel": w.channel,
        "group": group,
        "active": w.active,
        "verification": w.verification.value,
        "rate_per_min": w.rate_per_min,
        "burst": w.burst,
        "max_body_bytes": w.max_body_bytes,
        "concurrency": w.concurrency,
        "allowed_tools": sorted(w.allowed_tools),
        "prompt": w.prompt,
        "created_at": _iso(w.created_at),
        "updated_at": _iso(w.updated_at),
    }


def event_json(e: Event, webhook: Webhook) -> dict[str, Any]:
    return {
        "id": e.id,
        "webhook": webhook.name,
        "webhook_id": webhook.id,
        "status": e.status.value,
        "attempts": e.attempts,
        "error": e.error,
        "message_id": e.message_id,
        "received_at": _iso(e.received_at),
        "finished_at": _iso(e.finished_at),
    }


def approval_json(a: Approval, group: Group, workspace: Workspace) -> dict[str, Any]:
    return {
        "id": a.id,
        "workspace": workspace.slug,
        "group": group.slug,
        "tool": a.tool_name,
        "capability": a.capability.value,
        "arguments": a.arguments,
        "requested_by": a.requested_by,
        "event_id": a.event_id,
        "status": current_status(a).value,
        "reason": a.reason,
        "decided_by": a.decided_by,
        "error": a.error,
        "result": a.result,
        "created_at": _iso(a.created_at),
        "expires_at": _iso(a.expires_at),
        "decided_at": _iso(a.decided_at),
        "finished_at": _iso(a.finished_at),
    }


def token_json(t: McpToken, workspace: str, group: str) -> dict[str, Any]:
    return {
        "id": t.id,
        "workspace": workspace,
        "group": group,
        "name": t.name,
        "scope": t.scope.value,
        "hint": t.hint,
        "revoked": t.revoked_at is not None,
        "created_at": _iso(t.created_at),
        "last_used_at": _iso(t.last_used_at),
        "revoked_at": _iso(t.revoked_at),
    }
