"""The admin API's delivery log: ``GET /workspaces/<ws>/webhooks/<webhook>/deliveries``.

Every request to a webhook's URL, accepted or refused, newest first, a page
at a time, with the same rows as the dashboard's Deliveries tab and
``agentws webhook deliveries`` (:mod:`agentws.webhooks.delivery_listing`).
"""

from __future__ import annotations

from quart import request

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import ValidationError
from agentws.domain.delivery_log import parse_status_filter
from agentws.doors.api.calls import Answer, Endpoints, page_of
from agentws.webhooks.delivery_listing import MAX_LISTED, delivery_json, list_deliveries

__all__ = ["routes"]

routes = Endpoints()


@routes.get("/workspaces/<workspace>/webhooks/<webhook>/deliveries")
async def list_webhook_deliveries(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    try:
        status = parse_status_filter(request.args.get("status"))
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    _, rows = await list_deliveries(
        admin.store,
        admin.settings,
        workspace,
        webhook,
        limit=MAX_LISTED,
        status=status,
        reason=request.args.get("reason") or None,
    )
    return page_of([delivery_json(d) for d in rows])
