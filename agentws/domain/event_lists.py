"""Lists of webhook events: which events a list holds, what a row shows, where a page starts.

A list is a workspace's events, newest first, filtered by any of: webhook,
status, time received (``since`` inclusive, ``until`` exclusive), and a
search of their text (:mod:`agentws.domain.event_text`). It is read a page
at a time from a *cursor*, the ``(received_at, id)`` of the row the page
starts after (older) or ends before (newer), never an offset: events that
arrive while someone pages are newer than every page already read, so
they neither shift the pages nor show up twice, and a page costs the same
at the thousandth row as at the first.

A row never carries the body: a list of 200 events of a megabyte each
would be 200 MB. It says how big the body is; the event's own page shows it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import attrs

from agentws.core.errors import ValidationError

# A page's key is a Cursor of the approval lists (its created_at holding the event's
# received_at): the same text, read and written in one place.
from agentws.domain.approval_lists import Cursor
from agentws.domain.event_text import Search
from agentws.domain.typed_numbers import MAX_AGO, NumberError, span
from agentws.domain.webhook_records import EventStatus

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "Cursor",
    "EventPage",
    "EventQuery",
    "EventSummary",
    "parse_time",
]

#: Rows a page holds unless asked otherwise, and at most.
DEFAULT_PAGE = 50
MAX_PAGE = 200

# A span before now starts with a digit ("30m", "24h", "7d", "2w"); an ISO date has a dash.
_AGO = re.compile(r"[0-9]+\s*[a-z]")


def parse_time(text: str, *, now: datetime, name: str = "time") -> datetime:
    """A moment typed by a person: ISO 8601 (a date, or a date and time; UTC unless it
    says otherwise), or a span before ``now`` (``90s``, ``30m``, ``24h``, ``7d``, ``2w``;
    at most :data:`~agentws.domain.typed_numbers.MAX_AGO`).

    Error handling:
        :class:`~agentws.domain.typed_numbers.NumberError` naming ``name`` for anything else.
    """
    typed = text.strip()
    if _AGO.fullmatch(typed.lower()):
        return now - span(
            typed, name=name, high=MAX_AGO, units="smhdw", bare=None, examples="30m, 24h, 7d"
        )
    try:
        # Python 3.11 reads "Z" and a space between date and time.
        moment = datetime.fromisoformat(typed)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise NumberError(
            name,
            "an ISO 8601 date or time (2026-05-01, 2026-05-01T12:00:00Z)"
            " or a span before now (30m, 24h, 7d)",
            text,
        ) from None


@attrs.frozen(kw_only=True)
class EventQuery:
    """Which events a list holds, and which page of them."""

    workspace_id: str
    webhook_id: str | None = None
    status: EventStatus | None = None
    #: Received at or after this.
    since: datetime | None = None
    #: Received before this.
    until: datetime | None = None
    search: Search | None = None
    limit: int = DEFAULT_PAGE
    cursor: Cursor | None = None

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1 to {MAX_PAGE}")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValidationError("since must be before until")


@attrs.frozen(kw_only=True)
class EventSummary:
    """One row of a list of events: the event without its body and headers."""

    id: str
    webhook_id: str
    status: EventStatus
    attempts: int
    error: str | None
    message_id: str | None
    dedup_key: str | None
    replay_of: str | None
    received_at: datetime
    finished_at: datetime | None
    #: The size of the body.
    body_bytes: int
    #: The URL / secret generation it came through (see Event).
    url_generation: int | None = None
    secret_generation: int | None = None


@attrs.frozen
class EventPage:
    """One page of a list, and the cursors of the pages beside it (None: there is none)."""

    items: tuple[EventSummary, ...]
    #: The page of older events.
    next_cursor: str | None
    #: The page of newer events.
    previous_cursor: str | None
    #: Events stored but not yet in the search index (counted for a search only; of
    #: every workspace): a search does not find them yet.
    unindexed: int = 0
