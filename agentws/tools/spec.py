"""ToolSpec: a tool as offered to MCP callers and the agent."""

from __future__ import annotations

from typing import Any

import attrs

from agentws.domain.models import Capability

__all__ = ["ToolSpec"]


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

    @property
    def tagged_description(self) -> str:
        return f"[capability: {self.capability.value}] {self.description}".rstrip()

    @property
    def annotations(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": self.capability is Capability.READ,
            "destructiveHint": self.capability is Capability.DESTRUCTIVE,
            "idempotentHint": self.capability is Capability.READ,
            "openWorldHint": self.source != "builtin",
        }
