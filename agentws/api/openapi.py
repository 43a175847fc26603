"""The OpenAPI 3.1 document of the admin API, served at ``/api/v1/openapi.json``.

Written by hand next to the handlers (:mod:`agentws.api.routes`) and checked
against them by the suite, which runs schemathesis on it: every documented
operation is called with generated input, and no answer may be a 5xx or
differ from what is documented here.
"""

from __future__ import annotations

from typing import Any

from agentws import __version__
from agentws.domain.models import ApprovalStatus, VerificationScheme

__all__ = ["openapi_document"]

_TIME = {"type": "string", "format": "date-time"}
_TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
_STR_OR_NULL = {"type": ["string", "null"]}
_MENTIONS = "its messages may ping a whole channel (@channel, @here...); false: made inert"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


def _page(item: str) -> dict[str, Any]:
    return _object({"items": {"type": "array", "items": _ref(item)}, "next_cursor": _STR_OR_NULL})


# The statuses a person sees (``running``: approved, and an instance runs it now).
_APPROVAL_STATUS = {"type": "string", "enum": [s.value for s in ApprovalStatus]}

_SCHEMAS: dict[str, Any] = {
    "Error": _object(
        {
            "error": _object(
                {"code": {"type": "string"}, "message": {"type": "string"}},
            )
        }
    ),
    "Workspace": _object(
        {
            "id": {"type": "string"},
            "slug": {"type": "string"},
            "name": {"type": "string"},
            "created_at": _TIME,
        }
    ),
    "Webhook": _object(
        {
            "id": {"type": "string"},
            "workspace": {"type": "string"},
            "name": {"type": "string"},
            "channel": {"type": "string"},
            "group": _STR_OR_NULL,
            "active": {"type": "boolean"},
            "status": {"type": "string", "enum": ["active", "draft"]},
            "verification": {"type": "string"},
            "rate_per_min": {"type": "integer"},
            "burst": {"type": "integer"},
            "max_body_bytes": {"type": "integer"},
            "concurrency": {"type": "integer"},
            "allowed_tools": {"type": "array", "items": {"type": "string"}},
            "allow_mentions": {"type": "boolean"},
            "prompt": {"type": "string"},
            "created_at": _TIME,
            "updated_at": _TIME,
        }
    ),
    "IssuedWebhook": {
        "allOf": [
            _ref("Webhook"),
            _object({"url": {"type": "string", "description": "shown this once"}}),
        ]
    },
    "NewWebhook": {
        "type": "object",
        "required": ["name", "channel", "prompt"],
        "properties": {
            "name": {"type": "string"},
            "channel": {
                "type": "string",
                "description": "local:NAME, slack:CHANNEL-ID, webhook:CONNECTOR",
            },
            "prompt": {"type": "string"},
            "group": {"type": "string"},
            "active": {"type": "boolean", "default": True},
            "concurrency": {"type": "integer", "default": 4},
            "verification": {
                "type": "string",
                "enum": [s.value for s in VerificationScheme],
            },
            "secret": {"type": "string", "writeOnly": True},
            "rate_per_min": {"type": "integer", "default": 60},
            "burst": {"type": "integer"},
            "max_body_bytes": {"type": "integer"},
            "allow_tools": {"type": "array", "items": {"type": "string"}},
            "allow_mentions": {"type": "boolean", "default": False, "description": _MENTIONS},
        },
    },
    "WebhookChanges": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string"},
            "channel": {"type": "string"},
            "group": {"type": "string", "description": 'a group slug; "" for none'},
            "active": {"type": "boolean"},
            "allow_tools": {"type": "array", "items": {"type": "string"}},
            "disallow_tools": {"type": "array", "items": {"type": "string"}},
            "allow_mentions": {"type": "boolean", "description": _MENTIONS},
        },
    },
    "Deleted": _object({"id": {"type": "string"}, "deleted": {"type": "boolean"}}),
    "Event": _object(
        {
            "id": {"type": "string"},
            "webhook": {"type": "string"},
            "webhook_id": {"type": "string"},
            "status": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
            "attempts": {"type": "integer"},
            "error": _STR_OR_NULL,
            "message_id": _STR_OR_NULL,
            "received_at": _TIME,
            "finished_at": _TIME_OR_NULL,
        }
    ),
    "Replay": {
        "type": "object",
        "properties": {"current_prompt": {"type": "boolean", "default": False}},
    },
    "Approval": _object(
        {
            "id": {"type": "string"},
            "workspace": {"type": "string"},
            "group": {"type": "string"},
            "tool": {"type": "string"},
            "capability": {"type": "string", "enum": ["read", "write", "destructive"]},
            "arguments": {"type": "object"},
            "requested_by": {"type": "string"},
            "event_id": _STR_OR_NULL,
            "status": _APPROVAL_STATUS,
            "reason": _STR_OR_NULL,
            "decided_by": _STR_OR_NULL,
            "error": _STR_OR_NULL,
            "result": {"type": ["object", "null"]},
            "created_at": _TIME,
            "expires_at": _TIME,
            "decided_at": _TIME_OR_NULL,
            "finished_at": _TIME_OR_NULL,
        }
    ),
    "ApprovalSummary": _object(
        {
            "id": {"type": "string"},
            "workspace": {"type": "string"},
            "group": {"type": "string"},
            "tool": {"type": "string"},
            "capability": {"type": "string", "enum": ["read", "write", "destructive"]},
            "arguments_preview": {
                "type": "string",
                "description": "The arguments as JSON, cut to 300 characters (then ending in "
                "…); the whole arguments are in GET /approvals/{approval_id}",
            },
            "arguments_bytes": {"type": "integer", "description": "size of the arguments"},
            "arguments_hash": {"type": "string"},
            "requested_by": {"type": "string"},
            "caller": {
                "type": "string",
                "description": "who asked, by name: 'token <name>', 'webhook <name>'",
            },
            "token_id": _STR_OR_NULL,
            "token_name": _STR_OR_NULL,
            "webhook": _STR_OR_NULL,
            "event_id": _STR_OR_NULL,
            "status": _APPROVAL_STATUS,
            "reason": _STR_OR_NULL,
            "decided_by": _STR_OR_NULL,
            "error": {
                "type": ["string", "null"],
                "description": "the start of the error (the whole is in the approval)",
            },
            "created_at": _TIME,
            "expires_at": _TIME,
            "decided_at": _TIME_OR_NULL,
            "finished_at": _TIME_OR_NULL,
        }
    ),
    "ApprovalSummaryPage": _object(
        {
            "items": {"type": "array", "items": _ref("ApprovalSummary")},
            "next_cursor": {
                "type": ["string", "null"],
                "description": "pass as `cursor` for the next page; null on the last page",
            },
            "previous_cursor": {
                "type": ["string", "null"],
                "description": "pass as `cursor` for the page before; null on the first page",
            },
        }
    ),
    "Decision": {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "wait_s": {
                "type": "number",
                "minimum": 0,
                "maximum": 300,
                "description": "approve/retry: seconds to wait for the service to run the call "
                "before answering (default 30); the answer shows it approved or running if it "
                "has not finished by then",
            },
        },
    },
    "Token": _object(
        {
            "id": {"type": "string"},
            "workspace": {"type": "string"},
            "group": {"type": "string"},
            "name": {"type": "string"},
            "scope": {"type": "string", "enum": ["read", "write", "destructive"]},
            "hint": {"type": "string"},
            "status": {"type": "string", "enum": ["valid", "revoked"]},
            "revoked": {"type": "boolean"},
            "created_at": _TIME,
            "last_used_at": _TIME_OR_NULL,
            "revoked_at": _TIME_OR_NULL,
        }
    ),
    "IssuedToken": {
        "allOf": [
            _ref("Token"),
            _object({"token": {"type": "string", "description": "shown this once"}}),
        ]
    },
    "NewToken": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "scope": {"type": "string", "enum": ["read", "write", "destructive"]},
        },
    },
}
_SCHEMAS |= {
    "Tool": _object(
        {
            "name": {"type": "string"},
            "source": {"type": "string"},
            "capability": {"type": "string", "enum": ["read", "write", "destructive"]},
            "label": {"type": "string", "enum": ["fixed", "admin", "unlabeled"]},
            "suggested_label": {"type": ["string", "null"]},
            "permission": {"type": "string"},
            "permission_source": {"type": "string"},
            "note": _STR_OR_NULL,
            "definition_hash": {"type": "string"},
        }
    ),
    "LabelChange": {
        "type": "object",
        "properties": {
            "label": {
                "type": ["string", "null"],
                "enum": ["read", "write", "destructive", None],
                "description": "null: unlabeled (write)",
            }
        },
    },
    "Labeled": _object({"name": {"type": "string"}, "label": _STR_OR_NULL}),
    "PermissionChange": {
        "type": "object",
        "properties": {
            "permission": {
                "type": ["string", "null"],
                "enum": ["allow", "requires_confirmation", "requires_approval", "deny", None],
                "description": "null: back to the workspace's, or the capability's default",
            },
            "group": {"type": "string", "description": "omitted: for the whole workspace"},
        },
    },
    "PermissionSet": _object(
        {"name": {"type": "string"}, "group": _STR_OR_NULL, "permission": _STR_OR_NULL}
    ),
    "Document": _object(
        {
            "id": {"type": "string"},
            "library": {"type": "string"},
            "slug": {"type": "string"},
            "title": {"type": "string"},
            "mime_type": {"type": "string"},
            "policy": {"type": "string", "enum": ["spine", "on_demand", "never"]},
            "bytes": {"type": "integer"},
            "created_at": _TIME,
            "updated_at": _TIME,
        }
    ),
    "NewDocument": {
        "type": "object",
        "required": ["title", "body"],
        "properties": {
            "title": {"type": "string"},
            "body": {"type": "string"},
            "slug": {"type": "string"},
            "mime_type": {"type": "string", "default": "text/markdown"},
            "policy": {"type": "string", "enum": ["spine", "on_demand", "never"]},
            "replace": {"type": "boolean", "default": False},
        },
    },
    "Library": _object(
        {
            "id": {"type": "string"},
            "slug": {"type": "string"},
            "name": {"type": "string"},
            "groups": {"type": "array", "items": {"type": "string"}},
            "documents": {"type": "array", "items": _ref("Document")},
            "skills": {
                "type": "array",
                "items": _object(
                    {
                        "id": {"type": "string"},
                        "slug": {"type": "string"},
                        "description": {"type": "string"},
                        "assets": {"type": "array", "items": {"type": "string"}},
                    }
                ),
            },
        }
    ),
    "Message": _object(
        {
            "id": {"type": "string"},
            "channel": {"type": "string"},
            "text": {"type": "string"},
            "event_id": _STR_OR_NULL,
            "thread": _STR_OR_NULL,
            "external_id": _STR_OR_NULL,
            "created_at": _TIME,
        }
    ),
}
for _name in ("Workspace", "Webhook", "Event", "Token", "Tool", "Library", "Message"):
    _SCHEMAS[f"{_name}Page"] = _page(_name)

_ERRORS = {
    "400": "invalid input",
    "401": "no valid credentials",
    "403": "not allowed (a session's unsafe call without its CSRF token)",
    "404": "no such object",
    "409": "conflicts with the current state",
    "503": "the store is unavailable",
}


def _responses(status: str, schema: str, description: str) -> dict[str, Any]:
    responses: dict[str, Any] = {
        status: {
            "description": description,
            "content": {"application/json": {"schema": _ref(schema)}},
        }
    }
    for code, text in _ERRORS.items():
        responses[code] = {
            "description": text,
            "content": {"application/json": {"schema": _ref("Error")}},
        }
    return responses


def _path_params(*names: str) -> list[dict[str, Any]]:
    return [
        {"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names
    ]


_PAGING = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
]


def _operation(
    summary: str,
    response: str,
    *,
    status: str = "200",
    params: list[dict[str, Any]] | None = None,
    body: str | None = None,
    operation_id: str,
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "responses": _responses(status, response, summary),
    }
    if params:
        operation["parameters"] = params
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    return operation


def _paths() -> dict[str, Any]:
    ws = _path_params("workspace")
    hook = _path_params("workspace", "webhook")
    group = _path_params("workspace", "group")
    return {
        "/workspaces": {
            "get": _operation(
                "List workspaces", "WorkspacePage", params=_PAGING, operation_id="listWorkspaces"
            )
        },
        "/workspaces/{workspace}/webhooks": {
            "get": _operation(
                "List a workspace's webhooks",
                "WebhookPage",
                params=ws + _PAGING,
                operation_id="listWebhooks",
            ),
            "post": _operation(
                "Create a webhook (its URL is in the answer, once)",
                "IssuedWebhook",
                status="201",
                params=ws,
                body="NewWebhook",
                operation_id="createWebhook",
            ),
        },
        "/workspaces/{workspace}/webhooks/{webhook}": {
            "get": _operation("Show a webhook", "Webhook", params=hook, operation_id="getWebhook"),
            "patch": _operation(
                "Change a webhook's prompt, channel, group, state or pre-authorized tools",
                "Webhook",
                params=hook,
                body="WebhookChanges",
                operation_id="updateWebhook",
            ),
            "delete": _operation(
                "Delete a webhook (its URL stops working at once)",
                "Deleted",
                params=hook,
                operation_id="deleteWebhook",
            ),
        },
        "/workspaces/{workspace}/events": {
            "get": _operation(
                "List a workspace's events, newest first",
                "EventPage",
                params=[
                    *ws,
                    *_PAGING,
                    {"name": "webhook", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "status",
                        "in": "query",
                        "schema": {
                            "type": "string",
                            "enum": ["queued", "running", "done", "failed"],
                        },
                    },
                ],
                operation_id="listEvents",
            )
        },
        "/events/{event_id}": {
            "get": _operation(
                "Show an event", "Event", params=_path_params("event_id"), operation_id="getEvent"
            )
        },
        "/events/{event_id}/replay": {
            "post": _operation(
                "Run an event again, as a new event",
                "Event",
                status="201",
                params=_path_params("event_id"),
                body="Replay",
                operation_id="replayEvent",
            )
        },
        "/approvals": {
            "get": _operation(
                "List queued calls, oldest first, a page at a time, each with a preview of "
                "its arguments (the whole arguments: GET /approvals/{approval_id})",
                "ApprovalSummaryPage",
                params=[
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
                    },
                    {
                        "name": "cursor",
                        "in": "query",
                        "description": "a next_cursor or previous_cursor of a page of this list",
                        "schema": {"type": "string"},
                    },
                    {"name": "workspace", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "status",
                        "in": "query",
                        "schema": _APPROVAL_STATUS,
                    },
                ],
                operation_id="listApprovals",
            )
        },
        "/approvals/{approval_id}": {
            "get": _operation(
                "Show a queued call",
                "Approval",
                params=_path_params("approval_id"),
                operation_id="getApproval",
            )
        },
        "/approvals/{approval_id}/approve": {
            "post": _operation(
                "Approve a queued call: the service runs it once (the answer waits for it)",
                "Approval",
                params=_path_params("approval_id"),
                body="Decision",
                operation_id="approveCall",
            )
        },
        "/approvals/{approval_id}/retry": {
            "post": _operation(
                "Run a call that failed after approval again, once",
                "Approval",
                params=_path_params("approval_id"),
                body="Decision",
                operation_id="retryCall",
            )
        },
        "/approvals/{approval_id}/deny": {
            "post": _operation(
                "Deny a queued call: it never runs",
                "Approval",
                params=_path_params("approval_id"),
                body="Decision",
                operation_id="denyCall",
            )
        },
        "/workspaces/{workspace}/groups/{group}/tokens": {
            "get": _operation(
                "List a group's MCP tokens",
                "TokenPage",
                params=group + _PAGING,
                operation_id="listTokens",
            ),
            "post": _operation(
                "Create an MCP token (shown once)",
                "IssuedToken",
                status="201",
                params=group,
                body="NewToken",
                operation_id="createToken",
            ),
        },
        "/workspaces/{workspace}/groups/{group}/tools": {
            "get": _operation(
                "List a group's tools: capability, label, permission and their sources",
                "ToolPage",
                params=[*group, *_PAGING],
                operation_id="listTools",
            )
        },
        "/workspaces/{workspace}/tools/{tool}/label": {
            "put": _operation(
                "Label a remote MCP tool (null: unlabeled, so write)",
                "Labeled",
                params=_path_params("workspace", "tool"),
                body="LabelChange",
                operation_id="labelTool",
            )
        },
        "/workspaces/{workspace}/tools/{tool}/permission": {
            "put": _operation(
                "Set (or with null, remove) a tool's permission for a group or the workspace",
                "PermissionSet",
                params=_path_params("workspace", "tool"),
                body="PermissionChange",
                operation_id="setToolPermission",
            )
        },
        "/workspaces/{workspace}/libraries": {
            "get": _operation(
                "List libraries with their documents and skills",
                "LibraryPage",
                params=[*ws, *_PAGING],
                operation_id="listLibraries",
            )
        },
        "/workspaces/{workspace}/libraries/{library}/documents": {
            "post": _operation(
                "Add a document to a library (replace: update the one with its slug)",
                "Document",
                status="201",
                params=_path_params("workspace", "library"),
                body="NewDocument",
                operation_id="addDocument",
            )
        },
        "/workspaces/{workspace}/channels/{channel}/messages": {
            "get": _operation(
                "A channel's messages, newest first (local:NAME, slack:…, webhook:…)",
                "MessagePage",
                params=[*_path_params("workspace", "channel"), *_PAGING],
                operation_id="listMessages",
            )
        },
        "/workspaces/{workspace}/groups/{group}/tokens/{token}": {
            "delete": _operation(
                "Revoke an MCP token at once (its sessions close)",
                "Token",
                params=_path_params("workspace", "group", "token"),
                operation_id="revokeToken",
            )
        },
    }


def openapi_document(base_url: str) -> dict[str, Any]:
    """The document, with ``base_url`` as the server."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agentws admin API",
            "version": __version__,
            "description": (
                "Administer agentws: webhooks, events, approvals, MCP tokens, tool "
                "permissions, libraries and channels. Authenticate "
                "with an admin API token (`agentws admin token create`) as a bearer token. "
                'Errors are {"error": {"code", "message"}}; lists are paginated with '
                "`limit` and the `next_cursor` of the previous page."
            ),
        },
        "servers": [{"url": f"{base_url.rstrip('/')}/api/v1"}],
        "security": [{"adminToken": []}],
        "components": {
            "securitySchemes": {"adminToken": {"type": "http", "scheme": "bearer"}},
            "schemas": _SCHEMAS,
        },
        "paths": _paths(),
    }
