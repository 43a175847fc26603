"""The OpenAPI schemas of capture and "Try a prompt" (:mod:`agentws.api.webhook_try`)."""

from __future__ import annotations

from typing import Any

from agentws.domain.dry_runs import TriedOutcome

from .openapi_schemas import ref

__all__ = ["TRY_SCHEMAS"]

_TIME = {"type": "string", "format": "date-time"}
_HEADERS = {"type": "object", "additionalProperties": {"type": "string"}}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


_SAMPLE = {
    "id": {"type": "string"},
    "webhook_id": {"type": "string"},
    "received_at": _TIME,
    "size": {"type": "integer", "description": "bytes of the body kept"},
    "headers": _HEADERS,
    "preview": {"type": "string", "description": "the start of the body, on one line"},
}

TRY_SCHEMAS: dict[str, Any] = {
    "Sample": _object(_SAMPLE),
    "SampleDetail": _object({**_SAMPLE, "body": {"description": "the event kept (JSON)"}}),
    "SamplePage": _object(
        {
            "items": {"type": "array", "items": ref("Sample")},
            "next_cursor": {"type": ["string", "null"]},
        }
    ),
    "TryPrompt": {
        "type": "object",
        "description": "exactly one of sample_id and event_id (an event of this webhook)",
        "properties": {
            "sample_id": {"type": "string"},
            "event_id": {"type": "string"},
            "prompt": {"type": "string", "description": "the candidate; default: the webhook's"},
        },
    },
    "TriedCall": _object(
        {
            "name": {"type": "string"},
            "capability": {
                "type": ["string", "null"],
                "enum": ["read", "write", "destructive", None],
            },
            "arguments": {"type": "object"},
            "outcome": {"type": "string", "enum": [o.value for o in TriedOutcome]},
            "outcome_label": {"type": "string"},
            "detail": {"type": "string", "description": "a read's result, or what would happen"},
        }
    ),
    "DryRun": _object(
        {
            "text": {"type": "string", "description": "the message it would post (not posted)"},
            "model": {"type": "string"},
            "prompt": {"type": "string"},
            "source": {"type": "string", "enum": ["sample", "event"]},
            "source_id": {"type": "string"},
            "tool_calls": {"type": "array", "items": ref("TriedCall")},
            "usage": {"type": "object", "additionalProperties": {"type": "integer"}},
        }
    ),
}
