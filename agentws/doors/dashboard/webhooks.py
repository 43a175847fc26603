"""The dashboard's Automations → Webhooks pages: list, create, show, edit, (de)activate, delete.

A refused new webhook shows its form again, filled as it was typed (all
but the secret), with what was wrong; a made one shows its URL this once.
"""

from __future__ import annotations

from typing import Any

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.domain.models import Group, VerificationScheme
from agentws.domain.signatures import SHARED_SECRET_HEADER
from agentws.domain.typed_numbers import whole_number
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.named_items import FormRefused, declare_listing
from agentws.doors.dashboard.session import signed_in
from agentws.doors.dashboard.webhook_operations import operations_context
from agentws.doors.dashboard.webhook_rotation import rotation_context
from agentws.doors.dashboard.webhook_try import try_context
from agentws.http.blueprints import RouteTable
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


async def _webhooks_page(
    admin: AdminServices,
    caller: Caller,
    workspace: str,
    *,
    typed: Any = None,
    error: str | None = None,
) -> Response:
    """The webhooks listing; with ``typed``, its form filled with what was posted."""
    store = admin.store
    ws = await find_workspace(admin, workspace)
    hooks = await webhooks_admin.list_webhooks(store, workspace)
    groups = await registry.list_groups(store, workspace)
    group_names = {g.id: g.slug for g in groups}
    recent = await webhook_events.list_events(store, workspace, limit=200)
    latest: dict[str, Any] = {}
    for event in recent:
        latest.setdefault(event.webhook_id, event)
    return await render_page(
        admin,
        "webhooks.html",
        caller,
        workspace=ws,
        webhooks=hooks,
        group_names=group_names,
        groups=groups,
        latest=latest,
        schemes=[s.value for s in VerificationScheme],
        issued_url=None,
        typed=typed or {},
        error=error,
    )


@declare_listing(routes, "webhooks", _webhooks_page)
async def webhook_create(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    form = await request.form
    try:
        options = webhooks_admin.WebhookOptions(
            group=form.get("group") or None,
            active=form.get("state", "active") == "active",
            capture=form.get("state") == "capture",
            verification=VerificationScheme(form.get("verification") or "none"),
            secret=form.get("secret") or None,
            rate_per_min=_int(
                form.get("rate_per_min"), 60, "rate per minute", webhooks_admin.MAX_RATE_PER_MIN
            ),
            concurrency=_int(
                form.get("concurrency"), 4, "concurrency", webhooks_admin.MAX_CONCURRENCY
            ),
            allow_mentions=form.get("mentions") == "allowed",
        )
        issued = await webhooks_admin.create_webhook(
            admin.store,
            admin.settings,
            admin.keys,
            workspace,
            name=form.get("name") or "",
            channel=form.get("channel") or "",
            prompt=form.get("prompt") or "",
            options=options,
            actor=caller.actor,
        )
    except (AgentwsError, ValueError) as exc:
        # The form again, as typed (but the secret), with what was wrong: nothing
        # was made, and nothing has to be typed twice.
        typed = {k: v for k, v in form.items() if k not in ("csrf", "secret")}
        raise FormRefused(typed, error_text(exc)) from exc
    # The URL is shown this once: rendered here, never stored.
    return await render_page(
        admin,
        "webhook_created.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        webhook=issued.webhook,
        url=issued.url,
        try_it=_try_it(issued.url, issued.webhook.verification),
    )


def _try_it(url: str, scheme: VerificationScheme) -> str:
    """A curl command that delivers a test event to ``url``; the secret left to the shell."""
    command = "curl -X POST -H 'Content-Type: application/json'"
    if scheme is VerificationScheme.SHARED_SECRET:
        header = "-".join(part.capitalize() for part in SHARED_SECRET_HEADER.split("-"))
        command += f' -H "{header}: $WEBHOOK_SECRET"'
    return command + f" -d '{{\"event\": \"test\"}}' '{url}'"


def _int(text: str | None, default: int, what: str, high: int) -> int:
    return whole_number(text, name=what, high=high) if text else default


@routes.get("/w/<workspace>/webhooks/<webhook>")
@signed_in
async def webhook_show(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    store = admin.store
    found = await webhooks_admin.find_webhook(store, workspace, webhook)
    events = await webhook_events.list_events(store, workspace, webhook=found, limit=50)
    group = await store.find(Group, id=found.group_id) if found.group_id else None
    return await render_page(
        admin,
        "webhook.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        webhook=found,
        group=group,
        events=events,
        **await rotation_context(store, found),
        **await try_context(admin, workspace, found),
        **await operations_context(store, found),
    )


@routes.post("/w/<workspace>/webhooks/<webhook>/edit")
@signed_in
async def webhook_edit(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form
    store = admin.store
    here = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    try:
        current = await webhooks_admin.find_webhook(store, workspace, webhook)
        wanted = {n.strip() for n in (form.get("allowed_tools") or "").split(",") if n.strip()}
        changes = webhooks_admin.WebhookChanges(
            prompt=form.get("prompt"),
            channel=form.get("channel"),
            allow_tools=tuple(sorted(wanted - set(current.allowed_tools))),
            disallow_tools=tuple(sorted(set(current.allowed_tools) - wanted)),
            allow_mentions=None if "mentions" not in form else form["mentions"] == "allowed",
            alert_after=_int(
                form.get("alert_after"),
                current.alert_after,
                "alert after",
                webhooks_admin.MAX_ALERT_AFTER,
            )
            if "alert_after" in form
            else None,
            alerts_channel=form.get("alerts_channel"),
            pause_on_failure=None if "on_failure" not in form else form["on_failure"] == "pause",
        )
        await webhooks_admin.update_webhook(
            store,
            workspace,
            current.id,
            changes=changes,
            allowlist=admin.settings.connector_allowlist,
            actor=caller.actor,
        )
    except (AgentwsError, ValueError) as exc:
        return done(here, error_text(exc), error=True)
    return done(here, "Saved.")


@routes.post("/w/<workspace>/webhooks/<webhook>/<action>")
@signed_in
async def webhook_action(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str, action: str
) -> Response:
    store = admin.store
    listing = url_for("dashboard.webhooks", workspace=workspace)
    try:
        if action in ("activate", "deactivate"):
            changed = await webhooks_admin.set_active(
                store, workspace, webhook, active=action == "activate", actor=caller.actor
            )
            state = "active" if changed.active else "a draft"
            # Activated from its own page (a paused webhook's): back there.
            target = request.args.get("back") == "page" and url_for(
                "dashboard.webhook_show", workspace=workspace, webhook=changed.name
            )
            return done(target or listing, f"Webhook {changed.name!r} is {state}.")
        if action == "delete":
            deleted = await webhooks_admin.delete_webhook(
                store, workspace, webhook, actor=caller.actor
            )
            return done(listing, f"Deleted webhook {deleted.name!r}: its URL answers 404 now.")
    except AgentwsError as exc:
        return done(listing, exc.message, error=True)
    return done(listing, f"unknown action {action!r}", error=True)
