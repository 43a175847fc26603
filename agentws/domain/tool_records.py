"""Connectors, their tools and what callers may do with them: capabilities and permissions.

A connector is a third-party tool server (remote MCP or a native integration)
in a workspace; its tools are cached as last fetched. A tool's capability
(read, write, destructive) gives its default permission until an admin sets
one (:class:`ToolPermission`).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, get_args

import attrs

from agentws.domain.record_fields import id_field, identifier_validator, now_field

__all__ = [
    "LINK_PROTOCOLS",
    "CachedTool",
    "Capability",
    "Connector",
    "ConnectorKind",
    "GroupConnector",
    "LinkProtocol",
    "Permission",
    "ToolPermission",
    "default_permission",
]


class Capability(StrEnum):
    """What a tool can do to the world, in rising order of risk."""

    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"

    @property
    def rank(self) -> int:
        return _CAPABILITY_RANK[self]

    def within(self, scope: Capability) -> bool:
        """Whether a caller whose scope is ``scope`` may use a tool of this capability."""
        return self.rank <= scope.rank


_CAPABILITY_RANK = {Capability.READ: 0, Capability.WRITE: 1, Capability.DESTRUCTIVE: 2}


class Permission(StrEnum):
    """What happens when a non-system caller calls a tool."""

    ALLOW = "allow"
    REQUIRES_APPROVAL = "requires_approval"
    REQUIRES_CONFIRMATION = "requires_confirmation"
    DENY = "deny"


def default_permission(capability: Capability) -> Permission:
    """The permission a tool gets from its capability until an admin says otherwise."""
    return {
        Capability.READ: Permission.ALLOW,
        Capability.WRITE: Permission.REQUIRES_APPROVAL,
        Capability.DESTRUCTIVE: Permission.REQUIRES_CONFIRMATION,
    }[capability]


class ConnectorKind(StrEnum):
    REMOTE_MCP = "remote_mcp"
    GITHUB = "github"
    SLACK = "slack"
    STRIPE = "stripe"
    #: A chat's incoming-webhook URL (Slack, Mattermost, Discord): a channel, no tools.
    INCOMING_WEBHOOK = "incoming_webhook"


#: What a remote MCP connector's link may speak: ``auto`` (a handshake
#: revision when the remote speaks one, since only those let it ask its caller
#: mid-call; else 2026-07-28), or one revision pinned by an admin.
LinkProtocol = Literal["auto", "2026-07-28", "2025-11-25"]
LINK_PROTOCOLS: tuple[str, ...] = get_args(LinkProtocol)


@attrs.frozen(kw_only=True)
class Connector:
    """A connected third-party tool (remote MCP server or native integration)."""

    id: str = id_field("con")
    workspace_id: str
    name: str = attrs.field(validator=identifier_validator)
    kind: ConnectorKind
    url: str | None = None
    #: Non-secret headers; secrets live encrypted in ``secret``.
    headers: dict[str, str] = attrs.field(factory=dict)
    secret: bytes | None = attrs.field(default=None, repr=False)
    active: bool = True
    #: Whether the remote's requests during a call (elicitation, sampling,
    #: roots) are passed on to the caller; off: refused, saying an admin said so.
    relay_requests: bool = True
    #: The MCP revision a remote MCP connector's link speaks (:data:`LINK_PROTOCOLS`).
    protocol: str = "auto"
    #: How a remote MCP connector proves who it is upstream: ``static`` (the
    #: secret as a header), ``oauth`` or ``client_credentials``
    #: (:mod:`agentws.connectors.upstream_auth`), and that mode's settings
    #: (none secret: a client secret or key is ``secret``).
    auth: str = "static"
    auth_settings: dict[str, Any] = attrs.field(factory=dict)
    created_at: datetime = now_field()
    updated_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class GroupConnector:
    id: str = id_field("gcn")
    group_id: str
    connector_id: str
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class CachedTool:
    """One tool of a connector as last fetched: the source of ``tools/list``."""

    id: str = id_field("tool")
    connector_id: str
    #: The connector's own name for it (``<action>``); exposed as ``<connector>_<action>``.
    name: str
    description: str = ""
    input_schema: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    #: The remote's annotations, kept as a suggestion only.
    annotations: dict[str, Any] = attrs.field(factory=dict)
    #: SHA-256 of name, description and schema: a change resets admin labels.
    definition_hash: str
    #: Set by an admin (or fixed for native actions); None means unlabeled.
    label: Capability | None = None
    suggested_label: Capability | None = None
    fetched_at: datetime = now_field()
    #: Why it is not listed: its name is another tool's in one of its groups
    #: (:mod:`agentws.connectors.names`); None: listed.
    left_out: str | None = None
    #: The remote's whole definition as it listed it (``title``, ``outputSchema``,
    #: ``icons``, ``_meta``...), passed on to callers; empty for native actions.
    remote_definition: dict[str, Any] = attrs.field(factory=dict)

    @property
    def capability(self) -> Capability:
        """Unlabeled tools are ``write``, whatever the remote suggests."""
        return self.label or Capability.WRITE


@attrs.frozen(kw_only=True)
class ToolPermission:
    """An admin's permission for one tool: for a group, or (no group) for the whole workspace."""

    id: str = id_field("tpm")
    workspace_id: str
    #: None: every group of the workspace that has no permission of its own for the tool.
    group_id: str | None = None
    #: The tool's name as callers see it (``<connector>_<action>`` or a built-in).
    tool_name: str
    permission: Permission
    #: The tool's definition when the admin decided; a looser permission
    #: stops applying when the definition changes.
    definition_hash: str
    set_by: str
    created_at: datetime = now_field()
    updated_at: datetime = now_field()
