"""The dashboard's webhook rotation: a new URL (shown once) or secret, and ending a grace.

The webhook's page shows where a rotation stands (:func:`rotation_context`);
these handlers do what its forms ask (:mod:`agentws.webhooks.rotation`).
"""

from __future__ import annotations

from typing import Any, Literal

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.domain.models import Webhook
from agentws.doors.dashboard.frame import changed, done, find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.store.sql_rotation import RotationStore
from agentws.webhooks import rotation

__all__ = ["GRACE_CHOICES", "rotation_context", "routes"]

routes = RouteTable[AdminServices]()

#: The grace periods the forms offer: value, label (the first is the default).
GRACE_CHOICES = (
    ("24h", "24 hours"),
    ("1h", "1 hour"),
    ("7d", "7 days"),
    ("30d", "30 days"),
    ("0", "none: the old one stops at once"),
)


async def rotation_context(store: RotationStore, webhook: Webhook) -> dict[str, Any]:
    """What the webhook's page shows of its rotations."""
    return {
        "rotation": await rotation.rotation_status(store, webhook),
        "grace_choices": GRACE_CHOICES,
    }


def _grace(form: Any) -> Any:
    return rotation.parse_grace(form.get("grace") or "24h")


@routes.post("/w/<workspace>/webhooks/<webhook>/rotate")
@signed_in
async def webhook_rotate(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form
    here = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    try:
        issued = await rotation.rotate_url(
            admin.store, admin.settings, workspace, webhook, grace=_grace(form), actor=caller.actor
        )
    except AgentwsError as exc:
        return done(here, exc.message, error=True)
    # The URL is shown this once: rendered here, never stored.
    return await render_page(
        admin,
        "webhook_rotated.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        webhook=issued.webhook,
        url=issued.url,
    )


@routes.post("/w/<workspace>/webhooks/<webhook>/rotate-secret")
@signed_in
async def webhook_rotate_secret(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form

    async def rotate() -> Webhook:
        # The grace is read here, so a bad one is refused as the rotation would be.
        return await rotation.rotate_secret(
            admin.store,
            admin.keys,
            workspace,
            webhook,
            secret=(form.get("secret") or "").strip(),
            grace=_grace(form),
            actor=caller.actor,
        )

    here = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    return await changed(here, rotate(), _new_secret_text)


def _new_secret_text(rotated: Webhook) -> str:
    if rotated.previous_secret_until is not None:
        until = rotated.previous_secret_until.strftime("%Y-%m-%d %H:%M UTC")
        old = f"the previous one still verifies until {until}"
    else:
        old = "the previous one verifies nothing from now on"
    return f"Webhook {rotated.name!r} verifies with its new secret; {old}."


@routes.post("/w/<workspace>/webhooks/<webhook>/end-grace")
@signed_in
async def webhook_end_grace(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form
    asked = form.get("which") or "both"
    here = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    choices: dict[str, Literal["url", "secret", "both"]] = {
        "url": "url",
        "secret": "secret",
        "both": "both",
    }
    which = choices.get(asked)
    if which is None:
        return done(here, f"nothing to end: {asked!r}", error=True)
    try:
        await rotation.end_grace(admin.store, workspace, webhook, which=which, actor=caller.actor)
    except AgentwsError as exc:
        return done(here, exc.message, error=True)
    what = {"url": "The previous URL answers 404", "secret": "The previous secret verifies nothing"}
    return done(here, what.get(which, "The previous URL and secret stopped working") + " now.")
