"""The dashboard's Permissions page: a group's tools, their labels and permissions."""

from __future__ import annotations

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.domain.models import Capability, Permission
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.tools import admin as tools_admin
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/w/<workspace>/permissions")
@signed_in
async def permissions(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    groups = await registry.list_groups(store, workspace)
    chosen = request.args.get("group") or (groups[0].slug if groups else None)
    rows = await tools_admin.group_tool_list(store, workspace, chosen) if chosen else []
    return await render_page(
        admin,
        "permissions.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        groups=groups,
        chosen=chosen,
        rows=rows,
        capabilities=[c.value for c in Capability],
        permissions=[p.value for p in Permission],
    )


@routes.post("/w/<workspace>/permissions")
@signed_in
async def permission_change(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    form = await request.form
    group = form.get("group") or None
    tool = form.get("tool") or ""
    here = url_for("dashboard.permissions", workspace=workspace, group=group or "")
    store = admin.store
    try:
        if form.get("label") is not None:
            label = form.get("label") or None
            await tools_admin.set_label(
                store, workspace, tool, Capability(label) if label else None, actor=caller.actor
            )
            return done(here, f"{tool} is labeled {label or 'unlabeled (write)'}.")
        permission = form.get("permission") or ""
        scope = group if form.get("scope") == "group" else None
        if permission == "default":
            await tools_admin.clear_permission(
                store, workspace, tool, group_slug=scope, actor=caller.actor
            )
            return done(here, f"{tool} follows its capability's default again.")
        await tools_admin.set_permission(
            store, workspace, tool, Permission(permission), group_slug=scope, actor=caller.actor
        )
    except (AgentwsError, ValueError) as exc:
        return done(here, error_text(exc), error=True)
    where = f"group {scope}" if scope else "workspace"
    return done(here, f"{tool}: {permission} ({where}).")
