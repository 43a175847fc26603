"""Connecting an OAuth connector from the dashboard: Connect, the upstream's page, the callback.

- **Connect** (``POST /w/<workspace>/connectors/<name>/connect``) starts the
  connector's authorization in the service
  (:class:`~agentws.connectors.authorizations.ConnectorAuthorizations`),
  bound to this dashboard session, and sends the browser to the upstream's
  own consent page, through a page of its own that goes on there (the
  dashboard's forms may lead only to the dashboard); a client-credentials
  connector needs none: it is authorized at once.
- **The callback** (:data:`~agentws.connectors.authorize.CALLBACK_PATH`,
  the redirect URI agentws registers, exactly) takes the upstream's answer
  for the flow waiting on its ``state``, only from the dashboard session
  that started it (a signed-in admin in any case), waits a little for the
  flow to keep the grant, and shows the connector's page with how it went.
- **agentws's Client ID Metadata Document**
  (:data:`~agentws.connectors.authorize.CLIENT_DOCUMENT_PATH`): public, as
  an authorization server fetches it.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

import trio
from quart import Response, jsonify, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.connectors.admin import find_connector
from agentws.connectors.authorize import answer_callback, client_document, disconnect_connector
from agentws.core.errors import AgentwsError
from agentws.domain.models import Connector, ConnectorGrant, GrantState, Workspace
from agentws.doors.dashboard.frame import done, error_text, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable

__all__ = ["routes", "session_binding"]

routes = RouteTable[AdminServices]()

# How long the callback page waits for the flow to keep the grant before showing the page.
_SETTLE_S = 20.0
_SETTLE_STEP_S = 0.1


def session_binding(caller: Caller) -> str | None:
    """What binds an authorization to the dashboard session that started it."""
    if caller.session is None:
        return None
    return hashlib.sha256(caller.session.token_hash.encode()).hexdigest()


@routes.get("/connectors/client.json")
async def client_metadata_document(admin: AdminServices) -> Response:
    return jsonify(client_document(admin.settings.base_url or request.host_url.rstrip("/")))


def _page(workspace: str, name: str) -> str:
    return url_for("dashboard.connector_show", workspace=workspace, name=name)


@routes.post("/w/<workspace>/connectors/<name>/connect")
@signed_in
async def connector_connect(
    admin: AdminServices, caller: Caller, workspace: str, name: str
) -> Response:
    connector = await find_connector(admin.store, workspace, name)
    if admin.authorize is None:
        return done(_page(workspace, name), "authorizations are not running here", error=True)
    try:
        base = admin.settings.base_url or request.host_url.rstrip("/")
        url = await admin.authorize(
            connector, workspace, caller.actor, session_binding(caller), base
        )
    except AgentwsError as exc:
        return done(_page(workspace, name), error_text(exc), error=True)
    if url is None:
        return done(_page(workspace, name), f"Connector {name} is authorized.")
    # A page that goes on to the upstream, not a redirect: the dashboard's
    # policy lets its forms lead nowhere but to itself (form-action 'self').
    upstream = urlsplit(url).netloc
    return await render_page(
        admin,
        "connector_connect.html",
        caller,
        workspace=workspace,
        connector=connector,
        authorization_url=url,
        upstream=upstream,
    )


@routes.post("/w/<workspace>/connectors/<name>/disconnect")
@signed_in
async def connector_disconnect(
    admin: AdminServices, caller: Caller, workspace: str, name: str
) -> Response:
    connector = await find_connector(admin.store, workspace, name)
    try:
        revoked = await disconnect_connector(
            admin.store,
            admin.keys.box(),
            admin.settings,
            connector,
            workspace_slug=workspace,
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return done(_page(workspace, name), error_text(exc), error=True)
    said = "its tokens were revoked upstream" if revoked else "revoke its access upstream too"
    return done(_page(workspace, name), f"Connector {name} is disconnected: {said}.")


@routes.get("/connectors/authorized")
@signed_in
async def connector_authorized(admin: AdminServices, caller: Caller) -> Response:
    args = request.args
    state = args.get("state")
    if not state:
        return done(url_for("dashboard.home"), "the upstream sent no state back", error=True)
    error = args.get("error")
    if error and args.get("error_description"):
        error = f"{error}: {args['error_description'][:300]}"
    answered = await answer_callback(
        admin.store,
        admin.keys.box(),
        state=state,
        code=args.get("code"),
        iss=args.get("iss"),
        error=error,
        session_hash=session_binding(caller) or "",
    )
    if answered is None:
        return done(
            url_for("dashboard.home"),
            "this authorization is unknown, used, expired, or another session's: "
            "start it again from the connector's page",
            error=True,
        )
    connector = await admin.store.get(Connector, answered.connector_id)
    workspace = await admin.store.get(Workspace, connector.workspace_id)
    page = _page(workspace.slug, connector.name)
    if answered.error is not None:
        return done(page, f"The upstream refused: {answered.error}", error=True)
    grant = await _settled(admin, connector, answered.created_at)
    if grant is None:
        return done(page, "Consent received; the connector is still being connected.")
    if grant.state is GrantState.CONNECTED:
        return done(page, f"Connector {connector.name} is connected.")
    return done(page, f"Connector {connector.name}: {grant.reason}", error=True)


async def _settled(
    admin: AdminServices, connector: Connector, since: object
) -> ConnectorGrant | None:
    """The connector's grant once the flow kept it (None if it took too long)."""
    with trio.move_on_after(_SETTLE_S):
        while True:
            grant = await admin.store.find(ConnectorGrant, connector_id=connector.id)
            if grant is not None and grant.updated_at >= since:  # type: ignore[operator]
                return grant
            await trio.sleep(_SETTLE_STEP_S)
    return None
