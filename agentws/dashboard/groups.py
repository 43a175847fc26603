"""The dashboard's Groups page: a workspace's groups, their endpoints, libraries and connectors.

Each group is one MCP endpoint; here an admin creates and renames groups
and attaches libraries and connectors to them, through the functions the
CLI calls (:mod:`agentws.registry`, :mod:`agentws.libraries`,
:mod:`agentws.connectors.registry`). A group's slug is in its endpoint URL,
which its clients keep, so renaming changes its display name only.
"""

from __future__ import annotations

from quart import Response, request, url_for

from agentws import libraries, registry
from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.connectors import registry as connectors
from agentws.domain.models import ConnectorKind, GroupConnector
from agentws.errors import AgentwsError

from .frame import changed, done, error_text, find_workspace, render_page
from .session import signed_in

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/w/<workspace>/groups")
@signed_in
async def groups(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    ws = await find_workspace(admin, workspace)
    every_library = await libraries.list_libraries(store, workspace)
    # An incoming webhook is a channel, with no tools to attach.
    every_connector = [
        c
        for c in await connectors.list_connectors(store, workspace)
        if c.kind is not ConnectorKind.INCOMING_WEBHOOK
    ]
    rows = []
    for group in await registry.list_groups(store, workspace):
        attached = await store.group_libraries(group.id)
        linked = {
            link.connector_id for link in await store.select(GroupConnector, group_id=group.id)
        }
        rows.append(
            {
                "group": group,
                "url": registry.endpoint_url(admin.settings.public_base_url, workspace, group.slug),
                "libraries": attached,
                "other_libraries": [
                    x for x in every_library if x.id not in {a.id for a in attached}
                ],
                "connectors": [c for c in every_connector if c.id in linked],
                "other_connectors": [c for c in every_connector if c.id not in linked],
            }
        )
    return await render_page(admin, "groups.html", caller, workspace=ws, rows=rows)


def _here(workspace: str, group: str | None = None) -> str:
    page = url_for("dashboard.groups", workspace=workspace)
    return f"{page}#group-{group}" if group else page


@routes.post("/w/<workspace>/groups")
@signed_in
async def group_create(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    form = await request.form
    try:
        group = await registry.create_group(
            admin.store,
            workspace,
            (form.get("slug") or "").strip(),
            name=(form.get("name") or "").strip() or None,
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return done(_here(workspace), error_text(exc), error=True)
    return done(
        _here(workspace, group.slug),
        f"Created group {group.slug!r}: attach libraries and connectors, then create a token "
        "on the MCP Endpoints page.",
    )


@routes.post("/w/<workspace>/groups/<group>/rename")
@signed_in
async def group_rename(
    admin: AdminServices, caller: Caller, workspace: str, group: str
) -> Response:
    name = (await request.form).get("name") or ""
    return await changed(
        _here(workspace, group),
        registry.rename_group(admin.store, workspace, group, name=name, actor=caller.actor),
        lambda renamed: f"Group {group!r} is now called {renamed.name!r}.",
    )


@routes.post("/w/<workspace>/groups/<group>/libraries")
@signed_in
async def group_library_attach(
    admin: AdminServices, caller: Caller, workspace: str, group: str
) -> Response:
    library = (await request.form).get("library") or ""
    return await changed(
        _here(workspace, group),
        libraries.attach_library(admin.store, workspace, group, library, actor=caller.actor),
        lambda _: (
            f"Attached library {library!r} to {group!r}: "
            "its documents and skills are offered there."
        ),
    )


@routes.post("/w/<workspace>/groups/<group>/libraries/<library>/detach")
@signed_in
async def group_library_detach(
    admin: AdminServices, caller: Caller, workspace: str, group: str, library: str
) -> Response:
    return await changed(
        _here(workspace, group),
        libraries.detach_library(admin.store, workspace, group, library, actor=caller.actor),
        lambda _: f"Detached library {library!r} from {group!r}.",
    )


@routes.post("/w/<workspace>/groups/<group>/connectors")
@signed_in
async def group_connector_attach(
    admin: AdminServices, caller: Caller, workspace: str, group: str
) -> Response:
    name = (await request.form).get("connector") or ""
    return await changed(
        _here(workspace, group),
        connectors.attach_connector(admin.store, workspace, group, name, actor=caller.actor),
        lambda _: f"Attached connector {name!r} to {group!r}: its tools are offered there.",
    )


@routes.post("/w/<workspace>/groups/<group>/connectors/<name>/detach")
@signed_in
async def group_connector_detach(
    admin: AdminServices, caller: Caller, workspace: str, group: str, name: str
) -> Response:
    return await changed(
        _here(workspace, group),
        connectors.detach_connector(admin.store, workspace, group, name, actor=caller.actor),
        lambda _: f"Detached connector {name!r} from {group!r}.",
    )
