"""ToolCaller: who is calling a tool, as the permission gate and the audit log see them."""

from __future__ import annotations

from collections.abc import Mapping

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
    #: The webhook event whose run calls: its channel hears a queued call's outcome.
    event_id: str | None = None
    #: The OAuth client whose access token calls (its client id), named in the audit log.
    oauth_client: str | None = None
    #: Write tools an admin pre-authorized at configuration time (a webhook's
    #: ``--allow-tool``): name → the definition hash authorized. Never set for MCP.
    preauthorized: Mapping[str, str] = attrs.field(factory=dict, hash=False)

    def preauthorizes(self, name: str, definition_hash: str) -> bool:
        """Whether an admin pre-authorized this tool, in this very definition."""
        return bool(definition_hash) and self.preauthorized.get(name) == definition_hash

    @classmethod
    def mcp(
        cls,
        token_id: str,
        scope: Capability,
        group: Group,
        session_id: str | None,
        oauth_client: str | None = None,
    ) -> ToolCaller:
        return cls(
            actor=f"mcp:{token_id}",
            group=group,
            scope=scope,
            token_id=token_id,
            session_id=session_id,
            oauth_client=oauth_client,
        )
