"""The admin API's access to tools: MCP tokens, OAuth clients, tool labels and permissions."""

from __future__ import annotations

from agentws.admins.access import AdminServices, Caller
from agentws.doors.api.calls import Answer, Endpoints, page_of, read_body
from agentws.doors.api.shapes.bodies import LabelChange, NewOAuthClient, NewToken, PermissionChange
from agentws.doors.views import oauth_client_json, token_json, tool_json
from agentws.oauth import operator_clients
from agentws.tools import admin as tools_admin
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = Endpoints()


# --- MCP tokens -----------------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/groups/<group>/tokens")
async def list_tokens(admin: AdminServices, caller: Caller, workspace: str, group: str) -> Answer:
    tokens = await registry.list_tokens(admin.store, workspace, group)
    return page_of([token_json(t, workspace, group) for t in tokens])


@routes.post("/workspaces/<workspace>/groups/<group>/tokens")
async def create_token(admin: AdminServices, caller: Caller, workspace: str, group: str) -> Answer:
    new = await read_body(NewToken)
    issued = await registry.create_token(
        admin.store,
        workspace,
        group,
        name=new.name,
        scope=new.scope,
        actor=caller.actor,
    )
    return {**token_json(issued.token, workspace, group), "token": issued.secret}, 201


@routes.delete("/workspaces/<workspace>/groups/<group>/tokens/<token>")
async def revoke_token(
    admin: AdminServices, caller: Caller, workspace: str, group: str, token: str
) -> Answer:
    revoked = await registry.revoke_token(admin.store, workspace, group, token, actor=caller.actor)
    return token_json(revoked, workspace, group)


# --- OAuth clients ---------------------------------------------------------------------------


@routes.get("/oauth/clients")
async def list_oauth_clients(admin: AdminServices, caller: Caller) -> Answer:
    return page_of([oauth_client_json(c) for c in await operator_clients.list_clients(admin.store)])


@routes.post("/oauth/clients")
async def add_oauth_client(admin: AdminServices, caller: Caller) -> Answer:
    new = await read_body(NewOAuthClient)
    registered = await operator_clients.register_client(
        admin.store,
        admin.keys.optional(),
        name=new.name,
        redirect_uris=new.redirect_uris,
        confidential=new.confidential,
        actor=caller.actor,
    )
    answer = oauth_client_json(registered.client)
    answer["client_secret"] = registered.secret
    return answer, 201


@routes.delete("/oauth/clients/<client>")
async def remove_oauth_client(admin: AdminServices, caller: Caller, client: str) -> Answer:
    removed = await operator_clients.remove_client(admin.store, client, actor=caller.actor)
    return oauth_client_json(removed)


# --- tools and permissions ------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/groups/<group>/tools")
async def list_tools(admin: AdminServices, caller: Caller, workspace: str, group: str) -> Answer:
    rows = await tools_admin.group_tool_list(admin.store, workspace, group)
    return page_of([tool_json(row) for row in rows])


@routes.put("/workspaces/<workspace>/tools/<tool>/label")
async def label_tool(admin: AdminServices, caller: Caller, workspace: str, tool: str) -> Answer:
    capability = (await read_body(LabelChange)).label
    _, cached = await tools_admin.set_label(
        admin.store, workspace, tool, capability, actor=caller.actor
    )
    return {"name": tool, "label": cached.label.value if cached.label else None}


@routes.put("/workspaces/<workspace>/tools/<tool>/permission")
async def set_tool_permission(
    admin: AdminServices, caller: Caller, workspace: str, tool: str
) -> Answer:
    change = await read_body(PermissionChange)
    group, permission = change.group, change.permission
    store = admin.store
    if permission is None:
        await tools_admin.clear_permission(
            store, workspace, tool, group_slug=group, actor=caller.actor
        )
    else:
        await tools_admin.set_permission(
            store,
            workspace,
            tool,
            permission,
            group_slug=group,
            actor=caller.actor,
        )
    return {"name": tool, "group": group, "permission": permission.value if permission else None}
