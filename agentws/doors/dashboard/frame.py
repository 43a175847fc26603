"""What every dashboard page shares: its frame, and the notice a change leaves.

:func:`render_page` renders a page with what every page shows (the admin,
the workspaces, the notice); :func:`done` answers a change with a redirect
to the page it came from and a one-time notice (a cookie), so a reload
never posts twice; :func:`changed` does a change and answers it so, saying
what it did or why it was refused.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from quart import Response, redirect, render_template, request

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.domain.models import Workspace
from agentws.workspaces import admin as registry

__all__ = ["changed", "done", "error_text", "find_workspace", "render_page"]

_FLASH = "agentws_flash"

T = TypeVar("T")


def done(target: str, notice: str, *, error: bool = False) -> Response:
    """Redirect to ``target`` with a one-time notice."""
    response = cast(Response, redirect(target))
    value = urllib.parse.quote(("!" if error else "") + notice[:500])
    response.set_cookie(_FLASH, value, max_age=60, httponly=True, samesite="Lax", path="/dashboard")
    return response


async def changed(target: str, change: Awaitable[T], notice: Callable[[T], str]) -> Response:
    """Await ``change`` (a service call) and redirect to ``target`` with ``notice`` of
    its result, or with what was wrong when the service refused it (nothing changed)."""
    try:
        result = await change
    except AgentwsError as exc:
        return done(target, error_text(exc), error=True)
    return done(target, notice(result))


async def render_page(
    admin: AdminServices,
    template: str,
    caller: Caller,
    *,
    status: int | None = None,
    error: str | None = None,
    **context: Any,
) -> Response:
    """Render ``template`` with what every page shows: the admin, the workspaces, the notice.

    ``error`` is a notice of this answer's own (a form shown again with what was
    wrong); ``status`` is then 400 unless given, else 200.
    """
    flash = urllib.parse.unquote(request.cookies.get(_FLASH, ""))
    if error is not None:
        flash = "!" + error
    body = await render_template(
        template,
        caller=caller,
        csrf=caller.session.csrf_token if caller.session else "",
        workspaces=await registry.list_workspaces(admin.store),
        notice=flash.removeprefix("!") if flash else None,
        notice_is_error=flash.startswith("!"),
        **context,
    )
    if status is None:
        status = 200 if error is None else 400
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    if request.cookies.get(_FLASH):
        response.delete_cookie(_FLASH, path="/dashboard")
    return response


async def find_workspace(admin: AdminServices, slug: str) -> Workspace:
    return await admin.store.workspace_by_slug(slug)


def error_text(exc: Exception) -> str:
    """What a notice says of a refused change."""
    return exc.message if isinstance(exc, AgentwsError) else str(exc)
