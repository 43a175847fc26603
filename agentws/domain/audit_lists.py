"""Reading the audit log a page at a time: which entries a list holds, and where a page starts.

A list is newest first. Its filters are those an operator asks about:
the workspace, the group a tool call was made in, the caller (an MCP
token, as the entry's actor ``mcp:tok_…``, or any other actor, or the
OAuth client whose access token called), the tool (the entry's target),
the gate's decision, the action (a prefix: ``tool.``, ``approval.``) and
a time range. Pages start at a keyset :class:`~agentws.domain.approval_lists.Cursor`
over ``(created_at, id)``, so reading the thousandth page costs what the
first does, and a page stays put while entries are added.

Tool calls keep their group, decision and OAuth client in the entry's
``detail`` (see :mod:`agentws.tools.gate`); the stores index those.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from agentws.core.errors import ValidationError
from agentws.domain.approval_lists import MAX_PAGE, Cursor
from agentws.domain.permissions import Decision
from agentws.domain.workspace_records import AuditEntry

__all__ = ["MAX_PAGE", "AuditPage", "AuditQuery"]

# The longest text a filter takes (a tool name, an actor, an OAuth client id).
_MAX_FILTER = 300


def _short(_instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not 0 < len(value) <= _MAX_FILTER:
        raise ValidationError(f"{attribute.name} must be 1 to {_MAX_FILTER} characters")


@attrs.frozen(kw_only=True)
class AuditQuery:
    """Which audit entries a list holds (every filter given must match), and which page."""

    workspace_id: str | None = None
    #: Tool calls made in this group (``detail.group_id``).
    group_id: str | None = attrs.field(default=None, validator=_short)
    #: Who did it, exactly as the entry names them (``mcp:tok_…``, ``admin:alice``).
    actor: str | None = attrs.field(default=None, validator=_short)
    #: Tool calls made with an access token of this OAuth client (its client id).
    oauth_client: str | None = attrs.field(default=None, validator=_short)
    #: The entry's target: a tool call's tool.
    tool: str | None = attrs.field(default=None, validator=_short)
    #: The gate's decision on a tool call.
    decision: Decision | None = None
    #: Actions starting with this (``tool.``, ``approval.``, ``tool.call``).
    action: str | None = attrs.field(default=None, validator=_short)
    #: Entries made at or after ``since``, and before ``until``.
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 50
    cursor: Cursor | None = None

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}")
        for moment in (self.since, self.until):
            if moment is not None and moment.tzinfo is None:
                raise ValidationError("since and until must carry a time zone")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValidationError("the time range is empty: 'from' must be before 'to'")


@attrs.frozen
class AuditPage:
    """One page of entries, newest first, and the cursors of the pages beside it.

    ``next_cursor`` leads to older entries, ``previous_cursor`` to newer ones
    (None: there is none).
    """

    items: tuple[AuditEntry, ...]
    next_cursor: str | None
    previous_cursor: str | None
