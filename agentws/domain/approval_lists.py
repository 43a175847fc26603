"""Lists of queued calls: what one row shows, which rows a list holds, and where a page starts.

A list never carries a call's whole arguments or result: a row has the
arguments' preview and size (see :mod:`agentws.domain.previews`), and the
names a person knows the caller by (the token's, the webhook's). Lists are
read a page at a time, from a *cursor*: the ``(created_at, id)`` of the row
the page starts after (or ends before), so a page stays where it was when
rows before it are decided or added, and reading one costs the same at the
thousandth row as at the first.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import attrs

from agentws.core.errors import ValidationError
from agentws.domain.models import ApprovalStatus, Capability

__all__ = [
    "DECIDED",
    "MAX_PAGE",
    "ApprovalPage",
    "ApprovalQuery",
    "ApprovalSummary",
    "Cursor",
    "shown_status",
]

#: Rows one page may hold: at the preview's size, a page stays well under 1 MB.
MAX_PAGE = 200
#: Every status a person sees but ``pending``: the history of decisions.
DECIDED = frozenset(s for s in ApprovalStatus if s is not ApprovalStatus.PENDING)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CURSOR = re.compile(r"([np])(\d{1,20})\.([a-z0-9_]{1,64})")


def shown_status(
    stored: ApprovalStatus, expires_at: datetime, now: datetime, *, leased: bool = False
) -> ApprovalStatus:
    """The status a person sees: a pending request past its time is expired (before the
    sweep), and an approved call whose lease an instance holds is running."""
    if stored is ApprovalStatus.PENDING and expires_at <= now:
        return ApprovalStatus.EXPIRED
    if stored is ApprovalStatus.APPROVED and leased:
        return ApprovalStatus.RUNNING
    return stored


@attrs.frozen(kw_only=True)
class ApprovalSummary:
    """One row of a list of queued calls: everything but the whole arguments and result."""

    id: str
    workspace_slug: str
    group_slug: str
    #: The MCP token that asked, and its name (None: a webhook's run, or the token is gone).
    token_id: str | None
    token_name: str | None
    #: The webhook whose run asked, when one did.
    webhook_name: str | None
    session_id: str | None
    event_id: str | None
    requested_by: str
    tool_name: str
    capability: Capability
    arguments_preview: str
    arguments_bytes: int
    arguments_hash: str
    #: As a person sees it (:func:`shown_status`).
    status: ApprovalStatus
    reason: str | None
    decided_by: str | None
    #: The start of the error, when it failed (the whole is on its own page).
    error: str | None
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    finished_at: datetime | None

    @property
    def caller(self) -> str:
        """Who asked, by a name a person knows: ``token laptop``, ``webhook ci``."""
        if self.token_name is not None:
            return f"token {self.token_name}"
        if self.webhook_name is not None:
            return f"webhook {self.webhook_name}"
        return self.requested_by


@attrs.frozen
class Cursor:
    """Where a page starts: after the row ``(created_at, id)`` in the list's order, or before it."""

    created_at: datetime
    id: str
    #: True: the rows after the key (the next page); False: the rows before it (the previous).
    forward: bool = True

    def encode(self) -> str:
        micros = (self.created_at - _EPOCH) // timedelta(microseconds=1)
        return f"{'n' if self.forward else 'p'}{micros}.{self.id}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The cursor a page gave as ``next_cursor`` or ``previous_cursor``.

        Error handling:
            :class:`~agentws.core.errors.ValidationError` for anything else.
        """
        match = _CURSOR.fullmatch(text)
        try:
            if match is None:
                raise ValueError(text)
            created_at = _EPOCH + timedelta(microseconds=int(match[2]))
        except (ValueError, OverflowError):
            raise ValidationError(
                "cursor must be a next_cursor or previous_cursor a page of this list gave"
            ) from None
        return cls(created_at, match[3], match[1] == "n")


@attrs.frozen(kw_only=True)
class ApprovalQuery:
    """Which queued calls a list holds, in which order, and which page of them."""

    #: Statuses as a person sees them (:func:`shown_status`); None: every status.
    statuses: frozenset[ApprovalStatus] | None = None
    workspace_id: str | None = None
    #: Newest first (a history) instead of oldest first (a queue).
    newest_first: bool = False
    limit: int = 50
    cursor: Cursor | None = None

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}")


@attrs.frozen
class ApprovalPage:
    """One page of a list, and the cursors of the pages beside it (None: there is none)."""

    items: tuple[ApprovalSummary, ...]
    next_cursor: str | None
    previous_cursor: str | None
