"""The OpenAPI 3.1 document of the admin API, served at ``/api/v1/openapi.json``.

Generated from the shapes (:mod:`agentws.doors.api.shapes`: the bodies the
handlers read and the answers they give) and the path table here, which
names each operation's shapes. The suite runs schemathesis on it: every
documented operation is called with generated input, and no answer may be
a 5xx or differ from what is documented here.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel

from agentws import __version__
from agentws.doors.api.openapi_operations import Operation, components, operation
from agentws.doors.api.shapes import bodies as b
from agentws.doors.api.shapes import queries as q
from agentws.doors.api.shapes import records as r
from agentws.doors.api.shapes import webhooks as w

__all__ = ["openapi_document"]

_WS = "/workspaces/{workspace}"
_HOOK = _WS + "/webhooks/{webhook}"
_GROUP = _WS + "/groups/{group}"
_LIBRARY = _WS + "/libraries/{library}"
_CONNECTOR = _WS + "/connectors/{connector}"
_APPROVAL = "/approvals/{approval_id}"
# A connector's upstream failed (see agentws.doors.api.calls: UpstreamError is 502).
_UPSTREAM = "the upstream is down, refused the credential, or took too long"

_OPERATIONS = [
    # --- workspaces, groups, libraries, channels -------------------------------------------
    Operation("get", "/workspaces", "listWorkspaces", "List workspaces", r.WorkspacePage,
              query=q.Paging),
    Operation("patch", _WS, "renameWorkspace",
              "Rename a workspace (its slug, in every endpoint URL, stays)", r.Workspace,
              body=b.NameChange),
    Operation("patch", _GROUP, "renameGroup",
              "Rename a group (its slug, in its endpoint URL, stays)", r.Group, body=b.NameChange),
    Operation("get", _WS + "/libraries", "listLibraries",
              "List libraries with their documents and skills", r.LibraryPage, query=q.Paging),
    Operation("patch", _LIBRARY, "renameLibrary",
              "Rename a library (its slug, in its documents' URIs, stays)", r.Library,
              body=b.NameChange),
    Operation("post", _LIBRARY + "/documents", "addDocument",
              "Add a document to a library (replace: update the one with its slug)", r.Document,
              status="201", body=b.NewDocument),
    Operation("patch", _LIBRARY + "/documents/{document}", "setDocumentPolicy",
              "Change how a document reaches the agent and MCP clients (its policy)", r.Document,
              body=b.PolicyChange),
    Operation("get", _WS + "/channels/{channel}/messages", "listMessages",
              "A channel's messages, newest first (local:NAME, slack:…, webhook:…)",
              r.MessagePage, query=q.Paging),
    # --- webhooks ---------------------------------------------------------------------------
    Operation("get", _WS + "/webhooks", "listWebhooks", "List a workspace's webhooks",
              w.WebhookPage, query=q.Paging),
    Operation("post", _WS + "/webhooks", "createWebhook",
              "Create a webhook (its URL is in the answer, once)", w.IssuedWebhook,
              status="201", body=b.NewWebhook),
    Operation("get", _HOOK, "getWebhook", "Show a webhook", w.Webhook),
    Operation("patch", _HOOK, "updateWebhook",
              "Change a webhook's prompt, channel, group, state or pre-authorized tools",
              w.Webhook, body=b.WebhookChanges),
    Operation("delete", _HOOK, "deleteWebhook",
              "Delete a webhook (its URL stops working at once)", r.Deleted),
    Operation("post", _HOOK + "/rotate", "rotateWebhookUrl",
              "Issue a new URL (in the answer, once); the current one keeps working for the "
              "grace period", w.IssuedWebhook, body=b.RotateUrl),
    Operation("post", _HOOK + "/rotate-secret", "rotateWebhookSecret",
              "Verify with a new signing secret; the current one still verifies for the grace "
              "period", w.Webhook, body=b.RotateSecret),
    Operation("post", _HOOK + "/end-grace", "endWebhookGrace",
              "End the grace of the previous URL and/or secret now", w.Webhook,
              body=b.EndGrace),
    Operation("get", _HOOK + "/rotation", "getWebhookRotation",
              "How far senders have moved to the new URL and secret", w.RotationStatus),
    Operation("get", _HOOK + "/samples", "listSamples",
              "List what a capturing draft kept of its deliveries, newest first", w.SamplePage,
              query=q.Paging),
    Operation("get", _HOOK + "/samples/{sample}", "getSample", "Show a sample with its body",
              w.SampleDetail),
    Operation("post", _HOOK + "/try", "tryPrompt",
              "Run the agent on a sample or a past event with a candidate prompt, posting "
              "nothing: read tools run, write and destructive ones do not", w.DryRun,
              body=b.TryPrompt,
              bad_gateway="the model failed, or the try took longer than a run may"),
    Operation("get", _HOOK + "/failures", "getWebhookFailures",
              "A webhook's failure alerts: settings, pause, latest streak, replayable events",
              w.WebhookFailures),
    Operation("post", _HOOK + "/replay", "replayWebhookFailures",
              "Replay a webhook's failed events (those the body selects), each once, at a rate",
              w.BulkReplay, body=b.BulkReplayRequest),
    Operation("post", _HOOK + "/test", "testWebhook",
              "Send a webhook a signed sample event through its door's checks", w.TestEvent,
              body=b.TestEventRequest),
    Operation("get", _HOOK + "/deliveries", "listWebhookDeliveries",
              "A webhook's delivery log, newest first: every request to its URL, accepted or "
              "refused, with its status, reason, size, headers (secrets hidden), source and "
              "event", w.DeliveryPage, query=q.DeliveryFilters),
    # --- events -----------------------------------------------------------------------------
    Operation("get", _WS + "/events", "listEvents",
              "List a workspace's events, newest first, filtered and searched, a page at a "
              "time (keyset cursors: pages stay put while events arrive)", w.EventPage,
              query=q.EventFilters),
    Operation("get", "/events/{event_id}", "getEvent", "Show an event", w.Event),
    Operation("post", "/events/{event_id}/replay", "replayEvent",
              "Run an event again, as a new event", w.Event, status="201", body=b.Replay),
    # --- approvals and audit ----------------------------------------------------------------
    Operation("get", "/approvals", "listApprovals",
              "List queued calls (pending unless status says otherwise), oldest first, a page "
              "at a time, each with a preview of its arguments (the whole arguments: "
              "GET /approvals/{approval_id})", r.ApprovalSummaryPage, query=q.ApprovalFilters),
    Operation("get", "/audit", "listAudit",
              "Read the audit log, newest first, filtered, a page at a time", r.AuditPage,
              query=q.AuditFilters),
    Operation("get", _APPROVAL, "getApproval", "Show a queued call", r.Approval),
    Operation("post", _APPROVAL + "/approve", "approveCall",
              "Approve a queued call: the service runs it once (the answer waits for it)",
              r.Approval, body=b.Decision),
    Operation("post", _APPROVAL + "/retry", "retryCall",
              "Run a call that failed after approval again, once", r.Approval, body=b.Decision),
    Operation("post", _APPROVAL + "/deny", "denyCall", "Deny a queued call: it never runs",
              r.Approval, body=b.Decision),
    # --- tokens, tools, OAuth clients -------------------------------------------------------
    Operation("get", _GROUP + "/tokens", "listTokens", "List a group's MCP tokens",
              r.TokenPage, query=q.Paging),
    Operation("post", _GROUP + "/tokens", "createToken", "Create an MCP token (shown once)",
              r.IssuedToken, status="201", body=b.NewToken),
    Operation("delete", _GROUP + "/tokens/{token}", "revokeToken",
              "Revoke an MCP token at once (its sessions close)", r.Token),
    Operation("get", _GROUP + "/tools", "listTools",
              "List a group's tools: capability, label, permission and their sources",
              r.ToolPage, query=q.Paging),
    Operation("put", _WS + "/tools/{tool}/label", "labelTool",
              "Label a remote MCP tool (null: unlabeled, so write)", r.Labeled,
              body=b.LabelChange),
    Operation("put", _WS + "/tools/{tool}/permission", "setToolPermission",
              "Set (or with null, remove) a tool's permission for a group or the workspace",
              r.PermissionSet, body=b.PermissionChange),
    Operation("get", "/oauth/clients", "listOAuthClients",
              "List OAuth clients (registered by an operator, by themselves, or by document)",
              r.OAuthClientPage, query=q.Paging),
    Operation("post", "/oauth/clients", "addOAuthClient",
              "Register an OAuth client by hand (a confidential one's secret is shown once)",
              r.RegisteredOAuthClient, status="201", body=b.NewOAuthClient),
    Operation("delete", "/oauth/clients/{client}", "removeOAuthClient",
              "Remove an OAuth client and revoke its tokens at once", r.OAuthClient),
    # --- connectors -------------------------------------------------------------------------
    Operation("get", _WS + "/connectors", "listConnectors",
              "List a workspace's connectors (never their secrets)", r.ConnectorPage,
              query=q.Paging),
    Operation("get", _CONNECTOR, "getConnector", "Show a connector", r.Connector),
    Operation("patch", _CONNECTOR, "setConnectorActive",
              "Offer a connector's tools again (active: true) or stop offering them, keeping "
              "everything else (active: false); pass its remote's requests on to callers "
              "(relay_requests: true) or refuse them (false)", r.Connector,
              body=b.ConnectorChange),
    Operation("post", _CONNECTOR + "/test", "testConnector",
              "Connect to a connector's upstream once with its credential, changing nothing: a "
              "remote MCP server's handshake and tool list; one authenticated read for GitHub, "
              "Slack, Stripe; a GET of an incoming webhook's URL", r.ConnectorCheck,
              bad_gateway=_UPSTREAM),
    Operation("post", _CONNECTOR + "/authorize", "authorizeConnector",
              "Start authorizing an oauth or client_credentials connector upstream (audited "
              "as connector.authorize): the upstream's consent page to open, or, for client "
              "credentials, done at once", r.ConnectorAuthorizationStarted,
              bad_gateway=_UPSTREAM),
    Operation("delete", _CONNECTOR + "/authorization", "disconnectConnector",
              "Revoke an OAuth connector's tokens at the upstream (RFC 7009, when offered) "
              "and delete its grant (audited as connector.disconnect)",
              r.ConnectorAuthorizationStarted, bad_gateway=_UPSTREAM),
    Operation("post", _CONNECTOR + "/refresh", "refreshConnector",
              "Fetch a remote MCP connector's tools into the cache now (audited as "
              "connector.refresh); a tool whose definition changed loses its label",
              r.ToolRefresh, bad_gateway=_UPSTREAM),
]  # fmt: skip


@functools.cache
def _described() -> tuple[dict[str, Any], dict[str, Any]]:
    """The paths and the schemas: the same for every request, so made once."""
    paths: dict[str, Any] = {}
    for row in _OPERATIONS:
        paths.setdefault(row.path, {})[row.method] = operation(row)
    answers: list[type[BaseModel]] = [r.Error, *{row.answer: None for row in _OPERATIONS}]
    bodies: list[type[BaseModel]] = [*{row.body: None for row in _OPERATIONS if row.body}]
    return paths, components(answers, bodies)


def openapi_document(base_url: str) -> dict[str, Any]:
    """The document, with ``base_url`` as the server."""
    paths, schemas = _described()
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
            "schemas": schemas,
        },
        "paths": paths,
    }
