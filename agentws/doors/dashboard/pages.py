"""The dashboard: server-rendered pages over the service layer the CLI and the API use.

Pages are per workspace (``/dashboard/w/<workspace>/…``) except the
approval queue, which spans workspaces (``/dashboard/approvals``, where
chat messages link), and an event's timeline (``/dashboard/events/<id>``).
Every change is a POST form with the session's CSRF token, answered by a
redirect to the page it came from with a one-time notice (a cookie), so a
reload never posts twice. Failures re-render nothing: the notice says what
was wrong, and nothing changed; but a refused new webhook shows its form
again, filled as it was typed (all but the secret), with what was wrong.

:func:`dashboard_blueprint` builds the blueprint for the service's
:class:`~agentws.admins.access.AdminServices`. Here: signing in and out,
the home page, the error pages and the templates' filters; each area's
pages are in their own module (:mod:`~agentws.doors.dashboard.overview` (the
workspace's home: its charts), :mod:`~agentws.doors.dashboard.webhooks`,
:mod:`~agentws.doors.dashboard.webhook_try` (capture, try a prompt),
:mod:`~agentws.doors.dashboard.deliveries`,
:mod:`~agentws.doors.dashboard.endpoints`, :mod:`~agentws.doors.dashboard.permissions`,
:mod:`~agentws.doors.dashboard.approvals`, :mod:`~agentws.doors.dashboard.events`,
:mod:`~agentws.doors.dashboard.libraries`, :mod:`~agentws.doors.dashboard.channels`,
:mod:`~agentws.doors.dashboard.consent`, :mod:`~agentws.doors.dashboard.connectors`,
:mod:`~agentws.doors.dashboard.connector_page`, :mod:`~agentws.doors.dashboard.audit`,
:mod:`~agentws.doors.dashboard.admins`; groups, workspaces and skills in
:mod:`~agentws.doors.dashboard.groups`, :mod:`~agentws.doors.dashboard.workspaces` and
:mod:`~agentws.doors.dashboard.library_skills`).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, cast

from markupsafe import Markup
from quart import Blueprint, Response, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from agentws.admins.access import AdminServices, Caller, sign_in, sign_out
from agentws.core.errors import NotFoundError, PermissionDeniedError, UnauthorizedError
from agentws.doors.dashboard import (
    admins,
    approvals,
    audit,
    channels,
    connector_authorization,
    connector_page,
    connectors,
    consent,
    deliveries,
    endpoints,
    events,
    groups,
    libraries,
    library_skills,
    overview,
    permissions,
    webhook_operations,
    webhook_rotation,
    webhook_try,
    webhooks,
    workspaces,
)
from agentws.doors.dashboard.capped import capped
from agentws.doors.dashboard.frame import render_page
from agentws.doors.dashboard.markdown import render_markdown
from agentws.doors.dashboard.session import (
    LOGIN_COOKIE,
    check_csrf,
    clear_session_cookie,
    new_login_token,
    secure_headers,
    set_login_cookie,
    set_session_cookie,
    signed_in,
)
from agentws.doors.dashboard.times import ago, ago_text, until
from agentws.doors.dashboard.visible import exact, has_hidden, visible
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

__all__ = ["dashboard_blueprint", "http_error_page", "is_dashboard_path"]

routes = RouteTable[AdminServices]()
#: A sign-in form's whole body: a username, a password and two tokens fit many
#: times over. It is read before anyone is signed in.
LOGIN_BODY_BYTES = 16 * 1024
_AREAS = (
    overview,
    webhooks,
    webhook_rotation,
    webhook_try,
    webhook_operations,
    deliveries,
    endpoints,
    permissions,
    approvals,
    events,
    libraries,
    channels,
    consent,
    workspaces,
    groups,
    library_skills,
    connectors,
    connector_page,
    connector_authorization,
    audit,
    admins,
)


def dashboard_blueprint(admin: AdminServices) -> Blueprint:
    """The dashboard under ``/dashboard``, its pages given ``admin``."""
    blueprint = routes.blueprint(
        "dashboard",
        __name__,
        admin,
        include=(area.routes for area in _AREAS),
        url_prefix="/dashboard",
        template_folder="templates",
        static_folder="static",
    )
    blueprint.after_request(_headers)
    blueprint.register_error_handler(PermissionDeniedError, _forbidden)
    blueprint.register_error_handler(NotFoundError, _not_found)
    blueprint.add_app_template_filter(ago, "ago")
    blueprint.add_app_template_filter(ago_text, "ago_text")
    blueprint.add_app_template_filter(until, "until")
    blueprint.add_app_template_filter(render_markdown, "markdown")
    blueprint.add_app_template_filter(_size, "size")
    blueprint.add_app_template_filter(_pretty_json, "pretty_json")
    blueprint.add_app_template_filter(_url_breaks, "url_breaks")
    # A form field's value sent back as stored (see agentws.doors.dashboard.visible).
    blueprint.add_app_template_filter(exact, "exact")
    blueprint.add_app_template_test(has_hidden, "has_hidden")
    return blueprint


async def _headers(response: Response) -> Response:
    return secure_headers(response)


async def _forbidden(error: PermissionDeniedError) -> tuple[str, int]:
    page = await render_template("error.html", title="Refused", message=error.message, caller=None)
    return page, 403


async def _not_found(error: NotFoundError) -> tuple[str, int]:
    page = await render_template(
        "error.html", title="Not found", message=error.message, caller=None
    )
    return page, 404


# What the dashboard's error page says for an HTTP error of its own paths.
_HTTP_ERRORS = {
    404: "There is no such page in the dashboard: check the address, or start again below.",
    405: "This page is not opened that way: follow a link or a button of the dashboard.",
}


def is_dashboard_path(path: str) -> bool:
    """Whether ``path`` is the dashboard's (its errors are pages, not JSON)."""
    return path == "/dashboard" or path.startswith("/dashboard/")


async def http_error_page(error: HTTPException) -> Response:
    """An HTTP error under ``/dashboard`` (no such page, a wrong method) as a page.

    The app answers these before any dashboard handler runs (no route
    matched), so the page gets the dashboard's headers here.
    """
    status = error.code or 500
    message = _HTTP_ERRORS.get(status, error.description or "")
    title = (error.name or "Error").capitalize()
    body = await render_template("error.html", title=title, message=message, caller=None)
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    for name, value in error.get_headers():
        if name.lower() != "content-type":  # e.g. a 405's Allow
            response.headers[name] = value
    return secure_headers(response)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MiB"


# After each slash that ends a part of a URL (not between the two of ``//``).
_URL_PARTS = re.compile(r"(?<=/)(?!/)")


def _url_breaks(url: str) -> Markup:
    """``url`` in parts that each end with a slash, which its lines break between.

    Each part is an inline block (``.url-part`` in app.css): a line breaks
    between parts, not at a hyphen or anywhere inside a name, unless a part
    is wider than the line on its own. Copying copies the URL's text. Its
    hidden characters show escaped, as every value's
    (:func:`~agentws.doors.dashboard.visible.visible`).
    """
    return Markup("").join(
        Markup('<span class="url-part">{}</span>').format(visible(part))
        for part in _URL_PARTS.split(str(url))
    )


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# --- signing in and out -----------------------------------------------------------------------


@routes.get("/login")
async def login(admin: AdminServices) -> Response:
    token = new_login_token()
    body = await render_template(
        "login.html", login_token=token, next=request.args.get("next", ""), error=None, caller=None
    )
    response = Response(body, content_type="text/html; charset=utf-8")
    set_login_cookie(response, admin.settings, token)
    return response


def _safe_next(target: str) -> str:
    # Only a path of this dashboard, never another site; and only printable
    # text: a control character would break the Location header, a backslash
    # is a slash to some browsers.
    path = target.split("?", 1)[0]
    printable = target.isprintable() and not any(c in target for c in " \\")
    if (path == "/dashboard" or path.startswith("/dashboard/")) and "//" not in path and printable:
        return target
    return url_for("dashboard.home")


async def _login_too_large(args: tuple[Any, ...], _: dict[str, Any], __: bool) -> Response:
    admin: AdminServices = args[0]
    return await _login_page(
        admin, f"The sign-in form is larger than {_size(LOGIN_BODY_BYTES)}.", 413, next_path=""
    )


@routes.post("/login")
# Before anyone is signed in: a body a sign-in form never needs is refused unread.
@capped(LOGIN_BODY_BYTES, _login_too_large)
async def login_post(admin: AdminServices) -> Response:
    form = await request.form
    check_csrf(request.cookies.get(LOGIN_COOKIE, ""), form.get("login_token"))
    username = (form.get("username") or "").strip()[:64]
    keys = [f"user:{username.lower()}", f"ip:{request.remote_addr}"]
    throttle = admin.login_throttle
    now = time.monotonic()
    wait = throttle.retry_after(keys, now)
    if wait > 0:
        return await _login_again(
            admin, f"Too many failed sign-ins: try again in {int(wait) + 1} s.", 429, int(wait) + 1
        )
    try:
        _, _, secret = await sign_in(
            admin.store,
            username,
            form.get("password") or "",
            ttl_s=admin.settings.admin_session_s,
            source=str(request.remote_addr),
        )
    except UnauthorizedError:
        throttle.failed(keys, now)
        return await _login_again(admin, "Wrong username or password.", 401)
    throttle.succeeded(keys)
    response = cast(Response, redirect(_safe_next(form.get("next") or "")))
    set_session_cookie(response, admin.settings, secret)
    response.delete_cookie(LOGIN_COOKIE, path="/dashboard/login")
    return response


async def _login_again(
    admin: AdminServices, error: str, status: int, retry_after: int | None = None
) -> Response:
    form = await request.form
    return await _login_page(
        admin, error, status, next_path=form.get("next", ""), retry_after=retry_after
    )


async def _login_page(
    admin: AdminServices, error: str, status: int, *, next_path: str, retry_after: int | None = None
) -> Response:
    token = new_login_token()
    body = await render_template(
        "login.html", login_token=token, next=next_path, error=error, caller=None
    )
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    set_login_cookie(response, admin.settings, token)
    return response


@routes.post("/logout")
@signed_in
async def logout(admin: AdminServices, caller: Caller) -> Response:
    if caller.session is not None:
        await sign_out(admin.store, caller.admin, caller.session)
    response = cast(Response, redirect(url_for("dashboard.login")))
    clear_session_cookie(response)
    return response


@routes.get("/")
@signed_in
async def home(admin: AdminServices, caller: Caller) -> Response:
    workspaces = await registry.list_workspaces(admin.store)
    if not workspaces:
        return await render_page(admin, "empty.html", caller)
    wanted = request.args.get("workspace")
    slug = wanted if wanted in {w.slug for w in workspaces} else workspaces[0].slug
    return cast(Response, redirect(url_for("dashboard.overview", workspace=slug)))
