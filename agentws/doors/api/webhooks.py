"""The admin API's webhooks and their events: create, list, change, delete; replay."""

from __future__ import annotations

from typing import Any

from agentws.admins.access import AdminServices, Caller
from agentws.domain.models import Group, Webhook, Workspace
from agentws.doors.api.calls import Answer, Endpoints, page_of, read_body
from agentws.doors.api.event_lists import event_page_json
from agentws.doors.api.shapes import bodies
from agentws.doors.views import event_json, webhook_json
from agentws.store.sql_records import RecordStore
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events

__all__ = ["routes", "webhook_view"]

routes = Endpoints()


async def webhook_view(store: RecordStore, webhook: Webhook) -> dict[str, Any]:
    """The webhook as the API shows it (workspace and group by slug)."""
    workspace = await store.get(Workspace, webhook.workspace_id)
    group = await store.find(Group, id=webhook.group_id) if webhook.group_id else None
    return webhook_json(webhook, workspace.slug, group.slug if group else None)


# --- webhooks -------------------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/webhooks")
async def list_webhooks(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    store = admin.store
    return page_of(
        [await webhook_view(store, w) for w in await webhooks_admin.list_webhooks(store, workspace)]
    )


@routes.post("/workspaces/<workspace>/webhooks")
async def create_webhook(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    new = await read_body(bodies.NewWebhook)
    options = webhooks_admin.WebhookOptions(
        group=new.group,
        # A webhook that captures is a draft unless the request says otherwise.
        active=(not new.capture) if new.active is None else new.active,
        capture=new.capture,
        concurrency=new.concurrency,
        verification=new.verification,
        secret=new.secret,
        rate_per_min=new.rate_per_min,
        burst=new.burst,
        max_body_bytes=new.max_body_bytes,
        allow_tools=tuple(new.allow_tools),
        allow_mentions=new.allow_mentions,
        alert_after=new.alert_after,
        alerts_channel=new.alerts_channel,
        pause_on_failure=new.pause_on_failure,
    )
    issued = await webhooks_admin.create_webhook(
        admin.store,
        admin.settings,
        admin.keys,
        workspace,
        name=new.name,
        channel=new.channel,
        prompt=new.prompt,
        options=options,
        actor=caller.actor,
    )
    view = await webhook_view(admin.store, issued.webhook)
    return {**view, "url": issued.url}, 201


@routes.get("/workspaces/<workspace>/webhooks/<webhook>")
async def show_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    store = admin.store
    return await webhook_view(store, await webhooks_admin.find_webhook(store, workspace, webhook))


@routes.patch("/workspaces/<workspace>/webhooks/<webhook>")
async def update_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    asked = await read_body(bodies.WebhookChanges)
    store = admin.store
    changes = webhooks_admin.WebhookChanges(
        prompt=asked.prompt,
        channel=asked.channel,
        group=asked.group,
        allow_tools=tuple(asked.allow_tools),
        disallow_tools=tuple(asked.disallow_tools),
        allow_mentions=asked.allow_mentions,
        capture=asked.capture,
        alert_after=asked.alert_after,
        alerts_channel=asked.alerts_channel,
        pause_on_failure=asked.pause_on_failure,
    )
    active = asked.active
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
async def delete_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    deleted = await webhooks_admin.delete_webhook(
        admin.store, workspace, webhook, actor=caller.actor
    )
    return {"id": deleted.id, "deleted": True}


# --- events ---------------------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/events")
async def list_events(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    return await event_page_json(admin, workspace)


@routes.get("/events/<event_id>")
async def show_event(admin: AdminServices, caller: Caller, event_id: str) -> Answer:
    event, webhook = await webhook_events.find_event(admin.store, event_id)
    return event_json(event, webhook)


@routes.post("/events/<event_id>/replay")
async def replay_event(admin: AdminServices, caller: Caller, event_id: str) -> Answer:
    replay = await read_body(bodies.Replay)
    store = admin.store
    replayed = await webhook_events.replay_event(
        store,
        event_id,
        current_prompt=replay.current_prompt,
        actor=caller.actor,
    )
    admin.notify_events()
    event, webhook = await webhook_events.find_event(store, replayed.id)
    return event_json(event, webhook), 201
