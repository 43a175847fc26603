"""Records as JSON: the shapes the CLI's ``--json`` and the admin API (``/api/v1``) share.

The admin API's shapes (:mod:`agentws.doors.api.shapes`) describe these, and its
OpenAPI document is generated from them; the suite checks the API's answers
against it.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

import attrs

from agentws.connectors.admin import SECRET_HEADER_FIELD
from agentws.domain.approval_lists import ApprovalSummary
from agentws.domain.deliveries import RotationStatus
from agentws.domain.dry_runs import DryRun
from agentws.domain.event_lists import EventSummary
from agentws.domain.models import (
    Approval,
    AuditEntry,
    ChatMessage,
    Connector,
    ConnectorGrant,
    ConnectorKind,
    ContextDocument,
    Event,
    FailureStreak,
    Group,
    Library,
    McpToken,
    OAuthClient,
    Skill,
    Webhook,
    WebhookSample,
    Workspace,
)
from agentws.domain.rules import utcnow
from agentws.domain.sample_deliveries import SampleAnswer
from agentws.tools.schema_cost import assess

if TYPE_CHECKING:  # the CLI imports this module; the tool catalog is heavy to load
    from agentws.checks.connectors import ConnectorCheck
    from agentws.connectors.remote_mcp import SyncReport
    from agentws.tools.admin import ToolRow

__all__ = [
    "approval_json",
    "approval_summary_json",
    "audit_json",
    "connector_check_json",
    "connector_json",
    "connector_secret",
    "document_json",
    "dry_run_json",
    "event_json",
    "fields_json",
    "group_json",
    "library_json",
    "message_json",
    "oauth_client_json",
    "sample_answer_json",
    "sample_json",
    "streak_json",
    "sync_report_json",
    "token_json",
    "tool_json",
    "webhook_json",
    "webhook_status",
    "workspace_json",
]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def fields_json(record: object, *keys: str) -> dict[str, Any]:
    """``record``'s attributes named by ``keys``, in that order, as JSON values.

    A key ``"at:created_at"`` is the attribute ``created_at`` shown as ``at``.
    A time is given in ISO 8601, an enum member as its value; the rest as they are.
    """
    shown: dict[str, Any] = {}
    for key in keys:
        name, _, attribute = key.partition(":")
        value = getattr(record, attribute or name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, Enum):
            value = value.value
        shown[name] = value
    return shown


#: What an approval says of its decision and when each step came.
_DECIDED = ("reason", "decided_by", "error")
_APPROVAL_TIMES = ("created_at", "expires_at", "decided_at", "finished_at")


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    """An audit entry as ``agentws audit tail --json``, the API and the export give it."""
    return fields_json(
        entry, "id", "at:created_at", "workspace_id", "actor", "action", "target", "detail"
    )


def workspace_json(w: Workspace) -> dict[str, Any]:
    return {"id": w.id, "slug": w.slug, "name": w.name, "created_at": _iso(w.created_at)}


def group_json(g: Group, workspace: str, url: str) -> dict[str, Any]:
    """A group, with ``url``: its MCP endpoint's."""
    return {
        **fields_json(g, "id"),
        "workspace": workspace,
        **fields_json(g, "slug", "name"),
        "url": url,
        **fields_json(g, "created_at"),
    }


def webhook_json(w: Webhook, workspace: str, group: str | None) -> dict[str, Any]:
    return {
        "id": w.id,
        "workspace": workspace,
        "name": w.name,
        "channel": w.channel,
        "group": group,
        "active": w.active,
        "status": webhook_status(w),
        "verification": w.verification.value,
        "rate_per_min": w.rate_per_min,
        "burst": w.burst,
        "max_body_bytes": w.max_body_bytes,
        "concurrency": w.concurrency,
        # Write tools its runs use without approval (while their definitions are unchanged).
        "allowed_tools": sorted(w.allowed_tools),
        # Its messages may ping a whole channel (else mass mentions are made inert).
        "allow_mentions": w.allow_mentions,
        # While a draft, it keeps its deliveries as samples (else they get 403).
        "capture": w.capture,
        # Failure alerts: after alert_after failed events in a row (0: never).
        "alert_after": w.alert_after,
        "alerts_channel": w.alerts_channel,
        "pause_on_failure": w.pause_on_failure,
        "paused_at": _iso(w.paused_at),
        "prompt": w.prompt,
        # Rotation (agentws.webhooks.rotation): the generations in use, and
        # until when the previous URL / secret still works (null: none does).
        "url_generation": w.token_generation,
        "previous_url_until": _iso(w.previous_token_until) if w.previous_token_hash else None,
        "secret_generation": w.secret_generation if w.secret is not None else None,
        "previous_secret_until": _iso(w.previous_secret_until) if w.previous_secret else None,
        "created_at": _iso(w.created_at),
        "updated_at": _iso(w.updated_at),
    }


def rotation_json(r: RotationStatus) -> dict[str, Any]:
    return fields_json(r, *(field.name for field in attrs.fields(RotationStatus)))


def webhook_status(w: Webhook) -> str:
    """``active``; ``paused`` (a draft its failure alert made); or ``draft``."""
    if w.active:
        return "active"
    return "paused" if w.paused_at is not None else "draft"


def sample_answer_json(w: Webhook, answer: SampleAnswer) -> dict[str, Any]:
    """What a webhook's door answered a test event, as the API and ``--json`` give it."""
    return {
        "webhook": w.name,
        "sample": answer.sample.value,
        "status": answer.status,
        "answer": answer.body,
        "event_id": answer.event_id,
    }


def streak_json(s: FailureStreak | None) -> dict[str, Any] | None:
    """A webhook's latest failure streak: open (failing now) or ended, and its notices."""
    if s is None:
        return None
    return {
        "failures": s.failures,
        "open": s.ended_at is None,
        **fields_json(
            s,
            "started_at",
            "last_failed_at",
            "last_event_id",
            "last_error",
            "alerted_at",
            "paused_at",
            "alert_posted_at",
            "alert_message_id",
            "ended_at",
            "recovered_event_id",
            "recovery_posted_at",
            "recovery_message_id",
            "notice_error",
        ),
    }


def event_json(e: Event | EventSummary, webhook: Webhook) -> dict[str, Any]:
    return {
        "id": e.id,
        "webhook": webhook.name,
        "webhook_id": webhook.id,
        **fields_json(
            e,
            "status",
            "attempts",
            "error",
            "message_id",
            "received_at",
            "finished_at",
            # The URL / secret generation it came through (null: not delivered to the URL).
            "url_generation",
            "secret_generation",
        ),
    }


def approval_json(a: Approval, group: Group, workspace: Workspace) -> dict[str, Any]:
    from agentws.tools.approval_queue import current_status

    return {
        "id": a.id,
        "workspace": workspace.slug,
        "group": group.slug,
        **fields_json(a, "tool:tool_name", "capability", "arguments", "requested_by", "event_id"),
        "status": current_status(a).value,
        **fields_json(a, *_DECIDED, "result", *_APPROVAL_TIMES),
    }


def approval_summary_json(a: ApprovalSummary) -> dict[str, Any]:
    """A row of a list of queued calls: the arguments' preview and size, not the arguments."""
    return fields_json(
        a,
        "id",
        "workspace:workspace_slug",
        "group:group_slug",
        "tool:tool_name",
        "capability",
        "arguments_preview",
        "arguments_bytes",
        "arguments_hash",
        "requested_by",
        "caller",
        "token_id",
        "token_name",
        "webhook:webhook_name",
        "event_id",
        "status",
        *_DECIDED,
        *_APPROVAL_TIMES,
    )


def token_json(t: McpToken, workspace: str, group: str) -> dict[str, Any]:
    return {
        "id": t.id,
        "workspace": workspace,
        "group": group,
        **fields_json(t, "name", "scope", "hint"),
        "status": _token_status(t),
        **fields_json(
            t,
            "revoked",
            "created_at",
            "last_used_at",
            "revoked_at",
            "expires_at",
            "oauth_client:oauth_client_id",
        ),
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
        "schema_hazards": list(assess(t.input_schema).hazards),
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
    return fields_json(
        m, "id", "channel", "text", "event_id", "thread", "external_id", "created_at"
    )


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


# A listed sample shows this much of its body.
_PREVIEW_CHARS = 200


def sample_json(s: WebhookSample, *, whole: bool = False) -> dict[str, Any]:
    """A captured sample: a preview of its body, or (``whole``) the body itself."""
    text = s.body.decode("utf-8", "replace")
    shown: dict[str, Any] = {
        "id": s.id,
        "webhook_id": s.webhook_id,
        "received_at": _iso(s.received_at),
        "size": len(s.body),
        "headers": s.headers,
        "preview": " ".join(text[: _PREVIEW_CHARS * 2].split())[:_PREVIEW_CHARS],
    }
    if whole:
        try:
            shown["body"] = json.loads(s.body)
        except ValueError:  # the door keeps JSON objects only
            shown["body"] = text
    return shown


def dry_run_json(d: DryRun) -> dict[str, Any]:
    """What a try of a prompt would have done (nothing was posted)."""
    return {
        "text": d.text,
        "model": d.model,
        "prompt": d.prompt,
        "source": d.source,
        "source_id": d.source_id,
        "tool_calls": [
            {
                "name": c.name,
                "capability": c.capability,
                "arguments": c.arguments,
                "outcome": c.outcome.value,
                "outcome_label": c.outcome.label,
                "detail": c.detail,
            }
            for c in d.calls
        ],
        "usage": d.usage,
    }


def connector_secret(c: Connector) -> str | None:
    """Where a connector's secret goes: a header's name, ``url`` (incoming webhooks), or None."""
    if c.secret is None:
        return None
    if c.kind is ConnectorKind.INCOMING_WEBHOOK:
        return "url"
    return c.headers.get(SECRET_HEADER_FIELD, "Authorization")


def connector_json(c: Connector, workspace: str) -> dict[str, Any]:
    """A connector: never its secret, only whether it has one and where it goes."""
    return {
        "id": c.id,
        "workspace": workspace,
        "name": c.name,
        "kind": c.kind.value,
        "url": c.url,
        "headers": {k: v for k, v in c.headers.items() if k != SECRET_HEADER_FIELD},
        "secret": connector_secret(c),
        "active": c.active,
        "relay_requests": c.relay_requests,
        "protocol": c.protocol,
        "auth": c.auth,
        "created_at": _iso(c.created_at),
    }


def grant_json(c: Connector, grant: ConnectorGrant | None) -> dict[str, Any]:
    """Where a connector's authorization upstream stands: never its tokens."""
    if c.auth == "static":
        return {"mode": "static"}
    state = grant.state.value if grant else "needs_authorization"
    return {
        "mode": c.auth,
        "state": state,
        "reason": (grant.reason if grant else "never connected"),
        "expires_at": _iso(grant.expires_at) if grant and grant.expires_at else None,
        "scope": grant.scope if grant else None,
        "settings": dict(c.auth_settings),
    }


def connector_check_json(c: ConnectorCheck, workspace: str) -> dict[str, Any]:
    """What a test of a connector proved (a remote MCP server's own words too)."""
    data: dict[str, Any] = {
        "ok": True,
        "workspace": workspace,
        "connector": c.connector.name,
        "kind": c.connector.kind.value,
        "url": c.connector.url,
        "detail": c.detail,
        "elapsed_ms": c.elapsed_ms,
    }
    if c.probe is not None:
        data |= {
            "transport": c.probe.transport,
            "server": {"name": c.probe.server_name, "version": c.probe.server_version},
            "protocol_version": c.probe.protocol_version,
            "tools": c.probe.tools,
            "announces_changes": c.probe.announces_changes,
        }
    return data


def sync_report_json(r: SyncReport) -> dict[str, Any]:
    """What a refresh changed in the tool cache."""
    return {
        "added": list(r.added),
        "changed": list(r.changed),
        "removed": list(r.removed),
        "unchanged": r.unchanged,
        "left_out": list(r.left_out),
    }
