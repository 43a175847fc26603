"""Finding webhook events: a workspace's events filtered, searched and paged, for every door.

The admin API, the CLI and the dashboard all take the same filters as text
typed by a person (``since=24h``, ``q=deploy failed``) and call
:func:`find_events`, which reads them (:mod:`agentws.domain.event_lists`,
:mod:`agentws.domain.event_text`), brings the search index up to date when
there is a search (:func:`~agentws.webhooks.event_index.catch_up`), and reads
one page from the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agentws.domain.event_lists import DEFAULT_PAGE, Cursor, EventPage, EventQuery, parse_time
from agentws.domain.event_text import parse_search
from agentws.domain.models import EventStatus, Webhook
from agentws.domain.rules import utcnow
from agentws.store.sql_event_search import EventSearchStore
from agentws.store.sql_records import RecordStore
from agentws.webhooks.event_index import catch_up

__all__ = ["find_events"]


class _Store(RecordStore, EventSearchStore, Protocol):
    """The areas of the store this module uses."""


async def find_events(
    store: _Store,
    workspace_slug: str,
    *,
    webhook: Webhook | None = None,
    status: EventStatus | None = None,
    since: str | None = None,
    until: str | None = None,
    search: str | None = None,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
    now: datetime | None = None,
) -> EventPage:
    """One page of a workspace's events, newest first.

    Args:
        webhook: only this webhook's events (it must be of the workspace).
        status: only events in this state.
        since, until: only events received at or after ``since`` and before
            ``until``: ISO 8601, or a span before ``now`` (``24h``, ``7d``).
        search: only events whose text matches (see :mod:`agentws.domain.event_text`).
        limit: events a page holds, 1 to 200.
        cursor: the ``next_cursor`` or ``previous_cursor`` of a page of the same list.

    Returns:
        The page; ``unindexed`` says how many events a search could not look at yet.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for a filter that cannot be read;
        :class:`~agentws.core.errors.NotFoundError` for an unknown workspace.
    """
    now = now or utcnow()
    workspace = await store.workspace_by_slug(workspace_slug)
    query = EventQuery(
        workspace_id=workspace.id,
        webhook_id=webhook.id if webhook is not None else None,
        status=status,
        since=parse_time(since, now=now, name="since") if since else None,
        until=parse_time(until, now=now, name="until") if until else None,
        search=parse_search(search) if search and search.strip() else None,
        limit=limit,
        cursor=Cursor.decode(cursor) if cursor else None,
    )
    if query.search is not None:
        await catch_up(store)
    return await store.event_page(query)
