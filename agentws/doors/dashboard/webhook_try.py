"""The dashboard's capture and "Try a prompt", on a webhook's page.

The webhook's page shows what a capturing draft kept (its samples) with a
button to start or stop capturing, and a "Try a prompt" form: a textarea
filled with the webhook's prompt, a choice of its samples and recent
events, and a button. Trying renders the page of the try: the form again,
as sent, and what the run would do (the message it would post, the model,
each tool call and what became of it). A try posts nothing and changes
nothing but the audit log (:mod:`agentws.agent.dry_run`), so its answer is
a page, not a redirect.
"""

from __future__ import annotations

from typing import Any

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError, UpstreamError, ValidationError
from agentws.domain.dry_runs import DryRun, TryRequest
from agentws.domain.models import Webhook
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events
from agentws.webhooks import samples as webhook_samples

__all__ = ["routes", "try_context"]

routes = RouteTable[AdminServices]()

# Recent events offered to try a prompt on.
_RECENT_EVENTS = 20


async def try_context(
    admin: AdminServices, workspace: str, webhook: Webhook, tried: DryRun | None = None
) -> dict[str, Any]:
    """What the capture and try sections of a webhook's page show: its samples, its
    recent events (what a prompt can be tried on), and a try's result, if any."""
    return {
        "samples": await webhook_samples.list_samples(admin.store, webhook),
        "recent": await webhook_events.list_events(
            admin.store, workspace, webhook=webhook, limit=_RECENT_EVENTS
        ),
        "keep": webhook_samples.KEEP,
        "tried": tried,
        "chosen": "",
        "candidate": None,
    }


@routes.post("/w/<workspace>/webhooks/<webhook>/capture")
@signed_in
async def webhook_capture(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form
    here = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    wanted = form.get("capture") == "on"
    try:
        changed = await webhooks_admin.update_webhook(
            admin.store,
            workspace,
            webhook,
            changes=webhooks_admin.WebhookChanges(capture=wanted),
            allowlist=admin.settings.connector_allowlist,
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return done(here, exc.message, error=True)
    if not changed.capture:
        return done(here + "#capture", "Capture is off: a draft refuses deliveries (403).")
    if changed.active:
        return done(here + "#capture", "Capture is on: it keeps deliveries once it is a draft.")
    return done(here + "#capture", "Capturing: deliveries are kept as samples, never run.")


@routes.post("/w/<workspace>/webhooks/<webhook>/try")
@signed_in
async def webhook_try(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    chosen = form.get("source") or ""
    candidate = form.get("prompt")
    tried = None
    error, status = None, 200
    try:
        kind, _, ref = chosen.partition(":")
        if kind not in ("sample", "event") or not ref:
            raise ValidationError("choose a sample or an event to try the prompt on")
        delivery, source = await webhook_samples.tried_delivery(
            admin.store,
            found,
            sample_id=ref if kind == "sample" else None,
            event_id=ref if kind == "event" else None,
        )
        tried = await admin.try_prompt(
            TryRequest(
                webhook=found,
                delivery=delivery,
                source=source,
                prompt=candidate,
                actor=caller.actor,
            )
        )
    except AgentwsError as exc:
        # The form again, as sent, with what was wrong (the model's failure: 502).
        error, status = error_text(exc), 502 if isinstance(exc, UpstreamError) else 400
    context = await try_context(admin, workspace, found, tried)
    return await render_page(
        admin,
        "webhook_try.html",
        caller,
        status=status,
        error=error,
        workspace=await find_workspace(admin, workspace),
        webhook=found,
        **{**context, "chosen": chosen, "candidate": candidate},
    )
