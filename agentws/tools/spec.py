"""ToolSpec: a tool as offered to MCP callers and the agent, with its permission.

A remote MCP connector's tool also carries what its remote listed beyond
name, description and schema (``outputSchema``, icons, ``_meta``, its
annotations), so that callers see the tool as the remote defined it, with
the hints agentws's capability label decides put over the remote's.
"""

from __future__ import annotations

from typing import Any

import attrs

from agentws.domain.models import Capability, ConnectorKind, Permission, default_permission
from agentws.domain.permissions import Decision, decide

__all__ = ["ToolSpec"]


def _default(spec: ToolSpec) -> Permission:
    return default_permission(spec.capability)


@attrs.frozen
class ToolSpec:
    """A tool as offered to callers."""

    name: str
    description: str
    input_schema: dict[str, Any]
    capability: Capability
    title: str | None = None
    #: ``builtin`` or the connector's name.
    source: str = "builtin"
    #: For connector tools: the connector's id and the tool's name at the connector.
    connector_id: str | None = None
    remote_name: str | None = None
    #: For connector tools: the connector's kind (native actions check their path arguments).
    connector_kind: ConnectorKind | None = None
    #: What non-system callers get (the capability's default unless an admin set one).
    permission: Permission = attrs.field(default=attrs.Factory(_default, takes_self=True))
    #: ``default``, ``group`` or ``workspace``.
    permission_source: str = "default"
    #: The tool's definition, which permissions are bound to (``builtin:<name>`` for built-ins).
    definition_hash: str = ""
    #: Why an admin's permission does not apply any more, if it does not.
    permission_note: str | None = None
    #: For remote MCP tools: the remote's ``outputSchema``, ``icons`` and ``_meta``, if any.
    output_schema: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    #: For remote MCP tools: the remote's annotations (the label decides some of them).
    remote_annotations: dict[str, Any] = attrs.field(factory=dict)

    @property
    def tagged_description(self) -> str:
        return f"[capability: {self.capability.value}] {self.description}".rstrip()

    @property
    def asks_confirmation(self) -> bool:
        """Whether a caller allowed to use it must confirm each call."""
        return decide(self.capability, self.permission, Capability.DESTRUCTIVE) is Decision.CONFIRM

    @property
    def runs_directly(self) -> bool:
        """Whether a caller allowed to use it gets the tool's own result (not queued, not asked)."""
        return decide(self.capability, self.permission, Capability.DESTRUCTIVE) is Decision.RUN

    @property
    def annotations(self) -> dict[str, Any]:
        """The MCP annotations: the remote's, with the hints the capability decides put over."""
        return {
            "idempotentHint": self.capability is Capability.READ,
            "openWorldHint": self.source != "builtin",
            **self.remote_annotations,
            "title": self.title or self.remote_annotations.get("title"),
            "readOnlyHint": self.capability is Capability.READ,
            "destructiveHint": self.capability is Capability.DESTRUCTIVE,
        }
