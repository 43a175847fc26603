"""The dashboard's Connect → MCP Endpoints page: each group's URL, how clients connect, tokens."""

from __future__ import annotations

import json

from quart import Response, request, url_for

from agentws import registry
from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.domain.models import Capability
from agentws.errors import AgentwsError

from .frame import done, error_text, find_workspace, render_page
from .session import signed_in

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/w/<workspace>/endpoints")
@signed_in
async def endpoints(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    base = admin.settings.public_base_url
    groups = []
    for group in await registry.list_groups(store, workspace):
        url = registry.endpoint_url(base, workspace, group.slug)
        tokens = await registry.list_tokens(store, workspace, group.slug)
        snippets = _snippets(url, f"{workspace}-{group.slug}")
        groups.append({"group": group, "url": url, "tokens": tokens, "snippets": snippets})
    return await render_page(
        admin,
        "endpoints.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        groups=groups,
        scopes=[c.value for c in Capability],
        issued=None,
    )


def _snippets(url: str, name: str) -> dict[str, str]:
    """How each client connects (as docs/mcp.md explains them), the token left out."""
    bearer = "Authorization: Bearer ${AGENTWS_TOKEN}"
    claude = {
        "mcpServers": {
            name: {
                "command": "npx",
                "args": ["-y", "mcp-remote", url, "--header", bearer],
                "env": {"AGENTWS_TOKEN": "agws_…"},
            }
        }
    }
    cursor_headers = {"Authorization": "Bearer ${env:AGENTWS_TOKEN}"}
    cursor = {"mcpServers": {name: {"url": url, "headers": cursor_headers}}}
    inspector = (
        "npx @modelcontextprotocol/inspector --transport http \\\n"
        f'  --server-url "{url}" --header "Authorization: Bearer $AGENTWS_TOKEN"'
    )
    return {
        "Claude Desktop (claude_desktop_config.json, through mcp-remote)": json.dumps(
            claude, indent=2
        ),
        "Cursor (.cursor/mcp.json)": json.dumps(cursor, indent=2),
        "MCP Inspector": inspector,
    }


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
    return await render_page(
        admin,
        "token_created.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        token=issued.token,
        secret=issued.secret,
        group=group,
        url=registry.endpoint_url(admin.settings.public_base_url, workspace, group),
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
    return done(here, f"Revoked token {revoked.name!r}: its sessions are closing now.")
