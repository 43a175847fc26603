"""The ``/api/v1`` blueprint: thin handlers over the service layer the CLI uses.

Every handler authenticates the caller (:func:`agentws.admin_access.authenticate`), reads and
checks its input, calls the same service function as the matching CLI
command (so the same rules and audit entries apply, with the admin as the
actor), and answers JSON. Errors are ``{"error": {"code", "message"}}`` with
the status the error's kind calls for. Lists are paginated: ``limit`` (1 to
200, default 50) and the opaque ``cursor`` a page's ``next_cursor`` gives.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, cast

import trio
from quart import Blueprint, Response, current_app, jsonify, request

from agentws import libraries, registry
from agentws.admin_access import SESSION_COOKIE, AdminServices, Caller, authenticate
from agentws.api.openapi import openapi_document
from agentws.approvals import decisions
from agentws.chat.channels import parse_channel
from agentws.domain.models import (
    ApprovalStatus,
    Capability,
    DocumentPolicy,
    EventStatus,
    Group,
    Permission,
    VerificationScheme,
    Webhook,
    Workspace,
)
from agentws.errors import (
    AgentwsError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    StoreUnavailableError,
    UnauthorizedError,
    ValidationError,
)
from agentws.tools import admin as tools_admin
from agentws.tools.approval_queue import find_approval
from agentws.tools.approval_queue import list_approvals as approvals_listed
from agentws.views import (
    approval_json,
    approval_summary_json,
    document_json,
    event_json,
    library_json,
    message_json,
    token_json,
    tool_json,
    webhook_json,
    workspace_json,
)
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events

__all__ = ["api_blueprint"]

api_blueprint = Blueprint("api", __name__, url_prefix="/api/v1")

_MAX_LIMIT = 200
# How long approve/retry wait for the service to run the call before answering, by
# default and at most (the answer then shows it approved or running).
_OUTCOME_WAIT_S = 30.0
_MAX_OUTCOME_WAIT_S = 300.0
_STATUS = {
    ValidationError: 400,
    UnauthorizedError: 401,
    PermissionDeniedError: 403,
    NotFoundError: 404,
    ConflictError: 409,
    StoreUnavailableError: 503,
}

Handler = Callable[..., Awaitable[Any]]

# A \ud800-\udfff escape: only then can a parsed body hold a lone surrogate,
# which json accepts and no UTF-8 encoder (the stores, the JSON answer) does.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _InvalidJson(ValidationError):
    """The body is not JSON text (as the webhook door calls it)."""

    code = "invalid_json"


def _error(status: int, code: str, message: str) -> Response:
    response = jsonify({"error": {"code": code, "message": message}})
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="agentws admin API"'
    return response


def _admin() -> AdminServices:
    # Until the blueprints take it through a constructor.
    return cast(AdminServices, current_app.config["AGENTWS_ADMIN"])


def endpoint(handler: Handler) -> Callable[..., Awaitable[Response]]:
    """Authenticate, run ``handler(caller, **path)``, and turn agentws errors into JSON."""

    @functools.wraps(handler)
    async def wrapped(**path: str) -> Response:
        service = _admin()
        try:
            caller = await authenticate(
                service.store,
                method=request.method,
                authorization=request.headers.get("Authorization"),
                cookie=request.cookies.get(SESSION_COOKIE),
                csrf=request.headers.get("X-CSRF-Token"),
            )
            result = await handler(caller, **path)
        except AgentwsError as exc:
            status = next((s for k, s in _STATUS.items() if isinstance(exc, k)), 500)
            return _error(status, exc.code, exc.message)
        if isinstance(result, Response):
            return result
        data, status = result if isinstance(result, tuple) else (result, 200)
        response = jsonify(data)
        response.status_code = status
        return response

    return wrapped


async def _body() -> dict[str, Any]:
    """The request's JSON object (ValidationError if it is not one).

    Every handler that reads a body reads it here, so a body that is not
    JSON text is refused the same way everywhere: 400 ``invalid_json``.
    """
    raw = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    try:
        data = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # UnicodeDecodeError included
        raise _InvalidJson("the body is not valid JSON: send a JSON object") from None
    if _SURROGATE_ESCAPE.search(raw) and not _encodable(data):
        raise _InvalidJson(
            "the body has an unpaired UTF-16 surrogate escape (\\ud800-\\udfff), which is not text"
        )
    if not isinstance(data, dict):
        raise ValidationError("the body must be a JSON object")
    return data


def _encodable(data: Any) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _field(
    data: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None
) -> Any:
    value = data.get(name, default)
    if value is None:
        return default
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        names = "/".join(k.__name__ for k in _kinds(kind))
        raise ValidationError(f"{name!r} must be a {names}")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _required(data: dict[str, Any], name: str) -> str:
    value = _field(data, name, str)
    if value is None:
        raise ValidationError(f"{name!r} is required")
    return str(value)


def _names(data: dict[str, Any], name: str) -> tuple[str, ...]:
    value = _field(data, name, list, [])
    if not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{name!r} must be a list of tool names")
    return tuple(value)


def _page(items: list[Any]) -> dict[str, Any]:
    """One page of ``items`` by the request's ``limit`` and ``cursor``."""
    try:
        limit = int(request.args.get("limit", "50"))
        start = int(request.args.get("cursor", "0") or "0")
    except ValueError:
        raise ValidationError("limit and cursor must be whole numbers") from None
    if not 1 <= limit <= _MAX_LIMIT or start < 0:
        raise ValidationError(f"limit must be 1 to {_MAX_LIMIT}, and cursor one a page gave")
    end = start + limit
    return {"items": items[start:end], "next_cursor": str(end) if end < len(items) else None}


def _enum(kind: Any, name: str, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(v.value for v in kind)
        raise ValidationError(f"{name} must be one of {allowed}") from None


async def _webhook_view(store: Any, webhook: Webhook) -> dict[str, Any]:
    workspace = await store.get(Workspace, webhook.workspace_id)
    group = await store.find(Group, id=webhook.group_id) if webhook.group_id else None
    return webhook_json(webhook, workspace.slug, group.slug if group else None)


# --- the document ---------------------------------------------------------------------------


@api_blueprint.get("/openapi.json")
async def openapi() -> Response:
    """The OpenAPI 3.1 document of this API (no credentials needed)."""
    return jsonify(openapi_document(_admin().settings.public_base_url))


# --- workspaces -----------------------------------------------------------------------------


@api_blueprint.get("/workspaces")
@endpoint
async def list_workspaces(caller: Caller) -> Any:
    return _page([workspace_json(w) for w in await registry.list_workspaces(_admin().store)])


# --- webhooks -------------------------------------------------------------------------------


@api_blueprint.get("/workspaces/<workspace>/webhooks")
@endpoint
async def list_webhooks(caller: Caller, workspace: str) -> Any:
    store = _admin().store
    return _page(
        [
            await _webhook_view(store, w)
            for w in await webhooks_admin.list_webhooks(store, workspace)
        ]
    )


@api_blueprint.post("/workspaces/<workspace>/webhooks")
@endpoint
async def create_webhook(caller: Caller, workspace: str) -> Any:
    data = await _body()
    verification = _enum(
        VerificationScheme, "verification", _field(data, "verification", str, "none")
    )
    options = webhooks_admin.WebhookOptions(
        group=_field(data, "group", str),
        active=_field(data, "active", bool, True),
        concurrency=_field(data, "concurrency", int, 4),
        verification=verification,
        secret=_field(data, "secret", str),
        rate_per_min=_field(data, "rate_per_min", int, 60),
        burst=_field(data, "burst", int),
        max_body_bytes=_field(data, "max_body_bytes", int),
        allow_tools=_names(data, "allow_tools"),
        allow_mentions=_field(data, "allow_mentions", bool, False),
    )
    service = _admin()
    issued = await webhooks_admin.create_webhook(
        service.store,
        service.settings,
        workspace,
        name=_required(data, "name"),
        channel=_required(data, "channel"),
        prompt=_required(data, "prompt"),
        options=options,
        actor=caller.actor,
    )
    view = await _webhook_view(service.store, issued.webhook)
    return {**view, "url": issued.url}, 201


@api_blueprint.get("/workspaces/<workspace>/webhooks/<webhook>")
@endpoint
async def show_webhook(caller: Caller, workspace: str, webhook: str) -> Any:
    store = _admin().store
    return await _webhook_view(store, await webhooks_admin.find_webhook(store, workspace, webhook))


@api_blueprint.patch("/workspaces/<workspace>/webhooks/<webhook>")
@endpoint
async def update_webhook(caller: Caller, workspace: str, webhook: str) -> Any:
    data = await _body()
    store = _admin().store
    changes = webhooks_admin.WebhookChanges(
        prompt=_field(data, "prompt", str),
        channel=_field(data, "channel", str),
        group=_field(data, "group", str),
        allow_tools=_names(data, "allow_tools"),
        disallow_tools=_names(data, "disallow_tools"),
        allow_mentions=_field(data, "allow_mentions", bool),
    )
    active = _field(data, "active", bool)
    updated = await webhooks_admin.update_webhook(
        store,
        workspace,
        webhook,
        changes=changes,
        allowlist=_admin().settings.connector_allowlist,
        actor=caller.actor,
    )
    if active is not None:
        updated = await webhooks_admin.set_active(
            store, workspace, updated.id, active=active, actor=caller.actor
        )
    return await _webhook_view(store, updated)


@api_blueprint.delete("/workspaces/<workspace>/webhooks/<webhook>")
@endpoint
async def delete_webhook(caller: Caller, workspace: str, webhook: str) -> Any:
    deleted = await webhooks_admin.delete_webhook(
        _admin().store, workspace, webhook, actor=caller.actor
    )
    return {"id": deleted.id, "deleted": True}


# --- events ---------------------------------------------------------------------------------


@api_blueprint.get("/workspaces/<workspace>/events")
@endpoint
async def list_events(caller: Caller, workspace: str) -> Any:
    store = _admin().store
    status = _enum(EventStatus, "status", request.args.get("status"))
    only = request.args.get("webhook")
    webhook = await webhooks_admin.find_webhook(store, workspace, only) if only else None
    events = await webhook_events.list_events(
        store, workspace, webhook=webhook, status=status, limit=1000
    )
    webhooks = {w.id: w for w in await store.select(Webhook)}
    return _page([event_json(e, webhooks[e.webhook_id]) for e in events])


@api_blueprint.get("/events/<event_id>")
@endpoint
async def show_event(caller: Caller, event_id: str) -> Any:
    event, webhook = await webhook_events.find_event(_admin().store, event_id)
    return event_json(event, webhook)


@api_blueprint.post("/events/<event_id>/replay")
@endpoint
async def replay_event(caller: Caller, event_id: str) -> Any:
    data = await _body()
    store = _admin().store
    replayed = await webhook_events.replay_event(
        store,
        event_id,
        current_prompt=_field(data, "current_prompt", bool, False),
        actor=caller.actor,
    )
    _admin().notify_events()
    event, webhook = await webhook_events.find_event(store, replayed.id)
    return event_json(event, webhook), 201


# --- approvals ------------------------------------------------------------------------------


@api_blueprint.get("/approvals")
@endpoint
async def list_approvals(caller: Caller) -> Any:
    status = _enum(ApprovalStatus, "status", request.args.get("status"))
    try:
        limit = int(request.args.get("limit", "50"))
    except ValueError:
        raise ValidationError("limit must be a whole number") from None
    page = await approvals_listed(
        _admin().store,
        workspace_slug=request.args.get("workspace"),
        statuses=frozenset({status}) if status else None,
        limit=limit,
        cursor=request.args.get("cursor") or None,
    )
    return {
        "items": [approval_summary_json(a) for a in page.items],
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }


async def _approval_view(approval_id: str) -> dict[str, Any]:

    store = _admin().store
    approval = await find_approval(store, approval_id)
    group = await store.get(Group, approval.group_id)
    return approval_json(approval, group, await store.get(Workspace, group.workspace_id))


@api_blueprint.get("/approvals/<approval_id>")
@endpoint
async def show_approval(caller: Caller, approval_id: str) -> Any:
    return await _approval_view(approval_id)


@api_blueprint.post("/approvals/<approval_id>/approve")
@endpoint
async def approve_call(caller: Caller, approval_id: str) -> Any:
    data = await _body()
    service = _admin()
    await decisions.approve(
        service.store, approval_id, actor=caller.actor, reason=_field(data, "reason", str)
    )
    return await _approval_outcome(approval_id, data)


@api_blueprint.post("/approvals/<approval_id>/retry")
@endpoint
async def retry_call(caller: Caller, approval_id: str) -> Any:
    data = await _body()
    await decisions.retry(
        _admin().store, approval_id, actor=caller.actor, reason=_field(data, "reason", str)
    )
    return await _approval_outcome(approval_id, data)


async def _approval_outcome(approval_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """The approval once the service ran it, or after ``wait_s`` (default 30, at most 300)."""
    wait_s = _field(data, "wait_s", (int, float), _OUTCOME_WAIT_S)
    if not 0 <= wait_s <= _MAX_OUTCOME_WAIT_S:
        raise ValidationError(f"'wait_s' must be 0 to {_MAX_OUTCOME_WAIT_S:g}")
    with trio.move_on_after(wait_s):
        await _admin().approval_outcome(approval_id)
    return await _approval_view(approval_id)


@api_blueprint.post("/approvals/<approval_id>/deny")
@endpoint
async def deny_call(caller: Caller, approval_id: str) -> Any:
    data = await _body()
    await decisions.deny(
        _admin().store, approval_id, actor=caller.actor, reason=_field(data, "reason", str)
    )
    return await _approval_view(approval_id)


# --- MCP tokens -----------------------------------------------------------------------------


@api_blueprint.get("/workspaces/<workspace>/groups/<group>/tokens")
@endpoint
async def list_tokens(caller: Caller, workspace: str, group: str) -> Any:
    tokens = await registry.list_tokens(_admin().store, workspace, group)
    return _page([token_json(t, workspace, group) for t in tokens])


@api_blueprint.post("/workspaces/<workspace>/groups/<group>/tokens")
@endpoint
async def create_token(caller: Caller, workspace: str, group: str) -> Any:
    data = await _body()
    scope = _enum(Capability, "scope", _field(data, "scope", str, "write"))
    issued = await registry.create_token(
        _admin().store,
        workspace,
        group,
        name=_required(data, "name"),
        scope=scope,
        actor=caller.actor,
    )
    return {**token_json(issued.token, workspace, group), "token": issued.secret}, 201


@api_blueprint.delete("/workspaces/<workspace>/groups/<group>/tokens/<token>")
@endpoint
async def revoke_token(caller: Caller, workspace: str, group: str, token: str) -> Any:
    revoked = await registry.revoke_token(
        _admin().store, workspace, group, token, actor=caller.actor
    )
    return token_json(revoked, workspace, group)


# --- tools and permissions ------------------------------------------------------------------


@api_blueprint.get("/workspaces/<workspace>/groups/<group>/tools")
@endpoint
async def list_tools(caller: Caller, workspace: str, group: str) -> Any:
    rows = await tools_admin.group_tool_list(_admin().store, workspace, group)
    return _page([tool_json(row) for row in rows])


@api_blueprint.put("/workspaces/<workspace>/tools/<tool>/label")
@endpoint
async def label_tool(caller: Caller, workspace: str, tool: str) -> Any:
    data = await _body()
    label = _field(data, "label", str)
    capability = _enum(Capability, "label", label) if label else None
    store = _admin().store
    _, cached = await tools_admin.set_label(store, workspace, tool, capability, actor=caller.actor)
    return {"name": tool, "label": cached.label.value if cached.label else None}


@api_blueprint.put("/workspaces/<workspace>/tools/<tool>/permission")
@endpoint
async def set_tool_permission(caller: Caller, workspace: str, tool: str) -> Any:
    data = await _body()
    group = _field(data, "group", str)
    permission = _field(data, "permission", str)
    store = _admin().store
    if permission is None:
        await tools_admin.clear_permission(
            store, workspace, tool, group_slug=group, actor=caller.actor
        )
    else:
        await tools_admin.set_permission(
            store,
            workspace,
            tool,
            _enum(Permission, "permission", permission),
            group_slug=group,
            actor=caller.actor,
        )
    return {"name": tool, "group": group, "permission": permission}


# --- libraries ------------------------------------------------------------------------------


@api_blueprint.get("/workspaces/<workspace>/libraries")
@endpoint
async def list_libraries(caller: Caller, workspace: str) -> Any:
    store = _admin().store
    attached = await libraries.attached_groups(store, workspace)
    shelves = []
    for library in await libraries.list_libraries(store, workspace):
        documents = await libraries.list_documents(store, workspace, library.slug)
        skills = await libraries.list_skills(store, workspace, library.slug)
        shelves.append(library_json(library, attached.get(library.id, []), documents, skills))
    return _page(shelves)


@api_blueprint.post("/workspaces/<workspace>/libraries/<library>/documents")
@endpoint
async def add_document(caller: Caller, workspace: str, library: str) -> Any:
    data = await _body()
    title = _required(data, "title")
    slug = _field(data, "slug", str) or libraries.slug_from(title)
    document = await libraries.add_document(
        _admin().store,
        workspace,
        library,
        slug=slug,
        title=title,
        body=_required(data, "body"),
        mime_type=_field(data, "mime_type", str, "text/markdown"),
        policy=_enum(DocumentPolicy, "policy", _field(data, "policy", str, "on_demand")),
        replace=_field(data, "replace", bool, False),
        actor=caller.actor,
    )
    return document_json(document, library), 201


# --- channels -------------------------------------------------------------------------------


@api_blueprint.get("/workspaces/<workspace>/channels/<channel>/messages")
@endpoint
async def channel_messages(caller: Caller, workspace: str, channel: str) -> Any:
    store = _admin().store
    ws = await store.workspace_by_slug(workspace)
    messages = await store.channel_messages(ws.id, str(parse_channel(channel)), limit=1000)
    return _page([message_json(m) for m in reversed(messages)])
