"""The dashboard's events: a workspace's deliveries, one event's timeline, replaying it."""

from __future__ import annotations

from quart import Response, request, url_for

from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.domain.models import EventStatus, Workspace
from agentws.errors import AgentwsError
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events

from .frame import done, find_workspace, render_page
from .session import signed_in

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/w/<workspace>/events")
@signed_in
async def events(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    hooks = await webhooks_admin.list_webhooks(store, workspace)
    only = request.args.get("webhook") or None
    status_text = request.args.get("status") or None
    webhook = await webhooks_admin.find_webhook(store, workspace, only) if only else None
    try:
        status = EventStatus(status_text) if status_text else None
    except ValueError:
        status = None
    listed = await webhook_events.list_events(
        store, workspace, webhook=webhook, status=status, limit=200
    )
    names = {w.id: w.name for w in hooks}
    return await render_page(
        admin,
        "events.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        events=listed,
        names=names,
        webhooks=hooks,
        only=only,
        chosen_status=status_text,
        statuses=[s.value for s in EventStatus],
    )


@routes.get("/events/<event_id>")
@signed_in
async def event(admin: AdminServices, caller: Caller, event_id: str) -> Response:
    store = admin.store
    timeline = await webhook_events.event_timeline(store, event_id)
    workspace = await store.get(Workspace, timeline.webhook.workspace_id)
    return await render_page(
        admin,
        "event.html",
        caller,
        timeline=timeline,
        request_body=timeline.request_body(),
        workspace=workspace,
    )


@routes.post("/events/<event_id>/replay")
@signed_in
async def event_replay(admin: AdminServices, caller: Caller, event_id: str) -> Response:
    form = await request.form
    try:
        replayed = await webhook_events.replay_event(
            admin.store,
            event_id,
            current_prompt=form.get("current_prompt") == "on",
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return done(url_for("dashboard.event", event_id=event_id), exc.message, error=True)
    admin.notify_events()
    return done(url_for("dashboard.event", event_id=replayed.id), "Replayed as this new event.")
