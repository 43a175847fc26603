"""The admin API's webhook rotation: a new URL or secret with a grace period, its progress.

``POST .../webhooks/<webhook>/rotate`` answers the new URL once;
``rotate-secret`` takes the new signing secret; ``end-grace`` stops the
previous URL and/or secret at once; ``GET .../rotation`` says how far the
senders have moved (:mod:`agentws.webhooks.rotation`).
"""

from __future__ import annotations

from datetime import timedelta

from agentws.admins.access import AdminServices, Caller
from agentws.doors.api.calls import Answer, Endpoints, read_body
from agentws.doors.api.shapes.bodies import EndGrace, RotateSecret, RotateUrl
from agentws.doors.api.webhooks import webhook_view
from agentws.doors.views import rotation_json
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import rotation

__all__ = ["routes"]

routes = Endpoints()


def _grace(text: str | None) -> timedelta:
    return rotation.DEFAULT_GRACE if text is None else rotation.parse_grace(text)


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/rotate")
async def rotate_url(admin: AdminServices, caller: Caller, workspace: str, webhook: str) -> Answer:
    grace = _grace((await read_body(RotateUrl)).grace)
    issued = await rotation.rotate_url(
        admin.store, admin.settings, workspace, webhook, grace=grace, actor=caller.actor
    )
    return {**await webhook_view(admin.store, issued.webhook), "url": issued.url}


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/rotate-secret")
async def rotate_secret(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    asked = await read_body(RotateSecret)
    rotated = await rotation.rotate_secret(
        admin.store,
        admin.keys,
        workspace,
        webhook,
        secret=asked.secret,
        grace=_grace(asked.grace),
        actor=caller.actor,
    )
    return await webhook_view(admin.store, rotated)


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/end-grace")
async def end_grace(admin: AdminServices, caller: Caller, workspace: str, webhook: str) -> Answer:
    which = (await read_body(EndGrace)).which
    ended = await rotation.end_grace(
        admin.store, workspace, webhook, which=which, actor=caller.actor
    )
    return await webhook_view(admin.store, ended)


@routes.get("/workspaces/<workspace>/webhooks/<webhook>/rotation")
async def rotation_status(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    return rotation_json(await rotation.rotation_status(admin.store, found))
