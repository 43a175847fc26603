"""The admin API's list of a workspace's events: filtered, searched, a page at a time.

``GET /workspaces/<workspace>/events?webhook=&status=&since=&until=&q=&limit=&cursor=``
answers ``{"items", "next_cursor", "previous_cursor", "unindexed"}``, newest
first; the filters are those of :func:`~agentws.webhooks.event_search.find_events`.
"""

from __future__ import annotations

from typing import Any

from quart import request

from agentws.admins.access import AdminServices
from agentws.domain.event_lists import DEFAULT_PAGE, MAX_PAGE, EventSummary
from agentws.domain.models import EventStatus, Webhook
from agentws.doors.api.calls import enum_value, query_number
from agentws.doors.views import event_json
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks.event_search import find_events

__all__ = ["event_page_json", "event_summary_json"]


def event_summary_json(e: EventSummary, webhook: Webhook) -> dict[str, Any]:
    """A row of a list of events: the event as :func:`~agentws.doors.views.event_json` shows it,
    and the size of its body."""
    return {**event_json(e, webhook), "body_bytes": e.body_bytes}


async def event_page_json(admin: AdminServices, workspace: str) -> dict[str, Any]:
    """The page of ``workspace``'s events the request's query string asks for."""
    args = request.args
    store = admin.store
    limit = query_number("limit", DEFAULT_PAGE, high=MAX_PAGE)
    only = args.get("webhook")
    page = await find_events(
        store,
        workspace,
        webhook=await webhooks_admin.find_webhook(store, workspace, only) if only else None,
        status=enum_value(EventStatus, "status", args.get("status") or None),
        since=args.get("since"),
        until=args.get("until"),
        search=args.get("q"),
        limit=limit,
        cursor=args.get("cursor") or None,
    )
    workspace_id = (await store.workspace_by_slug(workspace)).id
    webhooks = {w.id: w for w in await store.select(Webhook, workspace_id=workspace_id)}
    return {
        "items": [event_summary_json(e, webhooks[e.webhook_id]) for e in page.items],
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "unindexed": page.unindexed,
    }
