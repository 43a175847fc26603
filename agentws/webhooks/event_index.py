"""EventIndexer: fills the events' search index in the background, in the service's nursery.

The webhook door's commit stores an event and nothing more (on PostgreSQL it
also notes it in a queue): tokenizing a body there would cost every
delivery's acknowledgement (measured on SQLite: 12 µs a row alone, 50 µs
with an FTS5 row made in a trigger). The indexer adds stored events to the
index afterwards (:meth:`~agentws.store.sql_event_search.EventSearchStore.index_events`), a batch
at a time, in short transactions of their own.

Deliveries come first: while they queue for their commit (the door is
busy), the indexer takes one small batch every few seconds only, so a
search still catches up eventually and the door's writer is not held up.
Otherwise it looks for new events every second, and takes batch after batch
until none is left.

A search does not wait for it: :func:`catch_up` indexes what is left (up to
a bound) before searching, so a search by the CLI or a process without the
service finds every event, and one made during a long burst the events up
to the bound.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import trio

from agentws.core.errors import StoreError
from agentws.store.sql_event_search import EventSearchStore

__all__ = ["BUSY_BATCH_EVENTS", "SEARCH_CATCH_UP", "EventIndexer", "catch_up"]

log = logging.getLogger("agentws.webhooks")

#: Events one indexing transaction takes at most, and bytes of their bodies: one
#: transaction holds the SQLite writer for milliseconds, not longer.
BATCH_EVENTS = 100
BATCH_BYTES = 512 * 1024
#: Events a search indexes first at most; more are left to the indexer (the page
#: says how many it could not find yet).
SEARCH_CATCH_UP = 5_000
#: How often the indexer looks for new events when it has caught up.
POLL_S = 1.0
#: While the door is busy: one batch this often, this big.
BUSY_PAUSE_S = 5.0
BUSY_BATCH_EVENTS = 50
# After a store error, wait this long.
_STORE_PAUSE_S = 2.0


async def catch_up(store: EventSearchStore, *, most: int = SEARCH_CATCH_UP) -> int:
    """Index stored events not yet in the search index, ``most`` at most; how many.

    Error handling:
        The store's :class:`~agentws.core.errors.StoreError`.
    """
    done = 0
    while done < most:
        added = await store.index_events(
            limit=min(BATCH_EVENTS, most - done), max_bytes=BATCH_BYTES
        )
        if not added:
            break
        done += added
    return done


@attrs.define(eq=False)
class EventIndexer:
    """Adds stored events to the search index until closed."""

    store: EventSearchStore
    #: Whether deliveries are queueing at the door: then indexing takes a back seat.
    door_busy: Callable[[], bool] = attrs.field(default=lambda: False, kw_only=True)
    poll_s: float = attrs.field(default=POLL_S, kw_only=True)
    busy_pause_s: float = attrs.field(default=BUSY_PAUSE_S, kw_only=True)
    _closed: trio.Event = attrs.field(factory=trio.Event, init=False)

    def close(self) -> None:
        """Index nothing more (a batch under way ends)."""
        self._closed.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Index until :meth:`close`; a failing round is logged and tried again."""
        task_status.started()
        while not self._closed.is_set():
            pause = self.poll_s
            try:
                if self.door_busy():
                    await self.store.index_events(limit=BUSY_BATCH_EVENTS, max_bytes=BATCH_BYTES)
                    pause = self.busy_pause_s
                else:
                    await self._index_all()
            except StoreError as exc:
                log.warning("cannot index webhook events for search: %s", exc.message)
                pause = _STORE_PAUSE_S
            with trio.move_on_after(pause):
                await self._closed.wait()

    async def _index_all(self) -> None:
        """Batch after batch until none is left, the door gets busy, or :meth:`close`."""
        while not self._closed.is_set() and not self.door_busy():
            if not await self.store.index_events(limit=BATCH_EVENTS, max_bytes=BATCH_BYTES):
                return
