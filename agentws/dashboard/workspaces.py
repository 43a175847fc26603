"""The dashboard's Workspaces page: every workspace, creating one, renaming one.

A workspace's slug is in its groups' MCP endpoint URLs and in the
dashboard's own addresses, so it is chosen once, at creation; renaming
changes the display name (:func:`agentws.registry.rename_workspace`).
"""

from __future__ import annotations

from quart import Response, request, url_for

from agentws import registry
from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.domain.models import Group
from agentws.errors import AgentwsError

from .frame import changed, done, error_text, render_page
from .session import signed_in

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
