"""The dashboard's Groups page: a workspace's groups, their endpoints, libraries and connectors.

Each group is one MCP endpoint; here an admin creates and renames groups
(routes declared by :mod:`agentws.doors.dashboard.named_items`) and attaches
libraries and connectors to them, through the functions the
CLI calls (:mod:`agentws.workspaces.admin`, :mod:`agentws.libraries`,
:mod:`agentws.connectors.admin`). A group's slug is in its endpoint URL,
which its clients keep, so renaming changes its display name only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from quart import Response, request

from agentws import libraries
from agentws.admins.access import AdminServices, Caller
from agentws.connectors import admin as connectors
from agentws.domain.models import ConnectorKind, GroupConnector
from agentws.doors.dashboard.frame import changed, find_workspace, render_page
from agentws.doors.dashboard.named_items import ItemPage, declare_create_and_rename
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

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


_PAGE = ItemPage("group", "groups", "groups")
_here = _PAGE.here
declare_create_and_rename(
    routes,
    _PAGE,
    registry.create_group,
    registry.rename_group,
    "attach libraries and connectors, then create a token on the MCP Endpoints page.",
)


# attach(store, workspace, group, name, *, actor) and its detach.
_Change = Callable[..., Awaitable[object]]


def _attachments(
    kind: str, plural: str, key: str, offered: str, attach: _Change, detach: _Change
) -> None:
    """Declare ``group_<kind>_attach`` and ``group_<kind>_detach``: a library or connector.

    The attach form names it in its ``<kind>`` field; the detach path in ``<key>``.
    """

    async def attach_one(
        admin: AdminServices, caller: Caller, workspace: str, group: str
    ) -> Response:
        name = (await request.form).get(kind) or ""
        return await changed(
            _here(workspace, group),
            attach(admin.store, workspace, group, name, actor=caller.actor),
            lambda _: f"Attached {kind} {name!r} to {group!r}: {offered}.",
        )

    async def detach_one(
        admin: AdminServices, caller: Caller, /, workspace: str, group: str, **path: str
    ) -> Response:
        name = path[key]
        return await changed(
            _here(workspace, group),
            detach(admin.store, workspace, group, name, actor=caller.actor),
            lambda _: f"Detached {kind} {name!r} from {group!r}.",
        )

    rule = f"/w/<workspace>/groups/<group>/{plural}"
    routes.post(rule, endpoint=f"group_{kind}_attach")(signed_in(attach_one))
    routes.post(f"{rule}/<{key}>/detach", endpoint=f"group_{kind}_detach")(signed_in(detach_one))


_attachments(
    "library",
    "libraries",
    "library",
    "its documents and skills are offered there",
    libraries.attach_library,
    libraries.detach_library,
)
_attachments(
    "connector",
    "connectors",
    "name",
    "its tools are offered there",
    connectors.attach_connector,
    connectors.detach_connector,
)
