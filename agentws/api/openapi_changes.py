"""The OpenAPI paths and schemas of renames, a document's policy and connectors.

The operations of :mod:`agentws.api.routes` that change a workspace's,
group's or library's display name or a document's policy, and those of
:mod:`agentws.api.connectors`; :mod:`agentws.api.openapi` adds them to the
document.
"""

from __future__ import annotations

from typing import Any

from agentws.domain.models import ConnectorKind, DocumentPolicy

from .openapi_operations import PAGING, operation, path_params, upstream_operation
from .openapi_schemas import ref

__all__ = ["CHANGE_PATHS", "CHANGE_SCHEMAS"]

_TIME = {"type": "string", "format": "date-time"}
_STR_OR_NULL = {"type": ["string", "null"]}
_NAMES = {"type": "array", "items": {"type": "string"}}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


_PROBE = {
    "transport": {"type": "string", "description": "remote MCP: streamable_http or sse"},
    "server": _object({"name": {"type": "string"}, "version": {"type": "string"}}),
    "protocol_version": {"type": "string"},
    "tools": {"type": "integer", "description": "how many tools it lists"},
    "announces_changes": {
        "type": "boolean",
        "description": "whether it announces changes of its tool list",
    },
}

CHANGE_SCHEMAS: dict[str, Any] = {
    "NameChange": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {
                "type": "string",
                "description": "the new display name (the slug, in URLs, stays)",
            }
        },
    },
    "PolicyChange": {
        "type": "object",
        "required": ["policy"],
        "properties": {
            "policy": {
                "type": "string",
                "enum": [p.value for p in DocumentPolicy],
                "description": "spine: always in the agent's context; on_demand: read when "
                "needed; never: kept but never shown to the agent or MCP clients",
            }
        },
    },
    "ConnectorChange": {
        "type": "object",
        "minProperties": 1,
        "properties": {
            "active": {
                "type": "boolean",
                "description": "false: no group lists its tools and no link connects to it; "
                "its settings, secret, tools and attachments are kept",
            },
            "relay_requests": {
                "type": "boolean",
                "description": "false: the remote's requests to a caller during a call "
                "(elicitation, sampling, roots) are refused; true: they are passed on, "
                "marked as the connector's (remote MCP connectors only)",
            },
        },
    },
    "Group": _object(
        {
            "id": {"type": "string"},
            "workspace": {"type": "string"},
            "slug": {"type": "string"},
            "name": {"type": "string"},
            "url": {"type": "string", "description": "its MCP endpoint"},
            "created_at": _TIME,
        }
    ),
    "Connector": _object(
        {
            "id": {"type": "string"},
            "workspace": {"type": "string"},
            "name": {"type": "string"},
            "kind": {"type": "string", "enum": [k.value for k in ConnectorKind]},
            "url": {
                **_STR_OR_NULL,
                "description": "its upstream (an incoming webhook's origin only)",
            },
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "the headers it sends that are not secret",
            },
            "secret": {
                **_STR_OR_NULL,
                "description": "where its secret goes (a header's name, or url); never the "
                "secret; null: it has none",
            },
            "active": {"type": "boolean"},
            "relay_requests": {
                "type": "boolean",
                "description": "whether its remote's requests during a call reach the caller",
            },
            "created_at": _TIME,
        }
    ),
    "ConnectorCheck": _object(
        {
            "ok": {"type": "boolean", "const": True},
            "workspace": {"type": "string"},
            "connector": {"type": "string"},
            "kind": {"type": "string", "enum": [k.value for k in ConnectorKind]},
            "url": _STR_OR_NULL,
            "detail": {"type": "string", "description": "what the connection proved"},
            "elapsed_ms": {"type": "integer"},
            **_PROBE,
        },
        required=["ok", "workspace", "connector", "kind", "url", "detail", "elapsed_ms"],
    ),
    "ToolRefresh": _object(
        {
            "workspace": {"type": "string"},
            "connector": {"type": "string"},
            "added": _NAMES,
            "changed": {
                **_NAMES,
                "description": "tools whose definition changed: they lost their labels (write)",
            },
            "removed": _NAMES,
            "unchanged": {"type": "integer"},
            "left_out": {
                **_NAMES,
                "description": "why each tool left out of listings is (a name another tool has)",
            },
        }
    ),
    "ConnectorPage": _object(
        {
            "items": {"type": "array", "items": ref("Connector")},
            "next_cursor": _STR_OR_NULL,
        }
    ),
}

_WS = path_params("workspace")
_CONNECTOR = path_params("workspace", "connector")

CHANGE_PATHS: dict[str, Any] = {
    "/workspaces/{workspace}": {
        "patch": operation(
            "Rename a workspace (its slug, in every endpoint URL, stays)",
            "Workspace",
            params=_WS,
            body="NameChange",
            operation_id="renameWorkspace",
        )
    },
    "/workspaces/{workspace}/groups/{group}": {
        "patch": operation(
            "Rename a group (its slug, in its endpoint URL, stays)",
            "Group",
            params=path_params("workspace", "group"),
            body="NameChange",
            operation_id="renameGroup",
        )
    },
    "/workspaces/{workspace}/libraries/{library}": {
        "patch": operation(
            "Rename a library (its slug, in its documents' URIs, stays)",
            "Library",
            params=path_params("workspace", "library"),
            body="NameChange",
            operation_id="renameLibrary",
        )
    },
    "/workspaces/{workspace}/libraries/{library}/documents/{document}": {
        "patch": operation(
            "Change how a document reaches the agent and MCP clients (its policy)",
            "Document",
            params=path_params("workspace", "library", "document"),
            body="PolicyChange",
            operation_id="setDocumentPolicy",
        )
    },
    "/workspaces/{workspace}/connectors": {
        "get": operation(
            "List a workspace's connectors (never their secrets)",
            "ConnectorPage",
            params=[*_WS, *PAGING],
            operation_id="listConnectors",
        )
    },
    "/workspaces/{workspace}/connectors/{connector}": {
        "get": operation(
            "Show a connector", "Connector", params=_CONNECTOR, operation_id="getConnector"
        ),
        "patch": operation(
            "Offer a connector's tools again (active: true) or stop offering them, keeping "
            "everything else (active: false); pass its remote's requests on to callers "
            "(relay_requests: true) or refuse them (false)",
            "Connector",
            params=_CONNECTOR,
            body="ConnectorChange",
            operation_id="setConnectorActive",
        ),
    },
    "/workspaces/{workspace}/connectors/{connector}/test": {
        "post": upstream_operation(
            "Connect to a connector's upstream once with its credential, changing nothing: a "
            "remote MCP server's handshake and tool list; one authenticated read for GitHub, "
            "Slack, Stripe; a GET of an incoming webhook's URL",
            "ConnectorCheck",
            params=_CONNECTOR,
            operation_id="testConnector",
        )
    },
    "/workspaces/{workspace}/connectors/{connector}/refresh": {
        "post": upstream_operation(
            "Fetch a remote MCP connector's tools into the cache now (audited as "
            "connector.refresh); a tool whose definition changed loses its label",
            "ToolRefresh",
            params=_CONNECTOR,
            operation_id="refreshConnector",
        )
    },
}
