"""The dashboard's admins and admin API tokens: list, create (secrets shown once), delete, revoke.

The same service functions as ``agentws admin`` (:mod:`agentws.admins.accounts`,
:mod:`agentws.admins.access`), so the same rules and audit entries apply,
with the signed-in admin as the actor: a typed password has 12 characters
or more, a generated one is shown once; the last admin is never deleted;
an admin API token is shown once and kept as its SHA-256 only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from quart import Response, request, url_for

from agentws.admins.access import (
    AdminServices,
    Caller,
    create_admin_token,
    list_admin_tokens,
    revoke_admin_token,
)
from agentws.admins.accounts import create_admin, delete_admin
from agentws.core.errors import AgentwsError
from agentws.domain.models import Admin
from agentws.doors.dashboard.frame import changed, done, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

T = TypeVar("T")


async def _page(admin: AdminServices, template: str, caller: Caller, **context: Any) -> Response:
    # Admins are not a workspace's: the menu's links point at the first workspace.
    workspaces = await registry.list_workspaces(admin.store)
    first = workspaces[0] if workspaces else None
    return await render_page(
        admin, template, caller, workspace=first, spans_workspaces=True, **context
    )


async def _shown_once(
    admin: AdminServices,
    caller: Caller,
    template: str,
    making: Awaitable[T],
    shown: Callable[[T], dict[str, Any]],
) -> Response:
    """Await ``making`` (a service call creating a secret's holder) and show what it
    made on ``template``, this once; back to the Admins page with why if refused."""
    try:
        made = await making
    except AgentwsError as exc:
        return done(url_for("dashboard.admins"), exc.message, error=True)
    return await _page(admin, template, caller, **shown(made))


@routes.get("/admins")
@signed_in
async def admins(admin: AdminServices, caller: Caller) -> Response:
    everyone = await admin.store.select(Admin)
    tokens = await list_admin_tokens(admin.store)
    return await _page(
        admin,
        "admins.html",
        caller,
        admins=everyone,
        tokens=tokens,
        token_counts={a.id: sum(1 for t, _ in tokens if t.admin_id == a.id) for a in everyone},
    )


@routes.post("/admins")
@signed_in
async def admin_create(admin: AdminServices, caller: Caller) -> Response:
    form = await request.form
    typed = form.get("password") or None
    return await _shown_once(
        admin,
        caller,
        "admin_created.html",
        create_admin(admin.store, form.get("username") or "", password=typed, actor=caller.actor),
        # A typed password is the admin's own to know: only a generated one is shown.
        lambda made: {"created": made[0], "password": made[1] if typed is None else None},
    )


@routes.post("/admins/<username>/delete")
@signed_in
async def admin_delete(admin: AdminServices, caller: Caller, username: str) -> Response:
    here = url_for("dashboard.admins")
    try:
        deleted = await delete_admin(admin.store, username, actor=caller.actor)
    except AgentwsError as exc:
        return done(here, exc.message, error=True)
    if deleted.id == caller.admin.id:
        # Its session went with it: the next page asks to sign in.
        return done(url_for("dashboard.login"), f"Deleted admin {deleted.username}.")
    return done(here, f"Deleted admin {deleted.username}, its sessions and admin API tokens.")


@routes.post("/admins/tokens")
@signed_in
async def admin_token_create(admin: AdminServices, caller: Caller) -> Response:
    form = await request.form
    owner = form.get("admin") or ""
    return await _shown_once(
        admin,
        caller,
        "admin_token_created.html",
        create_admin_token(admin.store, owner, form.get("name") or "", actor=caller.actor),
        lambda made: {
            "token": made[0],
            "owner": owner,
            "secret": made[1],
            "api": admin.settings.public_base_url.rstrip("/") + "/api/v1",
        },
    )


@routes.post("/admins/tokens/<token_id>/revoke")
@signed_in
async def admin_token_revoke(admin: AdminServices, caller: Caller, token_id: str) -> Response:
    return await changed(
        url_for("dashboard.admins"),
        revoke_admin_token(admin.store, token_id, actor=caller.actor),
        lambda token: f"Revoked admin API token {token.name}: it is refused from now on.",
    )
