"""Step-up for OAuth clients: a call beyond the token's scope is an HTTP 403 with a challenge.

A static token's scope is what an administrator typed; a call beyond it is
refused as a tool error, as always. An OAuth client can do better: told
``403`` with ``WWW-Authenticate: Bearer error="insufficient_scope",
scope="…"`` (RFC 6750 §3.1, the MCP authorization specification's scope
challenge), it asks for consent again with the scope the tool needs. So a
``tools/call`` of a tool whose capability the OAuth token's scope does not
cover is answered so, before it reaches the session; the administrator
still decides what the new consent grants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agentws.doors.mcp.sessions.auth import Caller
from agentws.doors.mcp.transports.door_requests import DoorRequest
from agentws.http.asgi import HttpRefusal, base_url_of
from agentws.oauth.resources import resource_metadata_url
from agentws.oauth.settings import scopes_up_to
from agentws.settings.config import Settings
from agentws.tools.catalog import Catalog

__all__ = ["ScopeChallenge", "check_scope"]


@attrs.frozen
class ScopeChallenge:
    """Finds the OAuth calls beyond their token's scope, for the MCP door."""

    catalog: Catalog
    settings: Settings

    async def refusal(
        self, caller: Caller, scope: dict[str, Any], method: object, params: object
    ) -> HttpRefusal | None:
        """The 403 for this request, or None (not OAuth, not a call, or within scope)."""
        token = caller.token
        if token.oauth_client_id is None or method != "tools/call":
            return None
        name = params.get("name") if isinstance(params, Mapping) else None
        if not isinstance(name, str):
            return None
        tool = await self.catalog.tool(caller.group, name)
        if tool is None or tool.capability.within(token.scope):
            return None
        needed = " ".join(scopes_up_to(tool.capability))
        metadata = resource_metadata_url(
            base_url_of(self.settings, scope), caller.workspace.slug, caller.group.slug
        )
        message = (
            f"{name} is a {tool.capability.value} tool and this token's scope is "
            f"{token.scope.value}: ask for consent again with scope {needed!r}"
        )
        challenge = (
            f'Bearer realm="agentws", error="insufficient_scope", scope="{needed}", '
            f'resource_metadata="{metadata}", error_description="{message}"'
        )
        return HttpRefusal(403, "insufficient_scope", message, [("WWW-Authenticate", challenge)])


async def check_scope(
    scopes: ScopeChallenge | None, request: DoorRequest, document: Callable[[], Any]
) -> None:
    """Raise the 403 for an OAuth call beyond scope; ``document()`` is the request's JSON.

    It is made only for an OAuth caller, so other requests are not parsed twice.
    """
    caller = request.caller
    if scopes is None or caller is None or caller.token.oauth_client_id is None:
        return
    try:
        found = document()
    except ValueError:
        return  # not JSON: the handler answers that
    if isinstance(found, dict):
        refusal = await scopes.refusal(
            caller, request.scope, found.get("method"), found.get("params")
        )
        if refusal is not None:
            raise refusal
