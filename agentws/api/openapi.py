"""The OpenAPI 3.1 document of the admin API, served at ``/api/v1/openapi.json``.

Written by hand next to the handlers (:mod:`agentws.api.routes`) and checked
against them by the suite, which runs schemathesis on it: every documented
operation is called with generated input, and no answer may be a 5xx or
differ from what is documented here.
"""

from __future__ import annotations

from typing import Any

from agentws import __version__

from .openapi_audit import AUDIT_PARAMS, AUDIT_SCHEMAS
from .openapi_schemas import APPROVAL_STATUS, SCHEMAS, ref
from .openapi_try import TRY_SCHEMAS

__all__ = ["openapi_document"]


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
            "content": {"application/json": {"schema": ref(schema)}},
        }
    }
    for code, text in _ERRORS.items():
        responses[code] = {
            "description": text,
            "content": {"application/json": {"schema": ref("Error")}},
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


_EVENT_FILTERS = [
    {
        "name": "webhook",
        "in": "query",
        "description": "only this webhook's events (its name or id)",
        "schema": {"type": "string"},
    },
    {
        "name": "status",
        "in": "query",
        "schema": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
    },
    {
        "name": "since",
        "in": "query",
        "description": "received at or after: ISO 8601 (UTC unless it says otherwise), or a "
        "span before now such as 30m, 24h, 7d",
        "schema": {"type": "string"},
    },
    {
        "name": "until",
        "in": "query",
        "description": "received before: as for since",
        "schema": {"type": "string"},
    },
    {
        "name": "q",
        "in": "query",
        "description": "words of the event (its header values and the string and number "
        'values of its body), all of them: `word`, `pre*`, `"a phrase"`; case and accents '
        "ignored (docs/webhooks.md, Searching events)",
        "schema": {"type": "string"},
    },
    {
        "name": "limit",
        "in": "query",
        "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
    },
    {
        "name": "cursor",
        "in": "query",
        "description": "a next_cursor or previous_cursor of a page of this list, with the same "
        "filters",
        "schema": {"type": "string"},
    },
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
            "content": {"application/json": {"schema": ref(body)}},
        }
    return operation


def _try_operation(params: list[dict[str, Any]]) -> dict[str, Any]:
    """Try a prompt: 502 when the model fails (or the try outlasts a run's deadline)."""
    operation = _operation(
        "Run the agent on a sample or a past event with a candidate prompt, posting nothing: "
        "read tools run, write and destructive ones do not",
        "DryRun",
        params=params,
        body="TryPrompt",
        operation_id="tryPrompt",
    )
    operation["responses"]["502"] = {
        "description": "the model failed, or the try took longer than a run may",
        "content": {"application/json": {"schema": ref("Error")}},
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
        "/workspaces/{workspace}/webhooks/{webhook}/rotate": {
            "post": _operation(
                "Issue a new URL (in the answer, once); the current one keeps working for "
                "the grace period",
                "IssuedWebhook",
                params=hook,
                body="RotateUrl",
                operation_id="rotateWebhookUrl",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/rotate-secret": {
            "post": _operation(
                "Verify with a new signing secret; the current one still verifies for the "
                "grace period",
                "Webhook",
                params=hook,
                body="RotateSecret",
                operation_id="rotateWebhookSecret",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/end-grace": {
            "post": _operation(
                "End the grace of the previous URL and/or secret now",
                "Webhook",
                params=hook,
                body="EndGrace",
                operation_id="endWebhookGrace",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/rotation": {
            "get": _operation(
                "How far senders have moved to the new URL and secret",
                "RotationStatus",
                params=hook,
                operation_id="getWebhookRotation",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/samples": {
            "get": _operation(
                "List what a capturing draft kept of its deliveries, newest first",
                "SamplePage",
                params=hook + _PAGING,
                operation_id="listSamples",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/samples/{sample}": {
            "get": _operation(
                "Show a sample with its body",
                "SampleDetail",
                params=_path_params("workspace", "webhook", "sample"),
                operation_id="getSample",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/try": {
            "post": _try_operation(hook),
        },
        "/workspaces/{workspace}/webhooks/{webhook}/failures": {
            "get": _operation(
                "A webhook's failure alerts: settings, pause, latest streak, replayable events",
                "WebhookFailures",
                params=hook,
                operation_id="getWebhookFailures",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/replay": {
            "post": _operation(
                "Replay a webhook's failed events (those the body selects), each once, at a rate",
                "BulkReplay",
                params=hook,
                body="BulkReplayRequest",
                operation_id="replayWebhookFailures",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/test": {
            "post": _operation(
                "Send a webhook a signed sample event through its door's checks",
                "TestEvent",
                params=hook,
                body="TestEventRequest",
                operation_id="testWebhook",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/deliveries": {
            "get": _operation(
                "A webhook's delivery log, newest first: every request to its URL, accepted "
                "or refused, with its status, reason, size, headers (secrets hidden), source "
                "and event",
                "DeliveryPage",
                params=[
                    *hook,
                    *_PAGING,
                    {
                        "name": "status",
                        "in": "query",
                        "description": "accepted (2xx), refused (the rest), or one HTTP status",
                        "schema": {
                            "type": "string",
                            "pattern": "^(accepted|refused|[1-5][0-9]{2})$",
                        },
                    },
                    {
                        "name": "reason",
                        "in": "query",
                        "description": "one reason only (queued, duplicate, invalid_signature...)",
                        "schema": {"type": "string"},
                    },
                ],
                operation_id="listWebhookDeliveries",
            )
        },
        "/workspaces/{workspace}/events": {
            "get": _operation(
                "List a workspace's events, newest first, filtered and searched, a page at a "
                "time (keyset cursors: pages stay put while events arrive)",
                "EventPage",
                params=[*ws, *_EVENT_FILTERS],
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
                        "schema": APPROVAL_STATUS,
                    },
                ],
                operation_id="listApprovals",
            )
        },
        "/audit": {
            "get": _operation(
                "Read the audit log, newest first, filtered, a page at a time",
                "AuditPage",
                params=AUDIT_PARAMS,
                operation_id="listAudit",
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
        "/oauth/clients": {
            "get": _operation(
                "List OAuth clients (registered by an operator, by themselves, or by document)",
                "OAuthClientPage",
                params=_PAGING,
                operation_id="listOAuthClients",
            ),
            "post": _operation(
                "Register an OAuth client by hand (a confidential one's secret is shown once)",
                "RegisteredOAuthClient",
                status="201",
                body="NewOAuthClient",
                operation_id="addOAuthClient",
            ),
        },
        "/oauth/clients/{client}": {
            "delete": _operation(
                "Remove an OAuth client and revoke its tokens at once",
                "OAuthClient",
                params=_path_params("client"),
                operation_id="removeOAuthClient",
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
                "Administer agentws: webhooks, events, approvals, MCP tokens, OAuth clients, tool "
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
            "schemas": {**SCHEMAS, **TRY_SCHEMAS, **AUDIT_SCHEMAS},
        },
        "paths": _paths(),
    }
