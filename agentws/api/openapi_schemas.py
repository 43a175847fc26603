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
_CAPTURE = (
    "while a draft, keep deliveries as samples (202 captured) instead of refusing them; "
    "a webhook created to capture is a draft unless active says otherwise"
)


# A webhook's failure alert settings, as created and changed.
_ALERT_SETTINGS: dict[str, Any] = {
    "alert_after": {
        "type": "integer",
        "minimum": 0,
        "maximum": 1000,
        "default": 3,
        "description": "failed events in a row that post one alert; 0: no alerts",
    },
    "alerts_channel": {
        "type": "string",
        "description": 'where alerts go (a channel reference); "": the webhook\'s own channel',
    },
    "pause_on_failure": {
        "type": "boolean",
        "default": False,
        "description": "the alert also pauses the webhook (deliveries get 403 until activated)",
    },
}


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
            "status": {"type": "string", "enum": ["active", "draft", "paused"]},
            "verification": {"type": "string"},
            "rate_per_min": {"type": "integer"},
            "burst": {"type": "integer"},
            "max_body_bytes": {"type": "integer"},
            "concurrency": {"type": "integer"},
            "allowed_tools": {"type": "array", "items": {"type": "string"}},
            "allow_mentions": {"type": "boolean"},
            "capture": {"type": "boolean"},
            "alert_after": {"type": "integer"},
            "alerts_channel": _STR_OR_NULL,
            "pause_on_failure": {"type": "boolean"},
            "paused_at": _TIME_OR_NULL,
            "prompt": {"type": "string"},
            "url_generation": {"type": "integer", "description": "1, one more at each rotation"},
            "previous_url_until": {
                **_TIME_OR_NULL,
                "description": "until when the URL before the last rotation still works",
            },
            "secret_generation": {"type": ["integer", "null"]},
            "previous_secret_until": {
                **_TIME_OR_NULL,
                "description": "until when the secret before the last rotation still verifies",
            },
            "created_at": _TIME,
            "updated_at": _TIME,
        }
    ),
    "RotateUrl": {
        "type": "object",
        "properties": {
            "grace": {
                "type": "string",
                "default": "24h",
                "description": "how long the current URL keeps working: 90s, 30m, 24h, 7d "
                "(at most 30d), or 0",
            }
        },
    },
    "RotateSecret": {
        "type": "object",
        "required": ["secret"],
        "properties": {
            "secret": {"type": "string", "writeOnly": True},
            "grace": {
                "type": "string",
                "default": "24h",
                "description": "how long the current secret still verifies (as for RotateUrl)",
            },
        },
    },
    "EndGrace": {
        "type": "object",
        "properties": {"which": {"type": "string", "enum": ["url", "secret", "both"]}},
    },
    "RotationStatus": _object(
        {
            "url_generation": {"type": "integer"},
            "previous_url_until": _TIME_OR_NULL,
            "via_new_url": {"type": "integer"},
            "via_previous_url": {"type": "integer"},
            "last_via_previous_url": _TIME_OR_NULL,
            "secret_generation": {"type": "integer"},
            "previous_secret_until": _TIME_OR_NULL,
            "via_new_secret": {"type": "integer"},
            "via_previous_secret": {"type": "integer"},
            "last_via_previous_secret": _TIME_OR_NULL,
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
            "max_body_bytes": {
                "type": "integer",
                "description": "the largest body accepted, 1 to 2 MiB (default "
                "AGENTWS_MAX_BODY_BYTES, 1 MiB)",
            },
            "allow_tools": {"type": "array", "items": {"type": "string"}},
            "allow_mentions": {"type": "boolean", "default": False, "description": _MENTIONS},
            "capture": {"type": "boolean", "default": False, "description": _CAPTURE},
            **_ALERT_SETTINGS,
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
            "capture": {"type": "boolean", "description": _CAPTURE},
            **_ALERT_SETTINGS,
        },
    },
    "Deleted": _object({"id": {"type": "string"}, "deleted": {"type": "boolean"}}),
    "FailureStreak": _object(
        {
            "failures": {"type": "integer"},
            "open": {"type": "boolean"},
            "started_at": _TIME,
            "last_failed_at": _TIME,
            "last_event_id": _STR_OR_NULL,
            "last_error": _STR_OR_NULL,
            "alerted_at": _TIME_OR_NULL,
            "paused_at": _TIME_OR_NULL,
            "alert_posted_at": _TIME_OR_NULL,
            "alert_message_id": _STR_OR_NULL,
            "ended_at": _TIME_OR_NULL,
            "recovered_event_id": _STR_OR_NULL,
            "recovery_posted_at": _TIME_OR_NULL,
            "recovery_message_id": _STR_OR_NULL,
            "notice_error": _STR_OR_NULL,
        }
    ),
    "WebhookFailures": _object(
        {
            "webhook": {"type": "string"},
            "status": {"type": "string", "enum": ["active", "draft", "paused"]},
            "paused_at": _TIME_OR_NULL,
            "alert_after": {"type": "integer"},
            "alerts_channel": _STR_OR_NULL,
            "pause_on_failure": {"type": "boolean"},
            "failure_streak": {"oneOf": [ref("FailureStreak"), {"type": "null"}]},
            "replayable": {
                "type": "integer",
                "description": "failed events never replayed: what a bulk replay would take",
            },
        }
    ),
    "BulkReplayRequest": {
        "type": "object",
        "properties": {
            "since": {**_TIME, "description": "received at or after (UTC unless it says)"},
            "until": {**_TIME, "description": "received before"},
            "error_contains": {"type": "string", "maxLength": 200},
            "rate_per_min": {
                "type": "integer",
                "minimum": 1,
                "maximum": 6000,
                "description": "replays a minute at most; default: the webhook's rate",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000},
            "current_prompt": {"type": "boolean", "default": False},
            "dry_run": {"type": "boolean", "default": False},
        },
    },
    "BulkReplay": _object(
        {
            "id": {"type": "string"},
            "webhook": {"type": "string"},
            "webhook_id": {"type": "string"},
            "dry_run": {"type": "boolean"},
            "selection": _object(
                {
                    "status": {"type": "string", "enum": ["failed"]},
                    "since": _TIME_OR_NULL,
                    "until": _TIME_OR_NULL,
                    "error_contains": _STR_OR_NULL,
                }
            ),
            "rate_per_min": {"type": "integer"},
            "matched": {"type": "integer"},
            "queued": {"type": "integer"},
            "left": {"type": "integer", "description": "more events match: replay again"},
            "events": {
                "type": "array",
                "items": _object(
                    {
                        "id": {"type": "string"},
                        "received_at": _TIME,
                        "error": _STR_OR_NULL,
                        "replay_id": _STR_OR_NULL,
                    }
                ),
            },
        }
    ),
    "TestEventRequest": {
        "type": "object",
        "properties": {
            "sample": {
                "type": "string",
                "enum": ["github", "stripe", "standard_webhooks", "slack", "plain"],
                "description": "whose delivery to imitate; default: the webhook's scheme's sender",
            }
        },
    },
    "TestEvent": _object(
        {
            "webhook": {"type": "string"},
            "sample": {"type": "string"},
            "status": {"type": "integer", "description": "the door's HTTP status"},
            "answer": {"type": "object", "description": "the door's JSON answer"},
            "event_id": _STR_OR_NULL,
        }
    ),
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
            "url_generation": {"type": ["integer", "null"]},
            "secret_generation": {"type": ["integer", "null"]},
        }
    ),
    "EventSummary": _object(
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
            "body_bytes": {"type": "integer", "description": "the size of the body"},
        }
    ),
    "EventPage": _object(
        {
            "items": {"type": "array", "items": ref("EventSummary")},
            "next_cursor": {
                **_STR_OR_NULL,
                "description": "pass as `cursor` for older events; null on the last page",
            },
            "previous_cursor": {
                **_STR_OR_NULL,
                "description": "pass as `cursor` for newer events; null on the first page",
            },
            "unindexed": {
                "type": "integer",
                "description": "with q: events stored but not yet in the search index (any "
                "workspace), which the search could not look at; 0 otherwise",
            },
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
                "items": {"type": "string", "maxLength": 2048},
                "minItems": 1,
                "maxItems": 10,
                "description": "exact URIs: https, plain http only on loopback (where any port "
                "matches), or an app's own scheme in reverse-domain form "
                "(com.example.app:/callback); no user info, no fragment",
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
            "schema_hazards": {
                "type": "array",
                "items": {"type": "string"},
                "description": "What makes the tool's input schema costly to check (arguments "
                "are then checked in a worker process, within AGENTWS_TOOL_CHECK_TIMEOUT_S)",
            },
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
    "Token",
    "OAuthClient",
    "Tool",
    "Library",
    "Message",
):
    SCHEMAS[f"{_name}Page"] = _page(_name)
