"""The dashboard: server-rendered pages over the service layer the CLI and the API use.

Pages are per workspace (``/dashboard/w/<workspace>/…``) except the
approval queue, which spans workspaces (``/dashboard/approvals``, where
chat messages link), and an event's timeline (``/dashboard/events/<id>``).
Every change is a POST form with the session's CSRF token, answered by a
redirect to the page it came from with a one-time notice (a cookie), so a
reload never posts twice. Failures re-render nothing: the notice says what
was wrong, and nothing changed; but a refused new webhook shows its form
again, filled as it was typed (all but the secret), with what was wrong.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from datetime import datetime
from typing import Any, cast

import trio
from quart import Blueprint, Response, current_app, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from agentws import libraries, registry
from agentws.admin_access import AdminServices, Caller, sign_in, sign_out
from agentws.approvals import decisions
from agentws.domain.approval_lists import DECIDED, MAX_PAGE, ApprovalPage
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    Capability,
    ChatMessage,
    DocumentPolicy,
    EventStatus,
    Group,
    McpToken,
    Permission,
    VerificationScheme,
    Webhook,
    Workspace,
)
from agentws.domain.signatures import SHARED_SECRET_HEADER
from agentws.errors import (
    AgentwsError,
    NotFoundError,
    PermissionDeniedError,
    UnauthorizedError,
    ValidationError,
)
from agentws.tools import admin as tools_admin
from agentws.tools.approval_queue import (
    count_approvals,
    current_status,
    find_approval,
    list_approvals,
)
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events

from .session import (
    LOGIN_COOKIE,
    check_csrf,
    clear_session_cookie,
    login_throttle,
    new_login_token,
    secure_headers,
    set_login_cookie,
    set_session_cookie,
    signed_in,
)
from .visible import exact, has_hidden

__all__ = ["dashboard_blueprint", "http_error_page", "is_dashboard_path"]

dashboard_blueprint = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
    static_folder="static",
)
_FLASH = "agentws_flash"
_MAX_UPLOAD_BYTES = 5 * 1024 * 1024
# Approving (or retrying) waits this long for the service to run the call before the
# page comes back; it shows "approved" or "running" if the call has not finished.
_OUTCOME_WAIT_S = 10.0


# Rows of each list on the approvals page (``?limit=`` up to MAX_PAGE).
_APPROVALS_PAGE = 50


def _admin() -> AdminServices:
    # Until the blueprints take it through a constructor.
    return cast(AdminServices, current_app.config["AGENTWS_ADMIN"])


@dashboard_blueprint.after_request
async def _headers(response: Response) -> Response:
    return secure_headers(response)


@dashboard_blueprint.errorhandler(PermissionDeniedError)
async def _forbidden(error: PermissionDeniedError) -> tuple[str, int]:
    page = await render_template("error.html", title="Refused", message=error.message, caller=None)
    return page, 403


@dashboard_blueprint.errorhandler(NotFoundError)
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


def _done(target: str, notice: str, *, error: bool = False) -> Response:
    """Redirect to ``target`` with a one-time notice."""
    response = cast(Response, redirect(target))
    value = urllib.parse.quote(("!" if error else "") + notice[:500])
    response.set_cookie(_FLASH, value, max_age=60, httponly=True, samesite="Lax", path="/dashboard")
    return response


async def _page(
    template: str, caller: Caller, *, status: int = 200, error: str | None = None, **context: Any
) -> Response:
    """Render ``template`` with what every page shows: the admin, the workspaces, the notice.

    ``error`` is a notice of this answer's own (a form shown again with what was wrong).
    """
    store = _admin().store
    flash = urllib.parse.unquote(request.cookies.get(_FLASH, ""))
    if error is not None:
        flash = "!" + error
    body = await render_template(
        template,
        caller=caller,
        csrf=caller.session.csrf_token if caller.session else "",
        workspaces=await registry.list_workspaces(store),
        notice=flash.removeprefix("!") if flash else None,
        notice_is_error=flash.startswith("!"),
        **context,
    )
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    if request.cookies.get(_FLASH):
        response.delete_cookie(_FLASH, path="/dashboard")
    return response


def _ago(when: datetime | None) -> str:
    if when is None:
        return "never"
    seconds = int((datetime.now(when.tzinfo) - when).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{max(0, seconds)} s ago"


@dashboard_blueprint.app_template_filter("ago")
def _ago_filter(when: datetime | None) -> str:
    return _ago(when)


# A form field's value sent back as stored (see agentws.dashboard.visible).
dashboard_blueprint.add_app_template_filter(exact, "exact")
dashboard_blueprint.add_app_template_test(has_hidden, "has_hidden")


@dashboard_blueprint.app_template_filter("size")
def _size_filter(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MiB"


@dashboard_blueprint.app_template_filter("pretty_json")
def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# --- signing in and out -----------------------------------------------------------------------


@dashboard_blueprint.get("/login")
async def login() -> Response:
    token = new_login_token()
    body = await render_template(
        "login.html", login_token=token, next=request.args.get("next", ""), error=None, caller=None
    )
    response = Response(body, content_type="text/html; charset=utf-8")
    set_login_cookie(response, token)
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


@dashboard_blueprint.post("/login")
async def login_post() -> Response:
    form = await request.form
    check_csrf(request.cookies.get(LOGIN_COOKIE, ""), form.get("login_token"))
    username = (form.get("username") or "").strip()[:64]
    keys = [f"user:{username.lower()}", f"ip:{request.remote_addr}"]
    throttle = login_throttle()
    now = time.monotonic()
    wait = throttle.retry_after(keys, now)
    if wait > 0:
        return await _login_again(
            f"Too many failed sign-ins: try again in {int(wait) + 1} s.", 429, int(wait) + 1
        )
    service = _admin()
    try:
        _, _, secret = await sign_in(
            service.store,
            username,
            form.get("password") or "",
            ttl_s=service.settings.admin_session_s,
            source=str(request.remote_addr),
        )
    except UnauthorizedError:
        throttle.failed(keys, now)
        return await _login_again("Wrong username or password.", 401)
    throttle.succeeded(keys)
    response = cast(Response, redirect(_safe_next(form.get("next") or "")))
    set_session_cookie(response, secret, service.settings.admin_session_s)
    response.delete_cookie(LOGIN_COOKIE, path="/dashboard/login")
    return response


async def _login_again(error: str, status: int, retry_after: int | None = None) -> Response:
    token = new_login_token()
    form = await request.form
    body = await render_template(
        "login.html", login_token=token, next=form.get("next", ""), error=error, caller=None
    )
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    set_login_cookie(response, token)
    return response


@dashboard_blueprint.post("/logout")
@signed_in
async def logout(caller: Caller) -> Response:
    if caller.session is not None:
        await sign_out(_admin().store, caller.admin, caller.session)
    response = cast(Response, redirect(url_for("dashboard.login")))
    clear_session_cookie(response)
    return response


@dashboard_blueprint.get("/")
@signed_in
async def home(caller: Caller) -> Response:
    workspaces = await registry.list_workspaces(_admin().store)
    if not workspaces:
        return await _page("empty.html", caller)
    wanted = request.args.get("workspace")
    slug = wanted if wanted in {w.slug for w in workspaces} else workspaces[0].slug
    return cast(Response, redirect(url_for("dashboard.webhooks", workspace=slug)))


# --- Automations → Webhooks ---------------------------------------------------------------------


async def _workspace(slug: str) -> Workspace:
    return await _admin().store.workspace_by_slug(slug)


@dashboard_blueprint.get("/w/<workspace>/webhooks")
@signed_in
async def webhooks(caller: Caller, workspace: str) -> Response:
    return await _webhooks_page(caller, workspace)


async def _webhooks_page(
    caller: Caller, workspace: str, *, typed: Any = None, error: str | None = None
) -> Response:
    """The webhooks listing; with ``typed``, its form filled with what was posted."""
    store = _admin().store
    ws = await _workspace(workspace)
    hooks = await webhooks_admin.list_webhooks(store, workspace)
    groups = await registry.list_groups(store, workspace)
    group_names = {g.id: g.slug for g in groups}
    recent = await webhook_events.list_events(store, workspace, limit=200)
    latest: dict[str, Any] = {}
    for event in recent:
        latest.setdefault(event.webhook_id, event)
    return await _page(
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
        status=400 if error else 200,
        error=error,
    )


@dashboard_blueprint.post("/w/<workspace>/webhooks")
@signed_in
async def webhook_create(caller: Caller, workspace: str) -> Response:
    form = await request.form
    try:
        options = webhooks_admin.WebhookOptions(
            group=form.get("group") or None,
            active=form.get("state", "active") == "active",
            verification=VerificationScheme(form.get("verification") or "none"),
            secret=form.get("secret") or None,
            rate_per_min=_int(form.get("rate_per_min"), 60, "rate per minute"),
            concurrency=_int(form.get("concurrency"), 4, "concurrency"),
            allow_mentions=form.get("mentions") == "allowed",
        )
        service = _admin()
        issued = await webhooks_admin.create_webhook(
            service.store,
            service.settings,
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
        return await _webhooks_page(caller, workspace, typed=typed, error=_message(exc))
    # The URL is shown this once: rendered here, never stored.
    return await _page(
        "webhook_created.html",
        caller,
        workspace=await _workspace(workspace),
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


def _int(text: str | None, default: int, what: str) -> int:
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number") from None


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, AgentwsError) else str(exc)


@dashboard_blueprint.get("/w/<workspace>/webhooks/<webhook>")
@signed_in
async def webhook_show(caller: Caller, workspace: str, webhook: str) -> Response:
    store = _admin().store
    found = await webhooks_admin.find_webhook(store, workspace, webhook)
    events = await webhook_events.list_events(store, workspace, webhook=found, limit=50)
    group = await store.find(Group, id=found.group_id) if found.group_id else None
    return await _page(
        "webhook.html",
        caller,
        workspace=await _workspace(workspace),
        webhook=found,
        group=group,
        events=events,
    )


@dashboard_blueprint.post("/w/<workspace>/webhooks/<webhook>/edit")
@signed_in
async def webhook_edit(caller: Caller, workspace: str, webhook: str) -> Response:
    form = await request.form
    store = _admin().store
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
        )
        await webhooks_admin.update_webhook(
            store,
            workspace,
            current.id,
            changes=changes,
            allowlist=_admin().settings.connector_allowlist,
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return _done(here, exc.message, error=True)
    return _done(here, "Saved.")


@dashboard_blueprint.post("/w/<workspace>/webhooks/<webhook>/<action>")
@signed_in
async def webhook_action(caller: Caller, workspace: str, webhook: str, action: str) -> Response:
    store = _admin().store
    listing = url_for("dashboard.webhooks", workspace=workspace)
    try:
        if action in ("activate", "deactivate"):
            changed = await webhooks_admin.set_active(
                store, workspace, webhook, active=action == "activate", actor=caller.actor
            )
            state = "active" if changed.active else "a draft"
            return _done(listing, f"Webhook {changed.name!r} is {state}.")
        if action == "delete":
            deleted = await webhooks_admin.delete_webhook(
                store, workspace, webhook, actor=caller.actor
            )
            return _done(listing, f"Deleted webhook {deleted.name!r}: its URL answers 404 now.")
    except AgentwsError as exc:
        return _done(listing, exc.message, error=True)
    return _done(listing, f"unknown action {action!r}", error=True)


# --- Connect → MCP Endpoints --------------------------------------------------------------------


@dashboard_blueprint.get("/w/<workspace>/endpoints")
@signed_in
async def endpoints(caller: Caller, workspace: str) -> Response:
    store = _admin().store
    base = _admin().settings.public_base_url
    groups = []
    for group in await registry.list_groups(store, workspace):
        url = registry.endpoint_url(base, workspace, group.slug)
        tokens = await registry.list_tokens(store, workspace, group.slug)
        snippets = _snippets(url, f"{workspace}-{group.slug}")
        groups.append({"group": group, "url": url, "tokens": tokens, "snippets": snippets})
    return await _page(
        "endpoints.html",
        caller,
        workspace=await _workspace(workspace),
        groups=groups,
        scopes=[c.value for c in Capability],
        issued=None,
    )


def _snippets(url: str, name: str) -> dict[str, str]:
    """How each client connects (as docs/mcp.md explains them), the token left out."""
    bearer = "Authorization: Bearer ${AGENTWS_TOKEN}"
    claude = {
        "mcpServers": {
            name: {
                "command": "npx",
                "args": ["-y", "mcp-remote", url, "--header", bearer],
                "env": {"AGENTWS_TOKEN": "agws_…"},
            }
        }
    }
    cursor_headers = {"Authorization": "Bearer ${env:AGENTWS_TOKEN}"}
    cursor = {"mcpServers": {name: {"url": url, "headers": cursor_headers}}}
    inspector = (
        "npx @modelcontextprotocol/inspector --transport http \\\n"
        f'  --server-url "{url}" --header "Authorization: Bearer $AGENTWS_TOKEN"'
    )
    return {
        "Claude Desktop (claude_desktop_config.json, through mcp-remote)": json.dumps(
            claude, indent=2
        ),
        "Cursor (.cursor/mcp.json)": json.dumps(cursor, indent=2),
        "MCP Inspector": inspector,
    }


@dashboard_blueprint.post("/w/<workspace>/endpoints/<group>/tokens")
@signed_in
async def token_create(caller: Caller, workspace: str, group: str) -> Response:
    form = await request.form
    here = url_for("dashboard.endpoints", workspace=workspace)
    try:
        issued = await registry.create_token(
            _admin().store,
            workspace,
            group,
            name=form.get("name") or "",
            scope=Capability(form.get("scope") or "write"),
            actor=caller.actor,
        )
    except (AgentwsError, ValueError) as exc:
        return _done(here, _message(exc), error=True)
    return await _page(
        "token_created.html",
        caller,
        workspace=await _workspace(workspace),
        token=issued.token,
        secret=issued.secret,
        group=group,
        url=registry.endpoint_url(_admin().settings.public_base_url, workspace, group),
    )


@dashboard_blueprint.post("/w/<workspace>/endpoints/<group>/tokens/<token>/revoke")
@signed_in
async def token_revoke(caller: Caller, workspace: str, group: str, token: str) -> Response:
    here = url_for("dashboard.endpoints", workspace=workspace)
    try:
        revoked = await registry.revoke_token(
            _admin().store, workspace, group, token, actor=caller.actor
        )
    except AgentwsError as exc:
        return _done(here, exc.message, error=True)
    return _done(here, f"Revoked token {revoked.name!r}: its sessions are closing now.")


# --- Permissions ------------------------------------------------------------------------------


@dashboard_blueprint.get("/w/<workspace>/permissions")
@signed_in
async def permissions(caller: Caller, workspace: str) -> Response:
    store = _admin().store
    groups = await registry.list_groups(store, workspace)
    chosen = request.args.get("group") or (groups[0].slug if groups else None)
    rows = await tools_admin.group_tool_list(store, workspace, chosen) if chosen else []
    return await _page(
        "permissions.html",
        caller,
        workspace=await _workspace(workspace),
        groups=groups,
        chosen=chosen,
        rows=rows,
        capabilities=[c.value for c in Capability],
        permissions=[p.value for p in Permission],
    )


@dashboard_blueprint.post("/w/<workspace>/permissions")
@signed_in
async def permission_change(caller: Caller, workspace: str) -> Response:
    form = await request.form
    group = form.get("group") or None
    tool = form.get("tool") or ""
    here = url_for("dashboard.permissions", workspace=workspace, group=group or "")
    store = _admin().store
    try:
        if form.get("label") is not None:
            label = form.get("label") or None
            await tools_admin.set_label(
                store, workspace, tool, Capability(label) if label else None, actor=caller.actor
            )
            return _done(here, f"{tool} is labeled {label or 'unlabeled (write)'}.")
        permission = form.get("permission") or ""
        scope = group if form.get("scope") == "group" else None
        if permission == "default":
            await tools_admin.clear_permission(
                store, workspace, tool, group_slug=scope, actor=caller.actor
            )
            return _done(here, f"{tool} follows its capability's default again.")
        await tools_admin.set_permission(
            store, workspace, tool, Permission(permission), group_slug=scope, actor=caller.actor
        )
    except (AgentwsError, ValueError) as exc:
        return _done(here, _message(exc), error=True)
    where = f"group {scope}" if scope else "workspace"
    return _done(here, f"{tool}: {permission} ({where}).")


# --- Approvals --------------------------------------------------------------------------------


def _page_size() -> int:
    text = request.args.get("limit", "")
    return min(int(text), MAX_PAGE) if text.isdigit() and int(text) > 0 else _APPROVALS_PAGE


async def _approval_list(cursor_arg: str, **query: Any) -> ApprovalPage:
    """A page of a list of approvals; a cursor that is not one a page gave starts at the top."""
    store = _admin().store
    try:
        return await list_approvals(store, cursor=request.args.get(cursor_arg) or None, **query)
    except ValidationError:
        return await list_approvals(store, **query)


@dashboard_blueprint.get("/approvals")
@signed_in
async def approvals(caller: Caller) -> Response:
    store = _admin().store
    # The queue spans workspaces; the one named (else the first) is where the menu points.
    workspaces = await registry.list_workspaces(store)
    wanted = request.args.get("workspace")
    workspace = next((w for w in workspaces if w.slug == wanted), None)
    if workspace is None and workspaces:
        workspace = workspaces[0]
    waiting = frozenset({ApprovalStatus.PENDING})
    size = _page_size()
    pending = await _approval_list("cursor", workspace_slug=None, statuses=waiting, limit=size)
    history = await _approval_list(
        "history", workspace_slug=None, statuses=DECIDED, limit=size, newest_first=True
    )
    return await _page(
        "approvals.html",
        caller,
        pending=pending,
        waiting=await count_approvals(store, workspace_slug=None, statuses=waiting),
        history=history,
        workspace=workspace,
        cursor=request.args.get("cursor") or None,
        history_cursor=request.args.get("history") or None,
        limit=request.args.get("limit") or None,
    )


@dashboard_blueprint.post("/approvals/bulk")
@signed_in
async def approvals_bulk(caller: Caller) -> Response:
    """Approve or deny the calls ticked in the queue, each as its own page would."""
    form = await request.form
    here = url_for("dashboard.approvals", workspace=form.get("workspace") or None)
    decision = form.get("decision")
    ids = list(dict.fromkeys(form.getlist("id")))
    if decision not in ("approve", "deny"):
        return _done(here, f"unknown decision {decision!r}", error=True)
    if not ids:
        return _done(here, "Tick at least one call to decide.", error=True)
    if len(ids) > MAX_PAGE:
        return _done(here, f"Decide at most {MAX_PAGE} calls at once.", error=True)
    service = _admin()
    reason = form.get("reason") or None
    problems: list[str] = []
    decided_ids: list[str] = []
    for approval_id in ids:
        try:
            if decision == "approve":
                await decisions.approve(
                    service.store, approval_id, actor=caller.actor, reason=reason
                )
            else:
                await decisions.deny(service.store, approval_id, actor=caller.actor, reason=reason)
        except AgentwsError as exc:
            problems.append(exc.message)
            continue
        decided_ids.append(approval_id)
    if decision == "approve":
        # The service runs them: as for one call, show outcomes that come soon (one
        # deadline for them all), else where each stands.
        with trio.move_on_after(_OUTCOME_WAIT_S):
            for approval_id in decided_ids:
                await service.approval_outcome(approval_id)
    outcomes: dict[str, int] = {}
    for approval_id in decided_ids:
        status = current_status(await find_approval(service.store, approval_id)).value
        outcomes[status] = outcomes.get(status, 0) + 1
    done = sum(outcomes.values())
    verb = "Approved" if decision == "approve" else "Denied"
    notice = f"{verb} {done} call{'s' if done != 1 else ''}"
    if decision == "approve" and done:
        notice += ": " + ", ".join(f"{n} {status}" for status, n in sorted(outcomes.items()))
    notice += "."
    if problems:
        notice += f" {len(problems)} not decided: " + "; ".join(problems)
    return _done(here, notice, error=bool(problems) and not done)


async def _asked_by(approval: Approval) -> str:
    """Who asked, by the name an admin knows them by (a token's, a webhook's)."""
    store = _admin().store
    if approval.token_id is not None:
        token = await store.find(McpToken, id=approval.token_id)
        if token is not None:
            return f"token {token.name}"
    kind, _, ident = approval.requested_by.partition(":")
    if kind == "webhook":
        hook = await store.find(Webhook, id=ident)
        if hook is not None:
            return f"webhook {hook.name}"
    return approval.requested_by


@dashboard_blueprint.get("/approvals/<approval_id>")
@signed_in
async def approval(caller: Caller, approval_id: str) -> Response:
    store = _admin().store
    found = await find_approval(store, approval_id)
    group = await store.get(Group, found.group_id)
    workspace = await store.get(Workspace, group.workspace_id)
    return await _page(
        "approval.html",
        caller,
        asked_by=await _asked_by(found),
        approval=found,
        approval_status=current_status(found).value,
        group=group,
        workspace=workspace,
    )


@dashboard_blueprint.post("/approvals/<approval_id>/<decision>")
@signed_in
async def approval_decide(caller: Caller, approval_id: str, decision: str) -> Response:
    form = await request.form
    here = url_for("dashboard.approval", approval_id=approval_id)
    service = _admin()
    reason = form.get("reason") or None
    try:
        if decision in ("approve", "retry"):
            decide = decisions.approve if decision == "approve" else decisions.retry
            decided = await decide(service.store, approval_id, actor=caller.actor, reason=reason)
            # The service runs it: show the outcome if it comes soon, else where it stands.
            with trio.move_on_after(_OUTCOME_WAIT_S):
                decided = await service.approval_outcome(approval_id)
            decided = await find_approval(service.store, approval_id)
        elif decision == "deny":
            decided = await decisions.deny(
                service.store, approval_id, actor=caller.actor, reason=reason
            )
        else:
            return _done(here, f"unknown decision {decision!r}", error=True)
    except AgentwsError as exc:
        return _done(here, exc.message, error=True)
    if decided.status is ApprovalStatus.FAILED:
        return _done(here, f"{decided.tool_name} failed: {decided.error}", error=True)
    return _done(here, f"{decided.tool_name}: {current_status(decided).value}.")


# --- Events -----------------------------------------------------------------------------------


@dashboard_blueprint.get("/w/<workspace>/events")
@signed_in
async def events(caller: Caller, workspace: str) -> Response:
    store = _admin().store
    hooks = await webhooks_admin.list_webhooks(store, workspace)
    only = request.args.get("webhook") or None
    status_text = request.args.get("status") or None
    webhook = await webhooks_admin.find_webhook(store, workspace, only) if only else None
    try:
        status = EventStatus(status_text) if status_text else None
    except ValueError:
        status = None
    listed = await webhook_events.list_events(
        store, workspace, webhook=webhook, status=status, limit=200
    )
    names = {w.id: w.name for w in hooks}
    return await _page(
        "events.html",
        caller,
        workspace=await _workspace(workspace),
        events=listed,
        names=names,
        webhooks=hooks,
        only=only,
        chosen_status=status_text,
        statuses=[s.value for s in EventStatus],
    )


@dashboard_blueprint.get("/events/<event_id>")
@signed_in
async def event(caller: Caller, event_id: str) -> Response:
    store = _admin().store
    timeline = await webhook_events.event_timeline(store, event_id)
    workspace = await store.get(Workspace, timeline.webhook.workspace_id)
    return await _page(
        "event.html",
        caller,
        timeline=timeline,
        request_body=timeline.request_body(),
        workspace=workspace,
    )


@dashboard_blueprint.post("/events/<event_id>/replay")
@signed_in
async def event_replay(caller: Caller, event_id: str) -> Response:
    form = await request.form
    try:
        replayed = await webhook_events.replay_event(
            _admin().store,
            event_id,
            current_prompt=form.get("current_prompt") == "on",
            actor=caller.actor,
        )
    except AgentwsError as exc:
        return _done(url_for("dashboard.event", event_id=event_id), exc.message, error=True)
    _admin().notify_events()
    return _done(url_for("dashboard.event", event_id=replayed.id), "Replayed as this new event.")


# --- Libraries --------------------------------------------------------------------------------


@dashboard_blueprint.get("/w/<workspace>/libraries")
@signed_in
async def libraries_page(caller: Caller, workspace: str) -> Response:
    store = _admin().store
    shelves = []
    attached = await libraries.attached_groups(store, workspace)
    for library in await libraries.list_libraries(store, workspace):
        shelves.append(
            {
                "library": library,
                "groups": attached.get(library.id, []),
                "documents": await libraries.list_documents(store, workspace, library.slug),
                "skills": await libraries.list_skills(store, workspace, library.slug),
            }
        )
    return await _page(
        "libraries.html",
        caller,
        workspace=await _workspace(workspace),
        shelves=shelves,
        policies=[p.value for p in DocumentPolicy],
    )


@dashboard_blueprint.post("/w/<workspace>/libraries/<library>/documents")
@signed_in
async def document_upload(caller: Caller, workspace: str, library: str) -> Response:
    here = url_for("dashboard.libraries_page", workspace=workspace)
    form = await request.form
    files = await request.files
    upload = files.get("file")
    try:
        if upload is None or not upload.filename:
            raise ValueError("choose a file to upload")
        data = upload.read(_MAX_UPLOAD_BYTES + 1)
        if len(data) > _MAX_UPLOAD_BYTES:
            raise ValueError("the file is larger than 5 MiB")
        text = data.decode("utf-8")
        title = form.get("title") or upload.filename
        document = await libraries.add_document(
            _admin().store,
            workspace,
            library,
            slug=libraries.slug_from(form.get("slug") or upload.filename.rsplit(".", 1)[0]),
            title=title,
            body=text,
            mime_type=_mime(upload.filename),
            policy=form.get("policy") or "on_demand",
            actor=caller.actor,
        )
    except UnicodeDecodeError:
        return _done(here, "the file is not UTF-8 text", error=True)
    except (AgentwsError, ValueError) as exc:
        return _done(here, _message(exc), error=True)
    return _done(here, f"Added {document.title!r} ({document.policy.value}) to {library}.")


def _mime(filename: str) -> str:
    lower = filename.lower()
    if lower.endswith(".json"):
        return "application/json"
    if lower.endswith((".md", ".markdown")):
        return "text/markdown"
    return "text/plain"


# --- Channels ---------------------------------------------------------------------------------


@dashboard_blueprint.get("/w/<workspace>/channels")
@signed_in
async def channels(caller: Caller, workspace: str) -> Response:
    store = _admin().store
    ws = await _workspace(workspace)
    hooks = await store.select(Webhook, workspace_id=ws.id)
    known = sorted({w.channel for w in hooks})
    chosen = request.args.get("channel") or (known[0] if known else None)
    messages: list[ChatMessage] = []
    if chosen:
        messages = await store.channel_messages(ws.id, chosen, limit=100)
    return await _page(
        "channels.html",
        caller,
        workspace=ws,
        channels=known,
        chosen=chosen,
        messages=list(reversed(messages)),
    )
