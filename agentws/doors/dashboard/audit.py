"""The dashboard's audit viewer: the audit log, filtered, a page at a time, and its export.

``/dashboard/audit`` spans workspaces, like the approval queue. Its filters
are :class:`agentws.common.audit.AuditFilters` (the admin API's and ``agentws
audit tail``'s), in the query string, so a filtered page is a link; the
pages are keyset pages, newest first. ``/dashboard/audit.jsonl`` streams
every entry under the same filters as JSON lines, each the JSON ``agentws
audit tail --json`` prints.

Entries name callers by ids (``mcp:tok_…``, a group's id); the page shows
the names an operator knows (the token's, the group's slug, the OAuth
client's), looked up once per page for the ids on it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import attrs
from quart import Response, request

from agentws.admins.access import AdminServices, Caller
from agentws.common.audit import FILTER_NAMES, AuditFilters, audit_entries, audit_page
from agentws.core.errors import AgentwsError
from agentws.domain.audit_lists import MAX_PAGE, AuditPage
from agentws.domain.models import AuditEntry, Group, McpToken, OAuthClient, Webhook
from agentws.domain.permissions import Decision
from agentws.domain.rules import utcnow
from agentws.domain.typed_numbers import NumberError, whole_number
from agentws.doors.dashboard.frame import render_page
from agentws.doors.dashboard.session import signed_in
from agentws.doors.views import audit_json
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

# Entries a page shows unless ``?limit=`` says otherwise (up to MAX_PAGE).
_PAGE = 50
# Tokens the filter's menu offers at most (a workspace's static tokens).
_MENU_TOKENS = 500
# Detail a row shows on its line, in this order (the whole detail is under it).
_SHOWN = ("decision", "outcome", "scope", "label", "permission", "reason", "error")
# Actions the action filter suggests (it takes any prefix).
_ACTIONS = (
    "tool.call",
    "tool.",
    "approval.",
    "token.",
    "webhook.",
    "admin.",
    "admin_token.",
    "library.",
    "oauth.",
)


@attrs.frozen
class Row:
    """An entry as the page shows it: who by the name an operator knows, what it said."""

    entry: AuditEntry
    who: str
    group: str | None
    shown: tuple[tuple[str, str], ...]


def _limit() -> int:
    text = request.args.get("limit", "")
    # A page size from a link: one that is not a number gets the usual page.
    try:
        return min(whole_number(text, name="limit", low=1, high=10**9), MAX_PAGE)
    except NumberError:
        return _PAGE


async def _names(admin: AdminServices, entries: tuple[AuditEntry, ...]) -> list[Row]:
    """Rows with the names of the tokens, groups, webhooks and OAuth clients on this page."""
    store = admin.store
    groups = {g.id: g for g in await store.select(Group)}
    clients = {c.client_id: c.name for c in await store.select(OAuthClient)}
    known: dict[str, str] = {}
    for actor in {e.actor for e in entries}:
        kind, _, ident = actor.partition(":")
        if kind == "mcp":
            token = await store.find(McpToken, id=ident)
            group = groups.get(token.group_id) if token is not None else None
            if token is not None and token.oauth_client_id is None:
                known[actor] = f"token {token.name}" + (f" ({group.slug})" if group else "")
        elif kind == "webhook":
            hook = await store.find(Webhook, id=ident)
            if hook is not None:
                known[actor] = f"webhook {hook.name}"
    rows = []
    for entry in entries:
        detail = entry.detail
        who = known.get(entry.actor, entry.actor)
        client = detail.get("oauth_client")
        if isinstance(client, str):
            who = f"OAuth client {clients.get(client, client)}"
        group = groups.get(str(detail.get("group_id")))
        shown = tuple(
            (key, "-" if detail[key] is None else str(detail[key]))
            for key in _SHOWN
            if key in detail
        )
        rows.append(Row(entry, who, group.slug if group else None, shown))
    return rows


async def _menus(admin: AdminServices, workspace_slug: str | None) -> dict[str, Any]:
    """What the filter form's menus offer: groups and static tokens of the workspace chosen."""
    store = admin.store
    workspaces = await registry.list_workspaces(store)
    chosen = next((w for w in workspaces if w.slug == workspace_slug), None)
    groups = await store.select(Group, workspace_id=chosen.id) if chosen else []
    tokens: list[tuple[str, str]] = []
    for group in groups:
        for token in await store.select(McpToken, group_id=group.id, oauth_client_id=None):
            tokens.append((token.id, f"{group.slug}/{token.name}"))
    return {
        "chosen": chosen,
        "groups": groups,
        "tokens": tokens[:_MENU_TOKENS],
        "clients": [(c.client_id, c.name) for c in await store.select(OAuthClient)],
        "decisions": [d.value for d in Decision],
        "actions": _ACTIONS,
    }


async def _outside(admin: AdminServices, typed: dict[str, str]) -> list[str]:
    """Drop from ``typed`` a group or token that is not the chosen workspace's; what was dropped.

    The form keeps the group and token chosen when the workspace is changed
    (without the script, which clears them): filtering on both would find
    nothing, as if nothing had happened, so the page filters on the
    workspace alone and says so.
    """
    store = admin.store
    slug = typed["workspace"]
    workspace = next((w for w in await registry.list_workspaces(store) if w.slug == slug), None)
    if workspace is None:
        return []  # no workspace chosen, or an unknown one (the filter reports that)
    dropped = []
    if (
        typed["group"]
        and await store.find(Group, workspace_id=workspace.id, slug=typed["group"]) is None
    ):
        dropped.append(f"group {typed['group']!r} is not in workspace {slug!r}")
        typed["group"] = ""
    token = await store.find(McpToken, id=typed["token"]) if typed["token"] else None
    if token is not None:
        group = await store.find(Group, id=token.group_id)
        if group is None or group.workspace_id != workspace.id:
            dropped.append(f"token {token.name!r} is not of workspace {slug!r}")
            typed["token"] = ""
    return dropped


@routes.get("/audit")
@signed_in
async def audit(admin: AdminServices, caller: Caller) -> Response:
    # What the form shows again, as it was typed.
    typed = {name: request.args.get(name, "").strip() for name in FILTER_NAMES}
    limit = _limit()
    dropped = await _outside(admin, typed)
    error = None
    try:
        filters = AuditFilters.from_text(typed, now=utcnow())
        page = await audit_page(
            admin.store, filters, limit=limit, cursor=request.args.get("cursor") or None
        )
    except AgentwsError as exc:
        error, page = exc.message, AuditPage((), None, None)
    menus = await _menus(admin, typed["workspace"] or None)
    typed_set = {name: value for name, value in typed.items() if value}
    here = dict(typed_set, limit=str(limit)) if limit != _PAGE else typed_set
    return await render_page(
        admin,
        "audit.html",
        caller,
        status=400 if error else 200,
        error=error or (f"Left out of the filter: {'; '.join(dropped)}." if dropped else None),
        # The menu's links point at the workspace filtered on, else the first.
        workspace=menus["chosen"] or next(iter(await registry.list_workspaces(admin.store)), None),
        # The log spans workspaces: the header's Audit link shows all of it.
        spans_workspaces=True,
        page=page,
        rows=await _names(admin, page.items),
        typed=typed,
        here=here,
        typed_set=typed_set,
        filtered=any(typed.values()),
        limit=limit,
        **menus,
    )


@routes.get("/audit.jsonl")
@signed_in
async def audit_export(admin: AdminServices, caller: Caller) -> Response:
    """Every entry under the page's filters, newest first, one JSON object a line."""
    typed = {name: request.args.get(name, "").strip() for name in FILTER_NAMES}
    # The page's link never names these; an address typed so is refused, not emptied.
    dropped = await _outside(admin, typed)
    if dropped:
        return Response(
            "; ".join(dropped) + "\n", status=400, content_type="text/plain; charset=utf-8"
        )
    try:
        entries = await audit_entries(admin.store, AuditFilters.from_text(typed, now=utcnow()))
    except AgentwsError as exc:
        return Response(exc.message + "\n", status=400, content_type="text/plain; charset=utf-8")

    async def lines() -> AsyncGenerator[bytes, None]:
        async with aclosing(entries) as found:  # closed however the download ends
            async for entry in found:
                yield (json.dumps(audit_json(entry), ensure_ascii=False) + "\n").encode()

    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    response = Response(lines(), content_type="application/x-ndjson; charset=utf-8")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{stamp}.jsonl"'
    # The export takes as long as it takes: no response deadline.
    response.timeout = None
    return response
