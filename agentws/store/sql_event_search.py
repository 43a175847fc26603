"""Lists of webhook events and their full-text index, in SQL (a part of :class:`SqlStore`).

A list (:meth:`event_page`) is a keyset scan, newest first, over
``(received_at, id)``: the filters are conditions on ``events``, and a
search is one more, the events whose words match (SQLite: the FTS5 table
``event_search``; PostgreSQL: the ``tsvector`` of ``event_search``, see
migration 0022). The words are made in Python (:mod:`agentws.domain.event_text`),
and a search is written here in each index's syntax from its parsed parts,
never passed through as query syntax.

The index is filled after an event is stored, not in the transaction that
stores it (:meth:`index_events`, called by the service's indexer and before
a search): the webhook door's group commit pays nothing on SQLite, and on
PostgreSQL one small insert into a queue. Which events wait to be indexed:

- SQLite: those whose rowid is above the highest rowid in the index. There
  is one writer, so rowids are given in commit order, and the index is
  filled in rowid order; a deleted event leaves the index with it (a
  trigger), so a freed rowid given again is above the indexed ones again.
  Indexing reads without the write lock and writes each row only if it is
  still missing and its event is still the one read, so two indexers (the
  service and a CLI search) never index an event twice.
- PostgreSQL: those in ``event_search_queue``, filled by a trigger on insert.
  An indexer takes a batch ``FOR UPDATE SKIP LOCKED`` (instances share the
  work), stores their vectors and deletes them from the queue, in one
  transaction.

Indexing commits are not flushed: the index and what says which events it
holds are lost together (and made again) or kept together.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentws.domain.event_lists import Cursor, EventPage, EventQuery, EventSummary
from agentws.domain.event_text import MAX_SCANNED_BYTES, Search, event_words
from agentws.domain.models import Event, EventStatus
from agentws.store.queries import Queries, page_cursors
from agentws.store.tables import table_for

if TYPE_CHECKING:
    from agentws.store.database import Row
    from agentws.store.tables import Dialect

__all__ = ["EventSearchQueries", "EventSearchStore"]

_SUMMARY = (
    "e.id, e.webhook_id, e.status, e.attempts, e.error, e.message_id, e.dedup_key,"
    " e.replay_of, e.received_at, e.finished_at, e.url_generation, e.secret_generation"
)
_SIZE = {"sqlite": "length(e.body)", "postgres": "octet_length(e.body)"}
_MATCHING = {
    # The unary + keeps SQLite from looking each match up by rowid and sorting them
    # all (about 1 µs a match): it walks the list's index instead, probing the
    # matches (about 80 ns an event), and stops at the page's end.
    "sqlite": "+e.rowid IN (SELECT rowid FROM event_search WHERE event_search MATCH {})",
    "postgres": "e.id IN (SELECT event_id FROM event_search WHERE words @@ CAST({} AS tsquery))",
}


def fts5_match(search: Search) -> str:
    """``search`` as an FTS5 query: each part a quoted phrase, all of them required."""
    return " AND ".join(
        f'"{" ".join(part.words)}"' + ("*" if part.prefix else "") for part in search.parts
    )


def tsquery(search: Search) -> str:
    """``search`` as a ``tsquery`` literal: phrases of quoted lexemes, all of them required."""
    phrases = []
    for part in search.parts:
        lexemes = [f"'{word}'" for word in part.words]
        if part.prefix:
            lexemes[-1] += ":*"
        phrases.append("(" + " <-> ".join(lexemes) + ")")
    return " & ".join(phrases)


def tsvector(words: Sequence[str]) -> str:
    """``words`` as a ``tsvector`` literal, each with its positions (from 1).

    The words are letters and digits only (:func:`~agentws.domain.event_text.words_of`),
    so none needs quoting beyond its quotes. PostgreSQL keeps 256 positions of a word.
    """
    positions: dict[str, list[str]] = defaultdict(list)
    for n, word in enumerate(words, start=1):
        positions[word].append(str(n))
    return " ".join(f"'{word}':{','.join(at)}" for word, at in positions.items())


# The text depends on which filters are set, the direction and the limit only.
@functools.lru_cache(maxsize=256)
def _page_sql(
    dialect: Dialect, clauses: tuple[str, ...], ascending: bool, limit: int, index: str
) -> str:
    order = "ASC" if ascending else "DESC"
    # SQLite is told which index to walk (it keeps the order of a CROSS JOIN, events
    # first): one that holds the list's order, so a page reads its rows in order and
    # stops at the limit (ties of received_at are sorted by id as they come). Left to
    # itself, without statistics, it picks the webhook's unique index and sorts every
    # event of the webhook. The indexes are migration 0006's: a new one would change
    # the plans of the queue's claims too.
    indexed = f" INDEXED BY {index}" if dialect == "sqlite" else ""
    return (
        f"SELECT {_SUMMARY}, {_SIZE[dialect]} AS body_bytes"
        f" FROM events e{indexed} CROSS JOIN webhooks w"
        f" WHERE w.id = e.webhook_id AND {' AND '.join(clauses)}"
        f" ORDER BY e.received_at {order}, e.id {order} LIMIT {int(limit)}"
    )


class EventSearchStore(Protocol):
    """Pages of events and their search index."""

    async def event_page(self, query: EventQuery) -> EventPage:
        """A page of a workspace's events, newest first, filtered and searched by ``query``.

        A search finds only events already indexed (:meth:`index_events`); the
        page says how many are not (:attr:`EventPage.unindexed`).
        """
        ...

    async def index_events(self, *, limit: int, max_bytes: int) -> int:
        """Add up to ``limit`` stored events not yet in the search index to it, as many as
        ``max_bytes`` of their bodies allow (at least one); how many were taken.

        Committed without a flush to disk. Safe to run in several processes at
        once: no event is indexed twice.
        """
        ...

    async def unindexed_events(self) -> int:
        """How many stored events (of every workspace) are not yet in the search index."""
        ...


class EventSearchQueries(Queries):
    """Event lists and the search index; mixed into :class:`~agentws.store.sql.SqlStore`."""

    # --- lists ---------------------------------------------------------------------------

    async def event_page(self, query: EventQuery) -> EventPage:
        cursor = query.cursor
        # Forward is the list's own order, newest first: toward older events.
        forward = cursor is None or cursor.forward
        rows = await self._scan_events(query, cursor, older=forward, limit=query.limit + 1)
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        if not forward:
            rows.reverse()
        items = tuple(self._event_summary(row) for row in rows)
        first = Cursor(items[0].received_at, items[0].id) if items else cursor
        last = Cursor(items[-1].received_at, items[-1].id) if items else cursor

        async def beyond(key: Cursor, older: bool) -> bool:
            return bool(await self._scan_events(query, key, older=older, limit=1))

        cursors = await page_cursors(
            first, last, more=more, forward=forward, from_cursor=cursor is not None, beyond=beyond
        )
        unindexed = await self.unindexed_events() if query.search is not None else 0
        return EventPage(items, *cursors, unindexed=unindexed)

    async def _scan_events(
        self, query: EventQuery, key: Cursor | None, *, older: bool, limit: int
    ) -> list[Row]:
        """Rows of ``query`` beyond ``key`` (older or newer), nearest first."""
        table = table_for(Event)

        def ts(value: Any) -> Any:
            return table.encode_value("received_at", value, self.dialect)

        args: list[Any] = [query.workspace_id]
        clauses = ["w.workspace_id = $1"]

        def where(template: str, *values: Any) -> None:
            marks = [f"${len(args) + i}" for i in range(1, len(values) + 1)]
            args.extend(values)
            clauses.append(template.format(*marks))

        if query.webhook_id is not None:
            where("e.webhook_id = {}", query.webhook_id)
        if query.status is not None:
            where("e.status = {}", query.status.value)
        if query.since is not None:
            where("e.received_at >= {}", ts(query.since))
        if query.until is not None:
            where("e.received_at < {}", ts(query.until))
        if query.search is not None:
            sqlite = self.dialect == "sqlite"
            match = fts5_match(query.search) if sqlite else tsquery(query.search)
            where(_MATCHING[self.dialect], match)
        if key is not None:
            # Beyond the key in (received_at, id) order, written as a range of
            # received_at (which the index walk starts from) and a test of the ties.
            past = "<" if older else ">"
            where(
                f"e.received_at {past}= {{0}}"
                f" AND (e.received_at {past} {{0}} OR e.id {past} {{1}})",
                ts(key.created_at),
                key.id,
            )
        # One webhook's events in one state are a range of (webhook, status, received_at).
        both = query.webhook_id is not None and query.status is not None
        index = "events_webhook_status" if both else "events_received"
        sql = _page_sql(self.dialect, tuple(clauses), not older, limit, index)
        return await self._db.fetch(sql, *args)

    def _event_summary(self, row: Row) -> EventSummary:
        table = table_for(Event)

        def at(column: str) -> Any:
            return table.decode_value(column, row[column], self.dialect)

        return EventSummary(
            id=row["id"],
            webhook_id=row["webhook_id"],
            status=EventStatus(row["status"]),
            attempts=int(row["attempts"]),
            error=row["error"],
            message_id=row["message_id"],
            dedup_key=row["dedup_key"],
            replay_of=row["replay_of"],
            received_at=at("received_at"),
            finished_at=at("finished_at"),
            body_bytes=int(row["body_bytes"]),
            url_generation=row["url_generation"],
            secret_generation=row["secret_generation"],
        )

    # --- the index -----------------------------------------------------------------------

    async def unindexed_events(self) -> int:
        if self.dialect == "sqlite":
            sql = (
                "SELECT count(*) AS n FROM events WHERE rowid > coalesce("
                "(SELECT rowid FROM event_search ORDER BY rowid DESC LIMIT 1), 0)"
            )
        else:
            sql = "SELECT count(*) AS n FROM event_search_queue"
        rows = await self._db.fetch(sql)
        return int(rows[0]["n"])

    async def index_events(self, *, limit: int, max_bytes: int) -> int:
        if self.dialect == "sqlite":
            return await self._index_sqlite(limit, max_bytes)
        return await self._index_postgres(limit, max_bytes)

    def _words(self, row: Row) -> list[str]:
        """The words of the event of ``row`` (its headers and the start of its body)."""
        headers = table_for(Event).decode_value("headers", row["headers"], self.dialect)
        return event_words(headers or {}, bytes(row["body"] or b""))

    async def _index_sqlite(self, limit: int, max_bytes: int) -> int:
        # Sizes first (the length of a blob is read without its pages), then the
        # bodies of those that fit: a batch never reads more than max_bytes of them.
        waiting = await self._db.fetch(
            "SELECT rowid AS r, min(length(body), $1) AS n FROM events WHERE rowid > coalesce("
            "(SELECT rowid FROM event_search ORDER BY rowid DESC LIMIT 1), 0)"
            f" ORDER BY rowid LIMIT {int(limit)}",
            MAX_SCANNED_BYTES,
        )
        taken = waiting[: _fitting([int(r["n"] or 0) for r in waiting], max_bytes)]
        if not taken:
            return 0
        rows = await self._db.fetch(
            "SELECT rowid AS r, id, headers, substr(body, 1, $1) AS body FROM events"
            " WHERE rowid BETWEEN $2 AND $3 ORDER BY rowid",
            MAX_SCANNED_BYTES,
            taken[0]["r"],
            taken[-1]["r"],
        )
        # Only if still missing, and only while the rowid is still that event's.
        insert = (
            "INSERT INTO event_search (rowid, words) SELECT $1, $2"
            " WHERE EXISTS (SELECT 1 FROM events WHERE rowid = $1 AND id = $3)"
            " AND NOT EXISTS (SELECT 1 FROM event_search WHERE rowid = $1)"
        )
        await self._db.execute_batch(
            [(insert, (row["r"], " ".join(self._words(row)), row["id"])) for row in rows],
            durable=False,
        )
        return len(rows)

    async def _index_postgres(self, limit: int, max_bytes: int) -> int:
        async with self._db.transaction(durable=False) as tx:
            waiting = await tx.fetch(
                "SELECT q.event_id AS id, least(octet_length(e.body), $1) AS n"
                " FROM (SELECT event_id FROM event_search_queue"
                f" LIMIT {int(limit)} FOR UPDATE SKIP LOCKED) q"
                " LEFT JOIN events e ON e.id = q.event_id",
                MAX_SCANNED_BYTES,
            )
            # Those left over stay queued (their locks end with the transaction).
            ids = [
                r["id"] for r in waiting[: _fitting([int(r["n"] or 0) for r in waiting], max_bytes)]
            ]
            if not ids:
                return 0
            rows = await tx.fetch(
                "SELECT id, headers, substring(body FROM 1 FOR $1) AS body FROM events"
                " WHERE id = ANY($2::text[])",
                MAX_SCANNED_BYTES,
                ids,
            )
            await tx.execute(
                "INSERT INTO event_search (event_id, words)"
                " SELECT u.id, CAST(u.words AS tsvector)"
                " FROM unnest($1::text[], $2::text[]) AS u (id, words)"
                " WHERE EXISTS (SELECT 1 FROM events WHERE id = u.id)"
                " ON CONFLICT (event_id) DO NOTHING",
                [row["id"] for row in rows],
                [tsvector(self._words(row)) for row in rows],
            )
            # Entries of events deleted meanwhile go too: there is nothing to index.
            await tx.execute("DELETE FROM event_search_queue WHERE event_id = ANY($1::text[])", ids)
        return len(ids)


def _fitting(sizes: Sequence[int], max_bytes: int) -> int:
    """How many of the first ``sizes`` fit in ``max_bytes`` together (at least one)."""
    total = 0
    for n, size in enumerate(sizes):
        total += size
        if n and total > max_bytes:
            return n
    return len(sizes)
