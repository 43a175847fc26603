"""The dashboard's events: a workspace's deliveries (filtered, searched, a page at a time),
one event's timeline, its whole body as a download, replaying it.

The timeline shows the body and each attempt's transcript indented, cut by
structure past a bound (:mod:`agentws.doors.dashboard.json_view`): the sender
chose the body, up to a webhook's limit, and the page's work must not grow
with it. The whole body is a download of its own.
"""

from __future__ import annotations

import json

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError, ValidationError
from agentws.domain.event_lists import EventPage
from agentws.domain.models import EventStatus, Workspace
from agentws.doors.dashboard.frame import done, find_workspace, render_page
from agentws.doors.dashboard.json_view import indented
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events
from agentws.webhooks.event_search import find_events

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

# Events a page of the list shows.
_PAGE = 50
#: Characters of an event's body the timeline shows, indented (the rest is a download):
#: enough to read most payloads whole, and a few milliseconds to write.
BODY_VIEW_CHARS = 128 * 1024
#: Characters of an attempt's transcript the timeline shows (it holds the body as the
#: model read it, up to its own budget).
TRANSCRIPT_VIEW_CHARS = 32 * 1024


@routes.get("/w/<workspace>/events")
@signed_in
async def events(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    hooks = await webhooks_admin.list_webhooks(store, workspace)
    args = request.args
    only = args.get("webhook") or None
    webhook = await webhooks_admin.find_webhook(store, workspace, only) if only else None
    # An unknown status (a hand-edited URL) lists every status, as "all" does.
    status_text = args.get("status", "")
    status = EventStatus(status_text) if status_text in {s.value for s in EventStatus} else None
    # What the form shows again, as it was typed.
    filters = {
        "webhook": only,
        "status": status.value if status else None,
        "since": args.get("since", "").strip() or None,
        "until": args.get("until", "").strip() or None,
        "q": args.get("q", "").strip() or None,
    }
    error = None
    try:
        listed = await find_events(
            store,
            workspace,
            webhook=webhook,
            status=status,
            since=filters["since"],
            until=filters["until"],
            search=filters["q"],
            limit=_PAGE,
            cursor=args.get("cursor") or None,
        )
    except ValidationError as exc:
        error, listed = exc.message, EventPage((), None, None)
    return await render_page(
        admin,
        "events.html",
        caller,
        error=error,
        workspace=await find_workspace(admin, workspace),
        page=listed,
        names={w.id: w.name for w in hooks},
        webhooks=hooks,
        filters=filters,
        filtered=any(filters.values()),
        statuses=[s.value for s in EventStatus],
    )


@routes.get("/events/<event_id>")
@signed_in
async def event(admin: AdminServices, caller: Caller, event_id: str) -> Response:
    store = admin.store
    timeline = await webhook_events.event_timeline(store, event_id)
    workspace = await store.get(Workspace, timeline.webhook.workspace_id)
    transcripts = [
        indented(_json(a.transcript), limit=TRANSCRIPT_VIEW_CHARS) for a in timeline.attempts
    ]
    return await render_page(
        admin,
        "event.html",
        caller,
        timeline=timeline,
        body=indented(timeline.event.body, limit=BODY_VIEW_CHARS),
        body_view_chars=BODY_VIEW_CHARS,
        attempts=list(zip(timeline.attempts, transcripts, strict=True)),
        workspace=workspace,
    )


def _json(value: object) -> str:
    # Compact: the C encoder, milliseconds for what a transcript holds.
    return json.dumps(value, ensure_ascii=False, default=str)


@routes.get("/events/<event_id>/body")
@signed_in
async def event_body(admin: AdminServices, caller: Caller, event_id: str) -> Response:
    """The event's body as it was received (a form's: the event it carried), as a download."""
    event, _ = await webhook_events.find_event(admin.store, event_id)
    response = Response(event.body, content_type="application/json")
    # A download, never a page of this origin: the sender chose every byte.
    response.headers["Content-Disposition"] = f'attachment; filename="{event.id}.json"'
    return response


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
