"""Records as JSON: the shapes the CLI's ``--json`` and the admin API (``/api/v1``) share.

The admin API's OpenAPI document (:mod:`agentws.api.openapi`) describes
these shapes; the suite checks the API's answers against it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentws.domain.approval_lists import ApprovalSummary
from agentws.domain.event_lists import EventSummary
from agentws.domain.models import (
    Approval,
    ChatMessage,
    ContextDocument,
    Event,
    Group,
    Library,
    McpToken,
    OAuthClient,
    Skill,
    Webhook,
    Workspace,
)
from agentws.domain.rules import utcnow

if TYPE_CHECKING:  # the CLI imports this module; the tool catalog is heavy to load
    from agentws.tools.admin import ToolRow

__all__ = [
    "approval_json",
    "approval_summary_json",
    "document_json",
    "event_json",
    "library_json",
    "message_json",
    "oauth_client_json",
    "token_json",
    "tool_json",
    "webhook_json",
    "workspace_json",
]


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
        "status": "active" if w.active else "draft",
        "verification": w.verification.value,
        "rate_per_min": w.rate_per_min,
        "burst": w.burst,
        "max_body_bytes": w.max_body_bytes,
        "concurrency": w.concurrency,
        # Write tools its runs use without approval (while their definitions are unchanged).
        "allowed_tools": sorted(w.allowed_tools),
        # Its messages may ping a whole channel (else mass mentions are made inert).
        "allow_mentions": w.allow_mentions,
        "prompt": w.prompt,
        "created_at": _iso(w.created_at),
        "updated_at": _iso(w.updated_at),
    }


def event_json(e: Event | EventSummary, webhook: Webhook) -> dict[str, Any]:
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
    from agentws.tools.approval_queue import current_status

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


def approval_summary_json(a: ApprovalSummary) -> dict[str, Any]:
    """A row of a list of queued calls: the arguments' preview and size, not the arguments."""
    return {
        "id": a.id,
        "workspace": a.workspace_slug,
        "group": a.group_slug,
        "tool": a.tool_name,
        "capability": a.capability.value,
        "arguments_preview": a.arguments_preview,
        "arguments_bytes": a.arguments_bytes,
        "arguments_hash": a.arguments_hash,
        "requested_by": a.requested_by,
        "caller": a.caller,
        "token_id": a.token_id,
        "token_name": a.token_name,
        "webhook": a.webhook_name,
        "event_id": a.event_id,
        "status": a.status.value,
        "reason": a.reason,
        "decided_by": a.decided_by,
        "error": a.error,
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
        "status": _token_status(t),
        "revoked": t.revoked,
        "created_at": _iso(t.created_at),
        "last_used_at": _iso(t.last_used_at),
        "revoked_at": _iso(t.revoked_at),
        "expires_at": _iso(t.expires_at),
        "oauth_client": t.oauth_client_id,
    }


def _token_status(t: McpToken) -> str:
    if t.revoked:
        return "revoked"
    if t.expires_at is not None and t.expires_at <= utcnow():
        return "expired"
    return "valid"


def tool_json(row: ToolRow) -> dict[str, Any]:
    t = row.tool
    return {
        "name": t.name,
        "source": t.source,
        "capability": t.capability.value,
        "label": row.label_source,
        "suggested_label": row.suggested.value if row.suggested else None,
        "permission": t.permission.value,
        "permission_source": t.permission_source,
        "note": t.permission_note,
        "definition_hash": t.definition_hash,
    }


def document_json(d: ContextDocument, library: str) -> dict[str, Any]:
    return {
        "id": d.id,
        "library": library,
        "slug": d.slug,
        "title": d.title,
        "mime_type": d.mime_type,
        "policy": d.policy.value,
        "bytes": len(d.body.encode("utf-8")),
        "created_at": _iso(d.created_at),
        "updated_at": _iso(d.updated_at),
    }


def library_json(
    library: Library, groups: list[str], documents: list[ContextDocument], skills: list[Skill]
) -> dict[str, Any]:
    return {
        "id": library.id,
        "slug": library.slug,
        "name": library.name,
        "groups": groups,
        "documents": [document_json(d, library.slug) for d in documents],
        "skills": [
            {
                "id": s.id,
                "slug": s.slug,
                "description": s.description,
                "assets": [a.name for a in s.assets],
            }
            for s in skills
        ],
    }


def message_json(m: ChatMessage) -> dict[str, Any]:
    return {
        "id": m.id,
        "channel": m.channel,
        "text": m.text,
        "event_id": m.event_id,
        "thread": m.thread,
        "external_id": m.external_id,
        "created_at": _iso(m.created_at),
    }


def oauth_client_json(c: OAuthClient) -> dict[str, Any]:
    """An OAuth client as the CLI and the admin API show it (never its secret)."""
    return {
        "id": c.id,
        "client_id": c.client_id,
        "kind": c.kind.value,
        "name": c.name,
        "redirect_uris": list(c.metadata.get("redirect_uris", [])),
        "confidential": c.sealed_secret is not None,
        "created_at": _iso(c.created_at),
    }
