"""The schemas of the admin API's OpenAPI document (:mod:`agentws.api.openapi`).

One per JSON shape the handlers answer or read (the shapes of
:mod:`agentws.views`), and a page of each listed kind.
"""

from __future__ import annotations

from typing import Any

from agentws.domain.models import ApprovalStatus, VerificationScheme

__all__ = ["APPROVAL_STATUS", "SCHEMAS", "ref"]

_TIME = {"type": "string", "format": "date-time"}
_TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
_STR_OR_NULL = {"type": ["string", "null"]}
_MENTIONS = "its messages may ping a whole channel (@channel, @here...); false: made inert"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


def _page(item: str) -> dict[str, Any]:
    return _object({"items": {"type": "array", "items": ref(item)}, "next_cursor": _STR_OR_NULL})


# The statuses a person sees (``running``: approved, and an instance runs it now).
APPROVAL_STATUS = {"type": "string", "enum": [s.value for s in ApprovalStatus]}

SCHEMAS: dict[str, Any] = {
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
            ref("Webhook"),
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
            "status": APPROVAL_STATUS,
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
            "status": APPROVAL_STATUS,
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
            "items": {"type": "array", "items": ref("ApprovalSummary")},
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
            "status": {"type": "string", "enum": ["valid", "revoked", "expired"]},
            "revoked": {"type": "boolean"},
            "created_at": _TIME,
            "last_used_at": _TIME_OR_NULL,
            "revoked_at": _TIME_OR_NULL,
            "expires_at": {
                **_TIME_OR_NULL,
                "description": "when an OAuth access token stops working; null for a static token",
            },
            "oauth_client": {
                **_STR_OR_NULL,
                "description": "the OAuth client holding it (client id); null for a static token",
            },
        }
    ),
    "OAuthClient": _object(
        {
            "id": {"type": "string"},
            "client_id": {"type": "string"},
            "kind": {"type": "string", "enum": ["dynamic", "metadata", "operator"]},
            "name": {"type": "string"},
            "redirect_uris": {"type": "array", "items": {"type": "string"}},
            "confidential": {"type": "boolean"},
            "created_at": _TIME,
        }
    ),
    "RegisteredOAuthClient": {
        "allOf": [
            ref("OAuthClient"),
            _object(
                {
                    "client_secret": {
                        **_STR_OR_NULL,
                        "description": "a confidential client's secret, shown this once",
                    }
                }
            ),
        ]
    },
    "NewOAuthClient": {
        "type": "object",
        "required": ["name", "redirect_uris"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "redirect_uris": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 10,
                "description": "exact URIs; plain http only on loopback, where any port matches",
            },
            "confidential": {
                "type": "boolean",
                "description": "issue a client secret (default: a public client, PKCE only)",
            },
        },
    },
    "IssuedToken": {
        "allOf": [
            ref("Token"),
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
SCHEMAS |= {
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
            "documents": {"type": "array", "items": ref("Document")},
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
SCHEMAS["Delivery"] = _object(
    {
        "id": {
            "type": ["integer", "null"],
            "description": "a refusal's (or duplicate's) row; null for an accepted delivery, "
            "which is its event",
        },
        "received_at": _TIME,
        "status": {"type": "integer", "description": "the HTTP status answered"},
        "reason": {
            "type": "string",
            "description": "queued, duplicate, or the refusal's error code",
        },
        "accepted": {"type": "boolean", "description": "answered 2xx"},
        "body_bytes": {"type": "integer"},
        "headers": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "the request's headers, credentials and signatures ***; for an "
            "accepted delivery, the headers its event keeps",
        },
        "source": _STR_OR_NULL,
        "event_id": _STR_OR_NULL,
        "omitted": {
            "type": "integer",
            "description": "refusals just before this one that the log's rate bound left out",
        },
    }
)
for _name in (
    "Workspace",
    "Webhook",
    "Delivery",
    "Event",
    "Token",
    "OAuthClient",
    "Tool",
    "Library",
    "Message",
):
    SCHEMAS[f"{_name}Page"] = _page(_name)
