"""The admin API's webhooks and their events: create, list, change, delete; replay."""

from __future__ import annotations

from typing import Any

from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.domain.models import Group, VerificationScheme, Webhook, Workspace
from agentws.store.sql_records import RecordStore
from agentws.views import event_json, webhook_json
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events

from .calls import Answer, endpoint, enum_value, field, json_body, page_of, required, tool_names
from .event_lists import event_page_json

__all__ = ["routes", "webhook_view"]

routes = RouteTable[AdminServices]()


async def webhook_view(store: RecordStore, webhook: Webhook) -> dict[str, Any]:
    """The webhook as the API shows it (workspace and group by slug)."""
    workspace = await store.get(Workspace, webhook.workspace_id)
    group = await store.find(Group, id=webhook.group_id) if webhook.group_id else None
    return webhook_json(webhook, workspace.slug, group.slug if group else None)


# --- webhooks -------------------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/webhooks")
@endpoint
async def list_webhooks(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    store = admin.store
    return page_of(
        [await webhook_view(store, w) for w in await webhooks_admin.list_webhooks(store, workspace)]
    )


@routes.post("/workspaces/<workspace>/webhooks")
@endpoint
async def create_webhook(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    data = await json_body()
    verification = enum_value(
        VerificationScheme, "verification", field(data, "verification", str, "none")
    )
    capture = field(data, "capture", bool, False)
    options = webhooks_admin.WebhookOptions(
        group=field(data, "group", str),
        # A webhook that captures is a draft unless the request says otherwise.
        active=field(data, "active", bool, not capture),
        capture=capture,
        concurrency=field(data, "concurrency", int, 4),
        verification=verification,
        secret=field(data, "secret", str),
        rate_per_min=field(data, "rate_per_min", int, 60),
        burst=field(data, "burst", int),
        max_body_bytes=field(data, "max_body_bytes", int),
        allow_tools=tool_names(data, "allow_tools"),
        allow_mentions=field(data, "allow_mentions", bool, False),
        alert_after=field(data, "alert_after", int, 3),
        alerts_channel=field(data, "alerts_channel", str),
        pause_on_failure=field(data, "pause_on_failure", bool, False),
    )
    issued = await webhooks_admin.create_webhook(
        admin.store,
        admin.settings,
        admin.keys,
        workspace,
        name=required(data, "name"),
        channel=required(data, "channel"),
        prompt=required(data, "prompt"),
        options=options,
        actor=caller.actor,
    )
    view = await webhook_view(admin.store, issued.webhook)
    return {**view, "url": issued.url}, 201


@routes.get("/workspaces/<workspace>/webhooks/<webhook>")
@endpoint
async def show_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    store = admin.store
    return await webhook_view(store, await webhooks_admin.find_webhook(store, workspace, webhook))


@routes.patch("/workspaces/<workspace>/webhooks/<webhook>")
@endpoint
async def update_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    data = await json_body()
    store = admin.store
    changes = webhooks_admin.WebhookChanges(
        prompt=field(data, "prompt", str),
        channel=field(data, "channel", str),
        group=field(data, "group", str),
        allow_tools=tool_names(data, "allow_tools"),
        disallow_tools=tool_names(data, "disallow_tools"),
        allow_mentions=field(data, "allow_mentions", bool),
        capture=field(data, "capture", bool),
        alert_after=field(data, "alert_after", int),
        alerts_channel=field(data, "alerts_channel", str),
        pause_on_failure=field(data, "pause_on_failure", bool),
    )
    active = field(data, "active", bool)
    updated = await webhooks_admin.update_webhook(
        store,
        workspace,
        webhook,
        changes=changes,
        allowlist=admin.settings.connector_allowlist,
        actor=caller.actor,
    )
    if active is not None:
        updated = await webhooks_admin.set_active(
            store, workspace, updated.id, active=active, actor=caller.actor
        )
    return await webhook_view(store, updated)


@routes.delete("/workspaces/<workspace>/webhooks/<webhook>")
@endpoint
async def delete_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    deleted = await webhooks_admin.delete_webhook(
        admin.store, workspace, webhook, actor=caller.actor
    )
    return {"id": deleted.id, "deleted": True}


# --- events ---------------------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/events")
@endpoint
async def list_events(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    return await event_page_json(admin, workspace)


@routes.get("/events/<event_id>")
@endpoint
async def show_event(admin: AdminServices, caller: Caller, event_id: str) -> Answer:
    event, webhook = await webhook_events.find_event(admin.store, event_id)
    return event_json(event, webhook)


@routes.post("/events/<event_id>/replay")
@endpoint
async def replay_event(admin: AdminServices, caller: Caller, event_id: str) -> Answer:
    data = await json_body()
    store = admin.store
    replayed = await webhook_events.replay_event(
        store,
        event_id,
        current_prompt=field(data, "current_prompt", bool, False),
        actor=caller.actor,
    )
    admin.notify_events()
    event, webhook = await webhook_events.find_event(store, replayed.id)
    return event_json(event, webhook), 201
