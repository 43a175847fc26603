"""ToolCaller: who is calling a tool, as the permission gate and the audit log see them."""

from __future__ import annotations

import attrs

from agentws.domain.models import Capability, Group

__all__ = ["ToolCaller"]


@attrs.frozen
class ToolCaller:
    """A non-system caller of a group's tools.

    MCP callers are never system actors: their scope is their token's, and
    nothing they present can widen it.
    """

    #: How the audit log names them (``mcp:tok_…``).
    actor: str
    group: Group
    #: The highest capability they may use.
    scope: Capability
    token_id: str | None = None
    #: The MCP session the call came in, told of a queued call's outcome.
    session_id: str | None = None

    @classmethod
    def mcp(
        cls, token_id: str, scope: Capability, group: Group, session_id: str | None
    ) -> ToolCaller:
        return cls(
            actor=f"mcp:{token_id}",
            group=group,
            scope=scope,
            token_id=token_id,
            session_id=session_id,
        )
