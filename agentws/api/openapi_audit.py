"""The OpenAPI parts of the audit log (:mod:`agentws.api.audit`): its filters and its page."""

from __future__ import annotations

from typing import Any

from agentws.domain.permissions import Decision

from .openapi_schemas import ref

__all__ = ["AUDIT_PARAMS", "AUDIT_SCHEMAS"]


def _query(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": schema or {"type": "string"},
    }


AUDIT_PARAMS = [
    _query("workspace", "only this workspace's entries (its slug)"),
    _query("group", "only tool calls in this group (its slug; give the workspace too)"),
    _query("token", "only this MCP token's entries: its id (tok_…), or its name within group"),
    _query("oauth_client", "only tool calls made with this OAuth client's access tokens"),
    _query("actor", "only this actor's entries, as entries name them (admin:alice, mcp:tok_…)"),
    _query("tool", "only entries about this tool (a tool call's target)"),
    _query(
        "decision",
        "only tool calls the gate decided so",
        {"type": "string", "enum": [d.value for d in Decision]},
    ),
    _query("action", "only actions starting with this (tool., tool.call, approval.)"),
    _query(
        "since",
        "made at or after: ISO 8601 (UTC unless it says otherwise), or a span before now "
        "such as 30m, 24h, 7d",
    ),
    _query("until", "made before: as for since"),
    _query("limit", "entries on the page", {"type": "integer", "minimum": 1, "maximum": 200}),
    _query("cursor", "a next_cursor (older entries) or previous_cursor (newer) of this list"),
]

_STR_OR_NULL = {"type": ["string", "null"]}

AUDIT_SCHEMAS: dict[str, Any] = {
    "AuditEntry": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "at": {"type": "string", "format": "date-time"},
            "workspace_id": _STR_OR_NULL,
            "actor": {"type": "string", "description": "admin:…, mcp:tok_…, webhook:…, web:…"},
            "action": {"type": "string", "description": "tool.call, approval.decide, …"},
            "target": {"type": "string", "description": "what it was done to (a tool's name…)"},
            "detail": {
                "type": "object",
                "description": "for a tool call: group_id, decision, outcome, scope, "
                "arguments_hash, oauth_client…; never a secret",
            },
        },
        "required": ["id", "at", "workspace_id", "actor", "action", "target", "detail"],
    },
    "AuditPage": {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": ref("AuditEntry")},
            "next_cursor": {**_STR_OR_NULL, "description": "older entries; null on the last page"},
            "previous_cursor": {
                **_STR_OR_NULL,
                "description": "newer entries; null on the first page",
            },
        },
        "required": ["items", "next_cursor", "previous_cursor"],
    },
}
