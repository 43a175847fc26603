"""The dashboard's Workspaces page: every workspace, creating one, renaming one.

A workspace's slug is in its groups' MCP endpoint URLs and in the
dashboard's own addresses, so it is chosen once, at creation; renaming
changes the display name (:func:`agentws.workspaces.admin.rename_workspace`).
"""

from __future__ import annotations

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.domain.models import Group
from agentws.doors.dashboard.frame import changed, done, error_text, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/workspaces")
@signed_in
async def workspaces(admin: AdminServices, caller: Caller) -> Response:
    rows = []
    for workspace in await registry.list_workspaces(admin.store):
        groups = await admin.store.count(Group, workspace_id=workspace.id)
        rows.append({"workspace": workspace, "groups": groups})
    return await render_page(admin, "workspaces.html", caller, workspace=None, rows=rows)


@routes.post("/workspaces")
@signed_in
async def workspace_create(admin: AdminServices, caller: Caller) -> Response:
    form = await request.form
    here = url_for("dashboard.workspaces")
    try:
        created = await registry.create_workspace(
            admin.store,
            (form.get("slug") or "").strip(),
            name=(form.get("name") or "").strip() or None,
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return done(here, error_text(exc), error=True)
    return done(
        url_for("dashboard.groups", workspace=created.slug),
        f"Created workspace {created.slug!r}: add a group for its first MCP endpoint.",
    )


@routes.post("/workspaces/<workspace>/rename")
@signed_in
async def workspace_rename(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    name = (await request.form).get("name") or ""
    return await changed(
        url_for("dashboard.workspaces"),
        registry.rename_workspace(admin.store, workspace, name=name, actor=caller.actor),
        lambda renamed: f"Workspace {renamed.slug!r} is now called {renamed.name!r}.",
    )
