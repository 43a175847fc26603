"""The query parameters of the admin API's lists, as the document gives them.

Each field is one parameter (its description is the parameter's). The
handlers read them from the query string themselves, with the rules they
share with the dashboard and the CLI (:func:`agentws.doors.api.calls.query_number`,
:class:`agentws.common.audit.AuditFilters`, :func:`agentws.webhooks.event_search.find_events`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from agentws.domain.models import ApprovalStatus, EventStatus
from agentws.domain.permissions import Decision
from agentws.doors.api.shapes.base import Shape, choice, enum_values

__all__ = ["ApprovalFilters", "AuditFilters", "DeliveryFilters", "EventFilters", "Paging"]

_SINCE = (
    "{} at or after: ISO 8601 (UTC unless it says otherwise), or a span before now such as "
    "30m, 24h, 7d"
)


def _limit(**extra: Any) -> Any:
    return Field(None, ge=1, le=200, **extra)


class Paging(Shape):
    """The page of a list (see :func:`agentws.doors.api.calls.page_of`)."""

    limit: int | None = _limit()
    cursor: str | None = Field(None)


class EventFilters(Shape):
    webhook: str | None = Field(None, description="only this webhook's events (its name or id)")
    status: Annotated[str | None, choice(EventStatus)] = Field(None)
    since: str | None = Field(None, description=_SINCE.format("received"))
    until: str | None = Field(None, description="received before: as for since")
    q: str | None = Field(
        None,
        description="words of the event (its header values and the string and number values "
        'of its body), all of them: `word`, `pre*`, `"a phrase"`; case and accents ignored '
        "(docs/webhooks.md, Searching events)",
    )
    limit: int | None = _limit(json_schema_extra={"default": 50})
    cursor: str | None = Field(
        None,
        description="a next_cursor or previous_cursor of a page of this list, with the same "
        "filters",
    )


class DeliveryFilters(Paging):
    status: str | None = Field(
        None,
        description="accepted (2xx), refused (the rest), or one HTTP status",
        pattern="^(accepted|refused|[1-5][0-9]{2})$",
    )
    reason: str | None = Field(
        None, description="one reason only (queued, duplicate, invalid_signature...)"
    )


class ApprovalFilters(Shape):
    limit: int | None = _limit(json_schema_extra={"default": 50})
    cursor: str | None = Field(
        None, description="a next_cursor or previous_cursor of a page of this list"
    )
    workspace: str | None = Field(None)
    status: str | None = Field(
        None,
        description="the calls in this status (default: pending, the queue), or all of them",
        json_schema_extra={"enum": [*enum_values(ApprovalStatus), "all"], "default": "pending"},
    )


class AuditFilters(Shape):
    workspace: str | None = Field(None, description="only this workspace's entries (its slug)")
    group: str | None = Field(
        None, description="only tool calls in this group (its slug; give the workspace too)"
    )
    token: str | None = Field(
        None, description="only this MCP token's entries: its id (tok_…), or its name within group"
    )
    oauth_client: str | None = Field(
        None, description="only tool calls made with this OAuth client's access tokens"
    )
    actor: str | None = Field(
        None,
        description="only this actor's entries, as entries name them (admin:alice, mcp:tok_…)",
    )
    tool: str | None = Field(
        None, description="only entries about this tool (a tool call's target)"
    )
    decision: Annotated[str | None, choice(Decision)] = Field(
        None, description="only tool calls the gate decided so"
    )
    action: str | None = Field(
        None, description="only actions starting with this (tool., tool.call, approval.)"
    )
    since: str | None = Field(None, description=_SINCE.format("made"))
    until: str | None = Field(None, description="made before: as for since")
    limit: int | None = _limit(description="entries on the page")
    cursor: str | None = Field(
        None, description="a next_cursor (older entries) or previous_cursor (newer) of this list"
    )
