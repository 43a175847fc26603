"""The admin API's connectors: list and show them, turn them on and off, test and refresh them.

``PATCH .../connectors/<connector>`` with ``{"active": false}`` stops offering a
connector's tools and keeps the rest (``connector.deactivate``);
``{"active": true}`` offers them again. ``{"relay_requests": false}`` refuses
the remote's requests to callers during a call (elicitation, sampling, roots;
``connector.relay_off``), ``true`` passes them on again, marked as the
connector's. ``POST .../test`` connects once and
changes nothing; ``POST .../refresh`` fetches a remote MCP server's tools
into the cache, audited as ``connector.refresh``. Both are
:mod:`agentws.checks.connectors`, as ``agentws connector test|refresh`` and
the dashboard make them; an upstream that is down, refuses the credential or
is too slow answers 502. No answer holds a connector's secret.
"""

from __future__ import annotations

from quart import request

from agentws.admins.access import AdminServices, Caller
from agentws.checks.connectors import check_connector_now, refresh_connector
from agentws.connectors.admin import (
    find_connector,
    list_connectors,
    set_connector_active,
    set_connector_protocol,
    set_connector_relay,
)
from agentws.connectors.authorize import disconnect_connector
from agentws.core.errors import UpstreamError, ValidationError
from agentws.domain.models import ConnectorGrant
from agentws.doors.api.calls import Answer, Endpoints, page_of, read_body
from agentws.doors.api.shapes.bodies import ConnectorChange
from agentws.doors.views import (
    connector_check_json,
    connector_json,
    grant_json,
    sync_report_json,
)

__all__ = ["routes"]

routes = Endpoints()


@routes.get("/workspaces/<workspace>/connectors")
async def list_workspace_connectors(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    connectors = await list_connectors(admin.store, workspace)
    return page_of([connector_json(c, workspace) for c in connectors])


@routes.get("/workspaces/<workspace>/connectors/<connector>")
async def show_connector(
    admin: AdminServices, caller: Caller, workspace: str, connector: str
) -> Answer:
    found = await find_connector(admin.store, workspace, connector)
    grant = await admin.store.find(ConnectorGrant, connector_id=found.id)
    return {**connector_json(found, workspace), "authorization": grant_json(found, grant)}


@routes.patch("/workspaces/<workspace>/connectors/<connector>")
async def update_connector(
    admin: AdminServices, caller: Caller, workspace: str, connector: str
) -> Answer:
    change = await read_body(ConnectorChange)
    active, relay = change.active, change.relay_requests
    changed = await find_connector(admin.store, workspace, connector)
    if change.protocol is not None:
        changed = await set_connector_protocol(
            admin.store, workspace, connector, protocol=change.protocol, actor=caller.actor
        )
    if relay is not None:
        changed = await set_connector_relay(
            admin.store, workspace, connector, relay=relay, actor=caller.actor
        )
    if active is not None:
        changed = await set_connector_active(
            admin.store, workspace, connector, active=active, actor=caller.actor
        )
    return connector_json(changed, workspace)


@routes.post("/workspaces/<workspace>/connectors/<connector>/test")
async def connector_test(
    admin: AdminServices, caller: Caller, workspace: str, connector: str
) -> Answer:
    found = await find_connector(admin.store, workspace, connector)
    checked = await check_connector_now(found, admin)
    return connector_check_json(checked, workspace)


@routes.post("/workspaces/<workspace>/connectors/<connector>/authorize")
async def connector_authorize(
    admin: AdminServices, caller: Caller, workspace: str, connector: str
) -> Answer:
    found = await find_connector(admin.store, workspace, connector)
    if found.auth == "static":
        raise ValidationError(
            f"connector {connector!r} authenticates with a static secret: nothing to authorize"
        )
    if admin.authorize is None:
        raise UpstreamError("authorizations are not running here")
    base = admin.settings.base_url or request.host_url.rstrip("/")
    url = await admin.authorize(found, workspace, caller.actor, None, base)
    grant = await admin.store.find(ConnectorGrant, connector_id=found.id)
    return {
        "workspace": workspace,
        "connector": connector,
        "authorization_url": url,
        "authorization": grant_json(found, grant),
    }


@routes.delete("/workspaces/<workspace>/connectors/<connector>/authorization")
async def connector_disconnect(
    admin: AdminServices, caller: Caller, workspace: str, connector: str
) -> Answer:
    found = await find_connector(admin.store, workspace, connector)
    revoked = await disconnect_connector(
        admin.store,
        admin.keys.box(),
        admin.settings,
        found,
        workspace_slug=workspace,
        actor=caller.actor,
    )
    return {
        "workspace": workspace,
        "connector": connector,
        "authorization_url": None,
        "revoked": revoked,
        "authorization": grant_json(found, None),
    }


@routes.post("/workspaces/<workspace>/connectors/<connector>/refresh")
async def connector_refresh(
    admin: AdminServices, caller: Caller, workspace: str, connector: str
) -> Answer:
    found = await find_connector(admin.store, workspace, connector)
    report = await refresh_connector(admin.store, workspace, found, admin, actor=caller.actor)
    return {"workspace": workspace, "connector": found.name, **sync_report_json(report)}
