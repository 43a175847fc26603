"""The dashboard's webhook Deliveries tab: the delivery log, refusals included.

Every request to the webhook's URL, newest first: when, the status and
reason it was answered with, its size, where it came from, its headers
(secrets hidden) and the event it became; filtered by outcome, status or
reason. The rows are those of the API and the CLI
(:mod:`agentws.webhooks.delivery_listing`).
"""

from __future__ import annotations

from quart import Response, request

from agentws.admins.access import AdminServices, Caller
from agentws.domain.delivery_log import parse_status_filter
from agentws.doors.dashboard.frame import find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.webhooks.delivery_listing import list_deliveries, retention

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

# Rows one page shows: the whole log, as it keeps 500 by default.
_PAGE_ROWS = 500


@routes.get("/w/<workspace>/webhooks/<webhook>/deliveries")
@signed_in
async def webhook_deliveries(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    chosen = (request.args.get("status") or "").strip()
    reason = (request.args.get("reason") or "").strip() or None
    error = None
    try:
        status = parse_status_filter(chosen)
    except ValueError as exc:
        status, chosen, error = None, "", str(exc)
    found, rows = await list_deliveries(
        admin.store,
        admin.settings,
        workspace,
        webhook,
        limit=_PAGE_ROWS,
        status=status,
        reason=reason,
    )
    return await render_page(
        admin,
        "webhook_deliveries.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        webhook=found,
        deliveries=rows,
        refused=sum(1 for d in rows if not d.accepted),
        chosen_status=chosen,
        chosen_reason=reason or "",
        retention=retention(admin.settings),
        tab="deliveries",
        error=error,
    )
