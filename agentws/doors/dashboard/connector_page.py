"""A connector's page: its settings, health and tools; its actions; accepting suggested labels.

The actions are the CLI's (``agentws connector test|refresh|attach|detach|
remove``) over the same service functions, plus activating and
deactivating, each audited as the service records it. The tools table
has one row per tool: its capability, its label (a remote MCP tool's can
be chosen there, one tool at a time, whether or not a group lists it),
and the label the remote's annotations suggest. Every label change goes
through :func:`~agentws.tools.admin.set_label` exactly as a single label
change on the Permissions page (audited ``tool.label`` one by one).

"Accept suggested labels" labels the ticked tools with their suggestion;
the form ticks in advance only suggestions of ``read`` or ``write`` that
differ from the label: a ``destructive`` suggestion is applied only when
ticked by hand. Each box posts the suggestion it was drawn with
(``tool:label``), and a tool is labeled only when its stored suggestion
is still that one: a refresh between drawing the page and posting it
never turns a ticked ``write`` into ``destructive`` (or a ticked
``destructive`` into ``read``) unseen; those tools are named as skipped.
"""

from __future__ import annotations

from collections import Counter

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.checks.connectors import check_connector_now, refresh_connector, refresh_text
from agentws.connectors.admin import (
    SECRET_HEADER_FIELD,
    attach_connector,
    detach_connector,
    find_connector,
    list_connectors,
    remove_connector,
    set_connector_active,
    set_connector_relay,
)
from agentws.core.errors import AgentwsError
from agentws.domain.models import (
    CachedTool,
    Capability,
    Connector,
    ConnectorGrant,
    ConnectorKind,
)
from agentws.doors.dashboard.connectors import KINDS, attached_groups, health_of, secret_text
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.doors.views import grant_json
from agentws.http.blueprints import RouteTable
from agentws.tools import admin as tools_admin
from agentws.tools.schema_cost import assess
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

# A notice names the tools labeled when they are this few; beyond, it counts them.
_NAMED = 5
# Suggestions ticked in advance; a destructive one needs its own tick.
_PRESELECTED = (Capability.READ, Capability.WRITE)
# Between a tool's name and the suggestion its box was drawn with. A label's
# value has none, so the last one splits them whatever the tool's name holds.
_DRAWN = ":"


def _acceptable(connector: Connector, tool: CachedTool) -> bool:
    """Whether the tool has a suggestion an admin could accept (one it does not have yet)."""
    return (
        connector.kind is ConnectorKind.REMOTE_MCP
        and tool.suggested_label is not None
        and tool.suggested_label is not tool.label
    )


@routes.get("/w/<workspace>/connectors/<name>")
@signed_in
async def connector_show(
    admin: AdminServices, caller: Caller, workspace: str, name: str
) -> Response:
    store = admin.store
    ws = await find_workspace(admin, workspace)
    connector = await find_connector(store, workspace, name)
    tools = sorted(await store.select(CachedTool, connector_id=connector.id), key=lambda t: t.name)
    groups = await registry.list_groups(store, workspace)
    # Every connector of the workspace: a call is given to the connector with
    # the longest name it starts with (``gh_two_x`` is gh_two's, not gh's).
    everyone = await list_connectors(store, workspace)
    rows = [
        {
            "tool": t,
            "listed": f"{connector.name}_{t.name}",
            "acceptable": _acceptable(connector, t),
            "preselected": _acceptable(connector, t) and t.suggested_label in _PRESELECTED,
            "hazards": assess(t.input_schema).hazards,
        }
        for t in tools
    ]
    return await render_page(
        admin,
        "connector.html",
        caller,
        workspace=ws,
        connector=connector,
        kind_label=KINDS[connector.kind],
        secret=secret_text(connector),
        headers={k: v for k, v in connector.headers.items() if k != SECRET_HEADER_FIELD},
        attached=(await attached_groups(store, workspace)).get(connector.id, []),
        groups=[g.slug for g in groups],
        health=(await health_of(store, ws.id, everyone))[connector.id],
        rows=rows,
        labels=[c.value for c in Capability],
        drawn=_DRAWN,
        labelable=connector.kind is ConnectorKind.REMOTE_MCP,
        acceptable=sum(1 for r in rows if r["acceptable"]),
        has_tools=connector.kind is not ConnectorKind.INCOMING_WEBHOOK,
        authorization=grant_json(
            connector, await store.find(ConnectorGrant, connector_id=connector.id)
        ),
    )


@routes.post("/w/<workspace>/connectors/<name>/labels")
@signed_in
async def connector_accept_labels(
    admin: AdminServices, caller: Caller, workspace: str, name: str
) -> Response:
    here = url_for("dashboard.connector_show", workspace=workspace, name=name)
    form = await request.form
    # Tool name -> the suggestion its box was drawn with (a bare name: none).
    chosen = dict(_split_drawn(value) for value in form.getlist("tool"))
    store = admin.store
    applied: list[tuple[str, Capability]] = []
    skipped: list[str] = []
    try:
        connector = await find_connector(store, workspace, name)
        for tool in await store.select(CachedTool, connector_id=connector.id):
            if tool.name not in chosen or not _acceptable(connector, tool):
                continue
            label = tool.suggested_label
            if label is None or chosen[tool.name] != label.value:
                # A refresh changed the suggestion after the page was drawn: the
                # admin chose another label than the one stored now.
                skipped.append(f"{connector.name}_{tool.name}")
                continue
            await tools_admin.set_label(
                store, workspace, f"{connector.name}/{tool.name}", label, actor=caller.actor
            )
            applied.append((f"{connector.name}_{tool.name}", label))
    except AgentwsError as exc:
        done_so_far = f" Before that: {_labeled_text(applied)}" if applied else ""
        return done(here, error_text(exc) + done_so_far, error=True)
    if skipped:
        labeled = _labeled_text(applied) + " " if applied else "No label was changed. "
        which = ", ".join(sorted(skipped)) if len(skipped) <= _NAMED else f"{len(skipped)} tools"
        return done(
            here,
            f"{labeled}Skipped {which}: their suggestion changed since the page was drawn. "
            "Check the suggestions below and accept again.",
            error=True,
        )
    if not applied:
        return done(here, "No label was changed: tick the tools whose suggestion to accept.")
    return done(here, _labeled_text(applied))


@routes.post("/w/<workspace>/connectors/<name>/label")
@signed_in
async def connector_set_label(
    admin: AdminServices, caller: Caller, workspace: str, name: str
) -> Response:
    """One tool's label, chosen by hand: as the Permissions page sets it."""
    here = url_for("dashboard.connector_show", workspace=workspace, name=name)
    form = await request.form
    tool = form.get("tool") or ""
    chosen = form.get("label") or ""
    listed = f"{name}_{tool}"
    try:
        label = Capability(chosen) if chosen else None
        await tools_admin.set_label(
            admin.store, workspace, f"{name}/{tool}", label, actor=caller.actor
        )
    except (AgentwsError, ValueError) as exc:
        return done(here, error_text(exc), error=True)
    return done(here, f"{listed} is labeled {chosen or 'unlabeled (write)'}.")


def _split_drawn(value: str) -> tuple[str, str | None]:
    """``tool:label`` -> (tool, label); a value without a label -> (value, None)."""
    tool, sep, label = value.rpartition(_DRAWN)
    return (tool, label) if sep else (value, None)


def _labeled_text(applied: list[tuple[str, Capability]]) -> str:
    """What was labeled: each tool when they are few, else how many of each label."""
    if len(applied) <= _NAMED:
        names = ", ".join(f"{name} ({label.value})" for name, label in sorted(applied))
        return f"Labeled {len(applied)}: {names}."
    counts = Counter(label.value for _, label in applied)
    each = ", ".join(f"{counts[c.value]} {c.value}" for c in Capability if counts[c.value])
    return f"Labeled {len(applied)} tools as their remote suggests ({each})."


@routes.post("/w/<workspace>/connectors/<name>/<action>")
@signed_in
async def connector_action(
    admin: AdminServices, caller: Caller, workspace: str, name: str, action: str
) -> Response:
    store = admin.store
    here = url_for("dashboard.connector_show", workspace=workspace, name=name)
    listing = url_for("dashboard.connectors", workspace=workspace)
    form = await request.form
    try:
        connector = await find_connector(store, workspace, name)
        if action == "test":
            checked = await check_connector_now(connector, admin)
            return done(here, checked.text())
        if action == "refresh":
            report = await refresh_connector(store, workspace, connector, admin, actor=caller.actor)
            return done(here, refresh_text(connector.name, report))
        if action in ("attach", "detach"):
            group = form.get("group") or ""
            if action == "attach":
                await attach_connector(store, workspace, group, name, actor=caller.actor)
                return done(here, f"Connector {name!r} is attached to {group}.")
            link = await detach_connector(store, workspace, group, name, actor=caller.actor)
            was = "is detached from" if link else "was not attached to"
            return done(here, f"Connector {name!r} {was} {group}.")
        if action in ("activate", "deactivate"):
            changed = await set_connector_active(
                store, workspace, name, active=action == "activate", actor=caller.actor
            )
            state = "active" if changed.active else "inactive: no group lists its tools"
            return done(here, f"Connector {name!r} is {state}.")
        if action in ("relay_on", "relay_off"):
            changed = await set_connector_relay(
                store, workspace, name, relay=action == "relay_on", actor=caller.actor
            )
            state = (
                "passes its requests (elicitation, sampling, roots) on to callers, marked as "
                "its own"
                if changed.relay_requests
                else "refuses its requests to callers (elicitation, sampling, roots)"
            )
            return done(here, f"Connector {name!r} {state}.")
        if action == "remove":
            removed = await remove_connector(store, workspace, name, actor=caller.actor)
            return done(listing, f"Removed connector {removed.name!r}, its tools and attachments.")
    except AgentwsError as exc:
        return done(here, error_text(exc), error=True)
    return done(here, f"unknown action {action!r}", error=True)
