"""The dashboard's Connectors page: a workspace's connectors, their health; adding one.

The listing shows each connector's kind, URL (an incoming webhook's only as
its origin: the whole URL is its secret), state, groups and health (see
:mod:`agentws.domain.connector_health`), read in a fixed number of queries
whatever the number of connectors. The add form is one per kind
(``?kind=``), each a plain form: the secret is typed once into a password
field, sealed by :func:`~agentws.connectors.admin.add_connector` and
never shown again; a refused form comes back filled as typed, but the
secret. A remote MCP connector's tools are fetched at once, as the CLI
does; a failed fetch still saves it, with the warning.
"""

from __future__ import annotations

from datetime import timedelta

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.checks.connectors import refresh_connector, refresh_text
from agentws.connectors.admin import (
    DEFAULT_URLS,
    SECRET_HEADER_FIELD,
    ConnectorSecret,
    add_connector,
    list_connectors,
    parse_header,
)
from agentws.core.errors import AgentwsError
from agentws.domain.connector_health import ConnectorHealth, connector_health
from agentws.domain.models import Connector, ConnectorKind, GroupConnector
from agentws.domain.rules import utcnow
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.named_items import FormRefused, declare_listing
from agentws.http.blueprints import RouteTable
from agentws.store.sql_connector_health import ConnectorHealthStore
from agentws.store.sql_records import RecordStore
from agentws.workspaces import admin as registry

__all__ = ["KINDS", "attached_groups", "health_of", "routes", "secret_text"]

routes = RouteTable[AdminServices]()

#: The kinds, in the order the add form offers them, with what each is called.
KINDS = {
    ConnectorKind.REMOTE_MCP: "Remote MCP",
    ConnectorKind.GITHUB: "GitHub",
    ConnectorKind.SLACK: "Slack",
    ConnectorKind.STRIPE: "Stripe",
    ConnectorKind.INCOMING_WEBHOOK: "Incoming webhook",
}
#: Health covers this much of the past.
HEALTH_WINDOW = timedelta(hours=1)
# Audit entries health reads at most per page: a busy hour is judged on its newest calls.
_HEALTH_ENTRIES = 5000
# The form fields shown again when a form is refused (never the secret).
_TYPED = ("kind", "name", "url", "headers", "secret_header")


async def attached_groups(store: RecordStore, workspace_slug: str) -> dict[str, list[str]]:
    """Connector id -> slugs of the groups it is attached to."""
    attached: dict[str, list[str]] = {}
    for group in await registry.list_groups(store, workspace_slug):
        for link in await store.select(GroupConnector, group_id=group.id):
            attached.setdefault(link.connector_id, []).append(group.slug)
    return attached


async def health_of(
    store: ConnectorHealthStore, workspace_id: str, connectors: list[Connector]
) -> dict[str, ConnectorHealth]:
    """Connector id -> health, from one read of the audit log and one of the tool cache."""
    entries = await store.connector_activity(
        workspace_id, since=utcnow() - HEALTH_WINDOW, limit=_HEALTH_ENTRIES
    )
    summaries = await store.connector_tool_summaries(workspace_id)
    return connector_health(connectors, entries, summaries)


def secret_text(connector: Connector) -> str:
    """Where the secret is, never what it is."""
    if connector.secret is None:
        return "none"
    if connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        return "the URL, stored encrypted (only its origin is shown)"
    header = connector.headers.get(SECRET_HEADER_FIELD, "Authorization")
    return f"in header {header}, stored encrypted"


async def _connectors_page(
    admin: AdminServices,
    caller: Caller,
    workspace: str,
    *,
    typed: dict[str, str] | None = None,
    error: str | None = None,
) -> Response:
    """The listing; with ``typed``, its form filled with what was posted (but the secret)."""
    store = admin.store
    ws = await find_workspace(admin, workspace)
    found = sorted(await list_connectors(store, workspace), key=lambda c: c.name)
    typed = typed or {}
    wanted = typed.get("kind") or request.args.get("kind") or ConnectorKind.REMOTE_MCP.value
    kind = next((k for k in KINDS if k.value == wanted), ConnectorKind.REMOTE_MCP)
    return await render_page(
        admin,
        "connectors.html",
        caller,
        workspace=ws,
        connectors=found,
        groups=await attached_groups(store, workspace),
        health=await health_of(store, ws.id, found),
        kinds=[(k.value, label) for k, label in KINDS.items()],
        kind=kind.value,
        kind_label=KINDS[kind],
        default_url=DEFAULT_URLS.get(kind),
        typed=typed,
        error=error,
    )


@declare_listing(routes, "connectors", _connectors_page)
async def connector_add(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    form = await request.form
    typed = {k: str(form.get(k) or "") for k in _TYPED}
    try:
        kind = ConnectorKind(typed["kind"])
        value = form.get("secret") or ""
        secret = (
            ConnectorSecret(value, typed["secret_header"].strip() or "Authorization")
            if value
            else None
        )
        headers = dict(parse_header(line) for line in typed["headers"].splitlines() if line.strip())
        connector = await add_connector(
            admin.store,
            workspace,
            typed["name"].strip(),
            kind=kind,
            url=typed["url"].strip() or None,
            headers=headers,
            secret=secret,
            box=admin.keys.box() if secret else None,
            allowlist=admin.settings.connector_allowlist,
            actor=caller.actor,
        )
    except (AgentwsError, ValueError) as exc:
        # The form again, as typed but the secret: nothing was saved.
        raise FormRefused(typed, error_text(exc)) from exc
    page = url_for("dashboard.connector_show", workspace=workspace, name=connector.name)
    notice = f"Added {KINDS[kind]} connector {connector.name!r}."
    if connector.secret is not None:
        notice += " Its secret is stored encrypted and will not be shown again."
    if kind is ConnectorKind.REMOTE_MCP:
        # Saved either way, as the CLI does: a remote that is down now can be refreshed later.
        try:
            report = await refresh_connector(
                admin.store, workspace, connector, admin, actor=caller.actor
            )
        except AgentwsError as exc:
            return done(
                page, f"{notice} Warning: {exc.message} Refresh it when it is up.", error=True
            )
        notice += " " + refresh_text(connector.name, report)
    return done(page, notice)
