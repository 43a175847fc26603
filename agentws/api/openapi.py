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
from .openapi_changes import CHANGE_PATHS, CHANGE_SCHEMAS
from .openapi_operations import PAGING, operation, path_params
from .openapi_schemas import APPROVAL_STATUS, SCHEMAS, ref
from .openapi_try import TRY_SCHEMAS

__all__ = ["openapi_document"]


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


def _tryoperation(params: list[dict[str, Any]]) -> dict[str, Any]:
    """Try a prompt: 502 when the model fails (or the try outlasts a run's deadline)."""
    described = operation(
        "Run the agent on a sample or a past event with a candidate prompt, posting nothing: "
        "read tools run, write and destructive ones do not",
        "DryRun",
        params=params,
        body="TryPrompt",
        operation_id="tryPrompt",
    )
    described["responses"]["502"] = {
        "description": "the model failed, or the try took longer than a run may",
        "content": {"application/json": {"schema": ref("Error")}},
    }
    return described


def _paths() -> dict[str, Any]:
    ws = path_params("workspace")
    hook = path_params("workspace", "webhook")
    group = path_params("workspace", "group")
    return {
        "/workspaces": {
            "get": operation(
                "List workspaces", "WorkspacePage", params=PAGING, operation_id="listWorkspaces"
            )
        },
        "/workspaces/{workspace}/webhooks": {
            "get": operation(
                "List a workspace's webhooks",
                "WebhookPage",
                params=ws + PAGING,
                operation_id="listWebhooks",
            ),
            "post": operation(
                "Create a webhook (its URL is in the answer, once)",
                "IssuedWebhook",
                status="201",
                params=ws,
                body="NewWebhook",
                operation_id="createWebhook",
            ),
        },
        "/workspaces/{workspace}/webhooks/{webhook}": {
            "get": operation("Show a webhook", "Webhook", params=hook, operation_id="getWebhook"),
            "patch": operation(
                "Change a webhook's prompt, channel, group, state or pre-authorized tools",
                "Webhook",
                params=hook,
                body="WebhookChanges",
                operation_id="updateWebhook",
            ),
            "delete": operation(
                "Delete a webhook (its URL stops working at once)",
                "Deleted",
                params=hook,
                operation_id="deleteWebhook",
            ),
        },
        "/workspaces/{workspace}/webhooks/{webhook}/rotate": {
            "post": operation(
                "Issue a new URL (in the answer, once); the current one keeps working for "
                "the grace period",
                "IssuedWebhook",
                params=hook,
                body="RotateUrl",
                operation_id="rotateWebhookUrl",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/rotate-secret": {
            "post": operation(
                "Verify with a new signing secret; the current one still verifies for the "
                "grace period",
                "Webhook",
                params=hook,
                body="RotateSecret",
                operation_id="rotateWebhookSecret",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/end-grace": {
            "post": operation(
                "End the grace of the previous URL and/or secret now",
                "Webhook",
                params=hook,
                body="EndGrace",
                operation_id="endWebhookGrace",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/rotation": {
            "get": operation(
                "How far senders have moved to the new URL and secret",
                "RotationStatus",
                params=hook,
                operation_id="getWebhookRotation",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/samples": {
            "get": operation(
                "List what a capturing draft kept of its deliveries, newest first",
                "SamplePage",
                params=hook + PAGING,
                operation_id="listSamples",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/samples/{sample}": {
            "get": operation(
                "Show a sample with its body",
                "SampleDetail",
                params=path_params("workspace", "webhook", "sample"),
                operation_id="getSample",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/try": {
            "post": _tryoperation(hook),
        },
        "/workspaces/{workspace}/webhooks/{webhook}/failures": {
            "get": operation(
                "A webhook's failure alerts: settings, pause, latest streak, replayable events",
                "WebhookFailures",
                params=hook,
                operation_id="getWebhookFailures",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/replay": {
            "post": operation(
                "Replay a webhook's failed events (those the body selects), each once, at a rate",
                "BulkReplay",
                params=hook,
                body="BulkReplayRequest",
                operation_id="replayWebhookFailures",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/test": {
            "post": operation(
                "Send a webhook a signed sample event through its door's checks",
                "TestEvent",
                params=hook,
                body="TestEventRequest",
                operation_id="testWebhook",
            )
        },
        "/workspaces/{workspace}/webhooks/{webhook}/deliveries": {
            "get": operation(
                "A webhook's delivery log, newest first: every request to its URL, accepted "
                "or refused, with its status, reason, size, headers (secrets hidden), source "
                "and event",
                "DeliveryPage",
                params=[
                    *hook,
                    *PAGING,
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
            "get": operation(
                "List a workspace's events, newest first, filtered and searched, a page at a "
                "time (keyset cursors: pages stay put while events arrive)",
                "EventPage",
                params=[*ws, *_EVENT_FILTERS],
                operation_id="listEvents",
            )
        },
        "/events/{event_id}": {
            "get": operation(
                "Show an event", "Event", params=path_params("event_id"), operation_id="getEvent"
            )
        },
        "/events/{event_id}/replay": {
            "post": operation(
                "Run an event again, as a new event",
                "Event",
                status="201",
                params=path_params("event_id"),
                body="Replay",
                operation_id="replayEvent",
            )
        },
        "/approvals": {
            "get": operation(
                "List queued calls (pending unless status says otherwise), oldest first, a "
                "page at a time, each with a preview of its arguments (the whole arguments: "
                "GET /approvals/{approval_id})",
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
                        "description": "the calls in this status (default: pending, the "
                        "queue), or all of them",
                        "schema": {
                            "type": "string",
                            "enum": [*APPROVAL_STATUS["enum"], "all"],
                            "default": "pending",
                        },
                    },
                ],
                operation_id="listApprovals",
            )
        },
        "/audit": {
            "get": operation(
                "Read the audit log, newest first, filtered, a page at a time",
                "AuditPage",
                params=AUDIT_PARAMS,
                operation_id="listAudit",
            )
        },
        "/approvals/{approval_id}": {
            "get": operation(
                "Show a queued call",
                "Approval",
                params=path_params("approval_id"),
                operation_id="getApproval",
            )
        },
        "/approvals/{approval_id}/approve": {
            "post": operation(
                "Approve a queued call: the service runs it once (the answer waits for it)",
                "Approval",
                params=path_params("approval_id"),
                body="Decision",
                operation_id="approveCall",
            )
        },
        "/approvals/{approval_id}/retry": {
            "post": operation(
                "Run a call that failed after approval again, once",
                "Approval",
                params=path_params("approval_id"),
                body="Decision",
                operation_id="retryCall",
            )
        },
        "/approvals/{approval_id}/deny": {
            "post": operation(
                "Deny a queued call: it never runs",
                "Approval",
                params=path_params("approval_id"),
                body="Decision",
                operation_id="denyCall",
            )
        },
        "/workspaces/{workspace}/groups/{group}/tokens": {
            "get": operation(
                "List a group's MCP tokens",
                "TokenPage",
                params=group + PAGING,
                operation_id="listTokens",
            ),
            "post": operation(
                "Create an MCP token (shown once)",
                "IssuedToken",
                status="201",
                params=group,
                body="NewToken",
                operation_id="createToken",
            ),
        },
        "/workspaces/{workspace}/groups/{group}/tools": {
            "get": operation(
                "List a group's tools: capability, label, permission and their sources",
                "ToolPage",
                params=[*group, *PAGING],
                operation_id="listTools",
            )
        },
        "/workspaces/{workspace}/tools/{tool}/label": {
            "put": operation(
                "Label a remote MCP tool (null: unlabeled, so write)",
                "Labeled",
                params=path_params("workspace", "tool"),
                body="LabelChange",
                operation_id="labelTool",
            )
        },
        "/workspaces/{workspace}/tools/{tool}/permission": {
            "put": operation(
                "Set (or with null, remove) a tool's permission for a group or the workspace",
                "PermissionSet",
                params=path_params("workspace", "tool"),
                body="PermissionChange",
                operation_id="setToolPermission",
            )
        },
        "/workspaces/{workspace}/libraries": {
            "get": operation(
                "List libraries with their documents and skills",
                "LibraryPage",
                params=[*ws, *PAGING],
                operation_id="listLibraries",
            )
        },
        "/workspaces/{workspace}/libraries/{library}/documents": {
            "post": operation(
                "Add a document to a library (replace: update the one with its slug)",
                "Document",
                status="201",
                params=path_params("workspace", "library"),
                body="NewDocument",
                operation_id="addDocument",
            )
        },
        "/workspaces/{workspace}/channels/{channel}/messages": {
            "get": operation(
                "A channel's messages, newest first (local:NAME, slack:…, webhook:…)",
                "MessagePage",
                params=[*path_params("workspace", "channel"), *PAGING],
                operation_id="listMessages",
            )
        },
        "/oauth/clients": {
            "get": operation(
                "List OAuth clients (registered by an operator, by themselves, or by document)",
                "OAuthClientPage",
                params=PAGING,
                operation_id="listOAuthClients",
            ),
            "post": operation(
                "Register an OAuth client by hand (a confidential one's secret is shown once)",
                "RegisteredOAuthClient",
                status="201",
                body="NewOAuthClient",
                operation_id="addOAuthClient",
            ),
        },
        "/oauth/clients/{client}": {
            "delete": operation(
                "Remove an OAuth client and revoke its tokens at once",
                "OAuthClient",
                params=path_params("client"),
                operation_id="removeOAuthClient",
            )
        },
        "/workspaces/{workspace}/groups/{group}/tokens/{token}": {
            "delete": operation(
                "Revoke an MCP token at once (its sessions close)",
                "Token",
                params=path_params("workspace", "group", "token"),
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
                "Administer agentws: workspaces, groups, webhooks, events, approvals, MCP tokens, "
                "OAuth clients, tool permissions, connectors, libraries and channels. Authenticate "
                "with an admin API token (`agentws admin token create`) as a bearer token. "
                'Errors are {"error": {"code", "message"}}; lists are paginated with '
                "`limit` and the `next_cursor` of the previous page."
            ),
        },
        "servers": [{"url": f"{base_url.rstrip('/')}/api/v1"}],
        "security": [{"adminToken": []}],
        "components": {
            "securitySchemes": {"adminToken": {"type": "http", "scheme": "bearer"}},
            "schemas": {**SCHEMAS, **TRY_SCHEMAS, **AUDIT_SCHEMAS, **CHANGE_SCHEMAS},
        },
        "paths": {**_paths(), **CHANGE_PATHS},
    }
