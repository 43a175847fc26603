"""The admin API's audit log: a page of entries, newest first, under filters.

The filters are those of the dashboard's audit viewer and of ``agentws
audit tail`` (:class:`agentws.audit.AuditFilters`); each entry is the JSON
``agentws audit tail --json`` prints.
"""

from __future__ import annotations

from quart import request

from agentws.admin_access import AdminServices, Caller
from agentws.audit import AuditFilters, audit_page
from agentws.blueprints import RouteTable
from agentws.domain.rules import utcnow
from agentws.errors import ValidationError
from agentws.views import audit_json

from .calls import Answer, endpoint

__all__ = ["routes"]

routes = RouteTable[AdminServices]()


@routes.get("/audit")
@endpoint
async def list_audit(admin: AdminServices, caller: Caller) -> Answer:
    text = request.args.get("limit", "50")
    if not text.isdigit():
        raise ValidationError("limit must be a whole number from 1 to 200")
    page = await audit_page(
        admin.store,
        AuditFilters.from_text(request.args, now=utcnow()),
        limit=int(text),
        cursor=request.args.get("cursor") or None,
    )
    return {
        "items": [audit_json(e) for e in page.items],
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }
