"""The dashboard's Channels page: what the service said in a workspace's chat channels.

Each message is drawn from its Markdown up to :data:`~agentws.doors.dashboard.markdown.DRAWN_CHARS`
characters, in a worker thread (:func:`~agentws.doors.dashboard.markdown.draw_messages`); a
longer one is also shown whole, as text, under a disclosure.
"""

from __future__ import annotations

from quart import Response, request

from agentws.admins.access import AdminServices, Caller
from agentws.domain.models import ChatMessage, Webhook
from agentws.doors.dashboard.frame import find_workspace, render_page
from agentws.doors.dashboard.markdown import DRAWN_CHARS, draw_messages
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/w/<workspace>/channels")
@signed_in
async def channels(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    ws = await find_workspace(admin, workspace)
    hooks = await store.select(Webhook, workspace_id=ws.id)
    known = sorted({w.channel for w in hooks})
    chosen = request.args.get("channel") or (known[0] if known else None)
    messages: list[ChatMessage] = []
    if chosen:
        messages = list(reversed(await store.channel_messages(ws.id, chosen, limit=100)))
    drawn = await draw_messages([m.text for m in messages])
    return await render_page(
        admin,
        "channels.html",
        caller,
        workspace=ws,
        channels=known,
        chosen=chosen,
        messages=list(zip(messages, drawn, strict=True)),
        drawn_chars=DRAWN_CHARS,
    )
