"""The dashboard's Connect → MCP Endpoints page: each group's URL, how clients connect, tokens.

A group's tokens are of two kinds. Static tokens (``agentws token create``,
the form here) are listed one row each. An OAuth client's consent issues a
new access token at every refresh, all of one family: the page shows each
consent once (:class:`OAuthGrantRow`), the client's name and id, the scope,
when it was given, when it was last used and when its current access token
expires. Revoking that row revokes the family's newest live token, which
revokes the whole consent (refresh tokens too, see
:func:`agentws.workspaces.admin.revoke_token`); revoked consents are not shown.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import attrs
from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.domain.models import Capability, McpToken
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

__all__ = ["Snippet", "routes", "snippets"]

routes = RouteTable[AdminServices]()


@attrs.frozen(kw_only=True)
class OAuthGrantRow:
    """One OAuth consent of a group, as the page lists it (the tokens of one family)."""

    client_name: str
    client_id: str
    scope: Capability
    #: When the administrator consented: the family's first token.
    consented_at: datetime
    last_used_at: datetime | None
    #: When the newest access token stops working (the client refreshes before).
    expires_at: datetime | None
    #: The token the Revoke button names: the newest live one of the family.
    token_id: str


def split_tokens(tokens: list[McpToken]) -> tuple[list[McpToken], list[OAuthGrantRow]]:
    """A group's static tokens, and its OAuth consents that are not revoked (oldest first)."""
    static: list[McpToken] = []
    families: dict[str, list[McpToken]] = {}
    for token in tokens:
        if token.oauth_family_id is None:
            static.append(token)
        else:
            families.setdefault(token.oauth_family_id, []).append(token)
    grants: list[OAuthGrantRow] = []
    for family in families.values():
        family.sort(key=lambda t: t.created_at)
        live = [t for t in family if not t.revoked]
        if not live:
            continue
        newest = family[-1]
        used = [t.last_used_at for t in family if t.last_used_at is not None]
        grants.append(
            OAuthGrantRow(
                client_name=newest.name,
                client_id=newest.oauth_client_id or "",
                scope=newest.scope,
                consented_at=family[0].created_at,
                last_used_at=max(used) if used else None,
                expires_at=newest.expires_at,
                token_id=live[-1].id,
            )
        )
    grants.sort(key=lambda g: g.consented_at)
    return static, grants


@routes.get("/w/<workspace>/endpoints")
@signed_in
async def endpoints(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    base = admin.settings.public_base_url
    groups = []
    for group in await registry.list_groups(store, workspace):
        url = registry.endpoint_url(base, workspace, group.slug)
        tokens, grants = split_tokens(await registry.list_tokens(store, workspace, group.slug))
        found = snippets(url, f"{workspace}-{group.slug}")
        groups.append(
            {"group": group, "url": url, "tokens": tokens, "grants": grants, "snippets": found}
        )
    return await render_page(
        admin,
        "endpoints.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        groups=groups,
        scopes=[c.value for c in Capability],
        issued=None,
    )


@attrs.frozen(kw_only=True)
class Snippet:
    """How one client connects to a group's endpoint: a file's text or a command."""

    #: Short and stable: the page's element ids are made of it.
    key: str
    #: The client, as a copy button names it.
    client: str
    title: str
    text: str


#: What a snippet holds in place of a token it is not given.
_TOKEN_INPUT = "agentws-token"  # noqa: S105 - the name of VS Code's prompt, not a token


def snippets(url: str, name: str, token: str | None = None) -> list[Snippet]:
    """How each client connects (as docs/mcp.md explains them), for the endpoint ``url``.

    Args:
        url: The group's endpoint.
        name: The server's name in the clients' configurations (``acme-ops``).
        token: A token just created, written into each snippet; None: each
            reads it from ``AGENTWS_TOKEN`` (VS Code asks for it once).
    """
    claude_env = {"AGENTWS_TOKEN": token or "agws_…"}
    claude = {
        "mcpServers": {
            name: {
                "command": "npx",
                "args": [
                    "-y",
                    "mcp-remote",
                    url,
                    "--header",
                    "Authorization: Bearer ${AGENTWS_TOKEN}",
                ],
                "env": claude_env,
            }
        }
    }
    bearer = f"Bearer {token}" if token else "Bearer ${env:AGENTWS_TOKEN}"
    cursor = {"mcpServers": {name: {"url": url, "headers": {"Authorization": bearer}}}}
    vscode_server: dict[str, Any] = {"type": "http", "url": url}
    vscode: dict[str, Any] = {"servers": {name: vscode_server}}
    if token:
        vscode_server["headers"] = {"Authorization": f"Bearer {token}"}
    else:
        vscode_server["headers"] = {"Authorization": f"Bearer ${{input:{_TOKEN_INPUT}}}"}
        vscode["inputs"] = [
            {
                "type": "promptString",
                "id": _TOKEN_INPUT,
                "description": f"agentws token for {name}",
                "password": True,
            }
        ]
    header = f"Authorization: Bearer {token}" if token else "Authorization: Bearer $AGENTWS_TOKEN"
    inspector = (
        "npx @modelcontextprotocol/inspector --transport http \\\n"
        f'  --server-url "{url}" --header "{header}"'
    )
    return [
        Snippet(
            key="claude",
            client="Claude Desktop",
            title="Claude Desktop (claude_desktop_config.json, through mcp-remote)",
            text=json.dumps(claude, indent=2, ensure_ascii=False),
        ),
        Snippet(
            key="cursor",
            client="Cursor",
            title="Cursor (.cursor/mcp.json)",
            text=json.dumps(cursor, indent=2),
        ),
        Snippet(
            key="vscode",
            client="VS Code",
            title="VS Code (.vscode/mcp.json)",
            text=json.dumps(vscode, indent=2),
        ),
        Snippet(key="inspector", client="MCP Inspector", title="MCP Inspector", text=inspector),
    ]


@routes.post("/w/<workspace>/endpoints/<group>/tokens")
@signed_in
async def token_create(
    admin: AdminServices, caller: Caller, workspace: str, group: str
) -> Response:
    form = await request.form
    here = url_for("dashboard.endpoints", workspace=workspace)
    try:
        issued = await registry.create_token(
            admin.store,
            workspace,
            group,
            name=form.get("name") or "",
            scope=Capability(form.get("scope") or "write"),
            actor=caller.actor,
        )
    except (AgentwsError, ValueError) as exc:
        return done(here, error_text(exc), error=True)
    url = registry.endpoint_url(admin.settings.public_base_url, workspace, group)
    return await render_page(
        admin,
        "token_created.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        token=issued.token,
        secret=issued.secret,
        group=group,
        url=url,
        snippets=snippets(url, f"{workspace}-{group}", issued.secret),
    )


@routes.post("/w/<workspace>/endpoints/<group>/tokens/<token>/revoke")
@signed_in
async def token_revoke(
    admin: AdminServices, caller: Caller, workspace: str, group: str, token: str
) -> Response:
    here = url_for("dashboard.endpoints", workspace=workspace)
    try:
        revoked = await registry.revoke_token(
            admin.store, workspace, group, token, actor=caller.actor
        )
    except AgentwsError as exc:
        return done(here, exc.message, error=True)
    if revoked.oauth_family_id is not None:
        return done(
            here,
            f"Revoked the OAuth access of {revoked.name!r}: its sessions are closing now; "
            "it must ask for consent again.",
        )
    return done(here, f"Revoked token {revoked.name!r}: its sessions are closing now.")
