"""The admin API's audit log: a page of entries, newest first, under filters.

The filters are those of the dashboard's audit viewer and of ``agentws
audit tail`` (:class:`agentws.common.audit.AuditFilters`); each entry is the JSON
``agentws audit tail --json`` prints.
"""

from __future__ import annotations

from quart import request

from agentws.admins.access import AdminServices, Caller
from agentws.common.audit import AuditFilters, audit_page
from agentws.domain.rules import utcnow
from agentws.doors.api.calls import Answer, Endpoints, query_number
from agentws.doors.views import audit_json

__all__ = ["routes"]

routes = Endpoints()


@routes.get("/audit")
async def list_audit(admin: AdminServices, caller: Caller) -> Answer:
    page = await audit_page(
        admin.store,
        AuditFilters.from_text(request.args, now=utcnow()),
        limit=query_number("limit", 50),
        cursor=request.args.get("cursor") or None,
    )
    return {
        "items": [audit_json(e) for e in page.items],
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }
