"""The event queue and the local chat channels, in SQL (a part of :class:`SqlStore`).

The queue is a table: an event is ``queued`` (and available from
``available_at``), then ``running`` under a lease (an owner and an expiry),
then ``done`` or ``failed``, or ``queued`` again for a retry. Every change of
state is one conditional ``UPDATE``, so two claimers never both get an event
and a worker whose lease was taken over cannot finish it. A lease that
expires (its process died) makes the event claimable again. Finishing an
event also counts (or ends) its webhook's failure streak, in the same
transaction (:mod:`.sql_streaks`).

Claims are fair between webhooks: the free slots go round the webhooks with
work, those with the fewest runs under way first. A webhook never gets more
than its ``concurrency``, counting its events that hold a live lease
anywhere, and a webhook with concurrency 1 runs its events strictly in
arrival order (the oldest unfinished one blocks the rest, even while it
waits for a retry).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from datetime import datetime
from itertools import chain, zip_longest
from typing import TYPE_CHECKING, Any

import outcome
import trio

from agentws.domain.deliveries import Ingested, IngestOutcome
from agentws.domain.models import ChatMessage, Event, EventAttempt, EventStatus, Webhook
from agentws.errors import NotFoundError
from agentws.store.sql_streaks import streak_statements
from agentws.store.tables import Dialect, table_for

if TYPE_CHECKING:
    from agentws.store.database import Database, Row

__all__ = ["EventQueries"]

_QUEUED, _RUNNING = EventStatus.QUEUED.value, EventStatus.RUNNING.value
# An event that can be claimed at $1: queued and due, or running on a dead lease.
_CLAIMABLE = (
    f"((status = '{_QUEUED}' AND available_at <= $1)"
    f" OR (status = '{_RUNNING}' AND lease_expires_at <= $1))"
)


@functools.cache
def _ingest_sql(dialect: Dialect) -> tuple[str, Any]:
    """The insert of a delivery's event (made once), and how ``active`` is written."""
    table = table_for(Event)
    count = len(table.columns)
    marks = ", ".join(f"${i}" for i in range(1, count + 1))
    # The URL generation the delivery came through must still be valid when
    # it is stored: the current one, or the previous one within its grace
    # (received_at is the instant that counts). None: not a delivery to the URL.
    # So must the secret generation that verified it (None: no secret checked).
    received = f"${table.columns.index('received_at') + 1}"

    def valid(column: str, prefix: str) -> str:
        mark = f"${table.columns.index(column) + 1}"
        return (
            f" AND (CAST({mark} AS INTEGER) IS NULL OR {prefix}_generation = {mark}"
            f" OR ({prefix}_generation = {mark} + 1 AND previous_{prefix}_until > {received}))"
        )

    insert = (
        f"INSERT INTO events ({', '.join(table.columns)}) SELECT {marks}"
        " WHERE EXISTS (SELECT 1 FROM webhooks"
        f" WHERE id = ${count + 1} AND active = ${count + 2}"
        + valid("url_generation", "token")
        + valid("secret_generation", "secret")
        + ") ON CONFLICT (webhook_id, dedup_key) DO NOTHING"
    )
    return insert, table_for(Webhook).encode_value("active", True, dialect)


def _valid(
    generation: int | None, prefix: str, webhook: Row, event: Event, dialect: Dialect
) -> bool:
    """Whether the URL (``token``) or ``secret`` generation an event came through is valid
    when it was received, as the insert checks it."""
    current = webhook[f"{prefix}_generation"]
    if generation is None or current == generation:
        return True
    until = webhook[f"previous_{prefix}_until"]
    if current != generation + 1 or until is None:
        return False
    column = f"previous_{prefix}_until"
    return bool(table_for(Webhook).decode_value(column, until, dialect) > event.received_at)


def _inserted(result: outcome.Outcome[int]) -> outcome.Outcome[bool]:
    """Whether an ingest insert stored its row (a failed foreign key: it did not)."""
    try:
        return outcome.Value(bool(result.unwrap()))
    except NotFoundError:
        # A webhook deleted in between, where the database does not see it.
        return outcome.Value(False)
    except Exception as exc:
        return outcome.Error(exc)


class EventQueries:
    """Queue and channel queries; mixed into :class:`~agentws.store.sql.SqlStore`."""

    _db: Database

    @property
    def dialect(self) -> Dialect:
        return self._db.dialect

    def _ts(self, value: datetime) -> Any:
        return table_for(Event).encode_value("received_at", value, self.dialect)

    def _events(self, rows: list[Row]) -> list[Event]:
        table = table_for(Event)
        return [table.decode(row, self.dialect) for row in rows]

    def ingest_nowait(self, event: Event, answer: Callable[[outcome.Outcome[bool]], None]) -> None:
        # Stored only while its webhook exists and is active, checked in the
        # transaction that stores it: a delivery racing a delete or a
        # deactivation is refused, never stored for a webhook that is gone.
        # A key already taken makes the insert do nothing too: the event is
        # then a redelivery (or a conflict), which not_ingested tells apart.
        insert, active = _ingest_sql(self.dialect)
        self._db.execute_grouped_nowait(
            insert,
            [*table_for(Event).encode(event, self.dialect), event.webhook_id, active],
            lambda result: answer(_inserted(result)),
        )

    async def not_ingested(self, event: Event, *, dedup_since: datetime) -> Ingested:
        """Why an event was not stored: its webhook, or a key already taken."""
        insert, active = _ingest_sql(self.dialect)
        webhooks = await self._db.fetch(
            "SELECT active, token_generation, previous_token_until, secret_generation,"
            " previous_secret_until FROM webhooks WHERE id = $1",
            event.webhook_id,
        )
        if not webhooks or not _valid(
            event.url_generation, "token", webhooks[0], event, self.dialect
        ):
            return Ingested(IngestOutcome.GONE)
        if webhooks[0]["active"] != active:
            return Ingested(IngestOutcome.INACTIVE)
        if not _valid(event.secret_generation, "secret", webhooks[0], event, self.dialect):
            return Ingested(IngestOutcome.UNVERIFIED)
        table = table_for(Event)
        found = await self._db.fetch(
            "SELECT id, body_hash, received_at FROM events"
            " WHERE webhook_id = $1 AND dedup_key = $2",
            event.webhook_id,
            event.dedup_key,
        )
        if not found:
            return Ingested(IngestOutcome.GONE)
        first = found[0]
        received_at = table.decode_value("received_at", first["received_at"], self.dialect)
        if received_at < dedup_since:
            # The key's window is over: the old event lets go of it.
            _, stored = await self._db.execute_batch(
                [
                    (
                        "UPDATE events SET dedup_key = NULL WHERE id = $1 AND received_at < $2",
                        (first["id"], self._ts(dedup_since)),
                    ),
                    (insert, [*table.encode(event, self.dialect), event.webhook_id, active]),
                ]
            )
            if stored:
                return Ingested(IngestOutcome.ACCEPTED, event.id)
        if first["body_hash"] == event.body_hash:
            return Ingested(IngestOutcome.DUPLICATE, first["id"])
        return Ingested(IngestOutcome.CONFLICT, first["id"])

    async def ingest_events(self, events: list[Event], *, dedup_since: datetime) -> list[Ingested]:
        inserted: list[outcome.Outcome[bool] | None] = [None] * len(events)
        left = len(events)
        all_answered = trio.Event()

        def answer_for(n: int) -> Callable[[outcome.Outcome[bool]], None]:
            def answer(result: outcome.Outcome[bool]) -> None:
                nonlocal left
                inserted[n], left = result, left - 1
                if not left:
                    all_answered.set()

            return answer

        for n, event in enumerate(events):
            self.ingest_nowait(event, answer_for(n))
        if events:
            await all_answered.wait()
        results: list[Ingested] = []
        for event, result in zip(events, inserted, strict=True):
            if result is not None and result.unwrap():
                results.append(Ingested(IngestOutcome.ACCEPTED, event.id))
            else:
                results.append(await self.not_ingested(event, dedup_since=dedup_since))
        return results

    async def claim_events(
        self, *, owner: str, now: datetime, lease_expires_at: datetime, limit: int
    ) -> list[Event]:
        if limit < 1:
            return []
        at = self._ts(now)
        # Per webhook, not per event: a backlog of thousands costs index
        # lookups here, not a scan of the queue at every claim.
        rows = await self._db.fetch(
            "SELECT w.id AS webhook_id, w.concurrency,"
            " (SELECT COUNT(*) FROM events e WHERE e.webhook_id = w.id"
            f" AND e.status = '{_RUNNING}' AND e.lease_expires_at > $1) AS busy,"
            " (SELECT MIN(e.received_at) FROM events e WHERE e.webhook_id = w.id"
            f" AND e.status = '{_QUEUED}') AS oldest"
            " FROM webhooks w WHERE EXISTS (SELECT 1 FROM events e WHERE e.webhook_id = w.id"
            f" AND e.status IN ('{_QUEUED}', '{_RUNNING}'))"
            # Webhooks with fewer runs under way first: a free slot goes to the
            # webhook that has least, not to the one with the oldest backlog.
            " ORDER BY busy, oldest, w.id",
            at,
        )
        if self.dialect == "postgres":
            return await self._claim_skipping_locked(rows, owner, now, lease_expires_at, limit)
        per_webhook: list[list[str]] = []
        for row in rows:
            free = int(row["concurrency"]) - int(row["busy"])
            if free < 1:
                continue
            if int(row["concurrency"]) == 1:
                ids = await self._strict_head(row["webhook_id"], at)
            else:
                ids = await self._candidates(row["webhook_id"], at, min(free, limit))
            if ids:
                per_webhook.append(ids)
        # One from each webhook in turn: a busy webhook cannot take every slot.
        chosen = [i for i in chain.from_iterable(zip_longest(*per_webhook)) if i][:limit]
        if not chosen:
            return []
        # A lost claim is a lease nobody holds, which expires: no need to flush.
        counts = await self._db.execute_batch(
            [
                (
                    f"UPDATE events SET status = '{_RUNNING}', lease_owner = $2,"
                    " lease_expires_at = $3, attempts = attempts + 1,"
                    " started_at = COALESCE(started_at, $1)"
                    f" WHERE id = $4 AND {_CLAIMABLE}",
                    (at, owner, self._ts(lease_expires_at), event_id),
                )
                for event_id in chosen
            ],
            durable=False,
        )
        claimed = [event_id for event_id, n in zip(chosen, counts, strict=True) if n]
        if not claimed:
            return []
        table = table_for(Event)
        marks = ", ".join(f"${i}" for i in range(2, len(claimed) + 2))
        found_rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM events"
            f" WHERE lease_owner = $1 AND id IN ({marks})",
            owner,
            *claimed,
        )
        by_id = {e.id: e for e in self._events(found_rows)}
        return [by_id[i] for i in claimed if i in by_id]

    async def _claim_skipping_locked(
        self,
        rows: list[Row],
        owner: str,
        now: datetime,
        lease_expires_at: datetime,
        limit: int,
    ) -> list[Event]:
        """PostgreSQL's claim: candidates locked ``FOR UPDATE SKIP LOCKED``, leased, in one
        transaction.

        Instances claiming at once lock different events instead of all
        choosing the same oldest ones and all but one losing them. A webhook
        that runs one event at a time is claimed only at its head: if another
        claimer holds the head, the webhook is skipped this round (taking the
        next event would break its order).
        """
        table = table_for(Event)
        claimable = f"webhook_id = $1 AND {_CLAIMABLE.replace('$1', '$2')}"
        # A lost claim is a lease nobody holds, which expires: no need to flush.
        async with self._db.transaction(durable=False) as tx:
            per_webhook: list[list[str]] = []
            for row in rows:
                free = int(row["concurrency"]) - int(row["busy"])
                if free < 1:
                    continue
                if int(row["concurrency"]) == 1:
                    head = await self._strict_head(row["webhook_id"], self._ts(now))
                    locked = (
                        await tx.fetch(
                            f"SELECT id FROM events WHERE id = $3 AND {claimable}"
                            " FOR UPDATE SKIP LOCKED",
                            row["webhook_id"],
                            now,
                            head[0],
                        )
                        if head
                        else []
                    )
                else:
                    # Queued, then expired leases: each query walks the index in order.
                    take = min(free, limit)
                    both = [
                        found
                        for status, due in (
                            (_QUEUED, "available_at"),
                            (_RUNNING, "lease_expires_at"),
                        )
                        for found in await tx.fetch(
                            "SELECT id, received_at FROM events WHERE webhook_id = $1"
                            f" AND status = '{status}' AND {due} <= $2"
                            f" ORDER BY received_at, id LIMIT {take} FOR UPDATE SKIP LOCKED",
                            row["webhook_id"],
                            now,
                        )
                    ]
                    locked = sorted(both, key=self._arrival)[:take]
                if locked:
                    per_webhook.append([r["id"] for r in locked])
            # One from each webhook in turn: a busy webhook cannot take every slot.
            chosen = [i for i in chain.from_iterable(zip_longest(*per_webhook)) if i][:limit]
            if not chosen:
                return []
            leased = await tx.fetch(
                f"UPDATE events SET status = '{_RUNNING}', lease_owner = $2,"
                " lease_expires_at = $3, attempts = attempts + 1,"
                " started_at = COALESCE(started_at, $1)"
                f" WHERE id = ANY($4::text[]) RETURNING {', '.join(table.columns)}",
                now,
                owner,
                lease_expires_at,
                chosen,
            )
        by_id = {e.id: e for e in self._events(leased)}
        return [by_id[i] for i in chosen if i in by_id]

    async def _candidates(self, webhook_id: str, at: Any, limit: int) -> list[str]:
        """The webhook's claimable events, oldest first, at most ``limit``.

        Two queries, each walking the (webhook, status, received_at) index in
        order and stopping at ``limit``: the queue behind them is not read.
        """
        queued = await self._db.fetch(
            "SELECT id, received_at FROM events WHERE webhook_id = $1 AND status = $2"
            f" AND available_at <= $3 ORDER BY received_at, id LIMIT {int(limit)}",
            webhook_id,
            _QUEUED,
            at,
        )
        lost = await self._db.fetch(
            "SELECT id, received_at FROM events WHERE webhook_id = $1 AND status = $2"
            f" AND lease_expires_at <= $3 ORDER BY received_at, id LIMIT {int(limit)}",
            webhook_id,
            _RUNNING,
            at,
        )
        both = sorted([*queued, *lost], key=self._arrival)
        return [r["id"] for r in both[:limit]]

    def _arrival(self, row: Row) -> tuple[datetime, str]:
        when = table_for(Event).decode_value("received_at", row["received_at"], self.dialect)
        return when, str(row["id"])

    async def _strict_head(self, webhook_id: str, at: Any) -> list[str]:
        """The webhook's oldest unfinished event if it may run now: it blocks the rest."""
        heads = [
            row
            for status in (_QUEUED, _RUNNING)
            for row in await self._db.fetch(
                f"SELECT id, received_at, {_CLAIMABLE.replace('$1', '$3')} AS ready"
                " FROM events WHERE webhook_id = $1 AND status = $2"
                " ORDER BY received_at, id LIMIT 1",
                webhook_id,
                status,
                at,
            )
        ]
        if not heads:
            return []
        oldest = min(heads, key=self._arrival)
        return [oldest["id"]] if oldest["ready"] else []

    async def webhooks_by_id(self, ids: Collection[str]) -> dict[str, Webhook]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        table = table_for(Webhook)
        marks = ", ".join(f"${i}" for i in range(1, len(wanted) + 1))
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM webhooks WHERE id IN ({marks})", *wanted
        )
        found = [table.decode(row, self.dialect) for row in rows]
        return {webhook.id: webhook for webhook in found}

    async def next_event_due(self, now: datetime) -> datetime | None:
        at = self._ts(now)
        rows = await self._db.fetch(
            "SELECT MIN(due) AS due FROM ("
            f" SELECT MIN(available_at) AS due FROM events WHERE status = '{_QUEUED}'"
            " AND available_at > $1"
            f" UNION ALL SELECT MIN(lease_expires_at) FROM events WHERE status = '{_RUNNING}'"
            ") AS dues",
            at,
        )
        due: datetime | None = table_for(Event).decode_value(
            "available_at", rows[0]["due"] if rows else None, self.dialect
        )
        return due

    async def finish_event(
        self,
        event_id: str,
        *,
        owner: str,
        status: EventStatus,
        now: datetime,
        error: str | None = None,
        message_id: str | None = None,
        available_at: datetime | None = None,
        give_back_attempt: bool = False,
        attempt: EventAttempt | None = None,
    ) -> bool:
        finished = self._ts(now) if status.finished else None
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if attempt is not None:
            table = table_for(EventAttempt)
            count = len(table.columns)
            marks = ", ".join(f"${i}" for i in range(1, count + 1))
            # Recorded only by the lease's holder, in the transaction that
            # ends its lease: an event taken over (or deleted with its
            # webhook) keeps the attempts of those that finished it.
            statements.append(
                (
                    f"INSERT INTO event_attempts ({', '.join(table.columns)}) SELECT {marks}"
                    f" WHERE EXISTS (SELECT 1 FROM events WHERE id = ${count + 1}"
                    f" AND lease_owner = ${count + 2} AND status = '{_RUNNING}')",
                    (*table.encode(attempt, self.dialect), event_id, owner),
                )
            )
        # The webhook's failure streak, in the same transaction (see sql_streaks).
        statements += streak_statements(self.dialect, event_id, owner, status, now, error)
        statements.append(
            (
                "UPDATE events SET status = $3, error = $4,"
                " message_id = COALESCE($5, message_id),"
                " available_at = COALESCE($6, available_at),"
                " lease_owner = NULL, lease_expires_at = NULL, finished_at = $7,"
                " attempts = attempts - $8"
                f" WHERE id = $1 AND lease_owner = $2 AND status = '{_RUNNING}'",
                (
                    event_id,
                    owner,
                    status.value,
                    error,
                    message_id,
                    self._ts(available_at) if available_at is not None else None,
                    finished,
                    1 if give_back_attempt else 0,
                ),
            )
        )
        # Not flushed: after a power loss the event runs again, and its message
        # (posted with the same care) is gone with it, or found and not posted twice.
        counts = await self._db.execute_batch(statements, durable=False)
        return bool(counts[-1])

    async def post_chat_message(self, message: ChatMessage) -> ChatMessage:
        table = table_for(ChatMessage)
        marks = ", ".join(f"${i}" for i in range(1, len(table.columns) + 1))
        (inserted,) = await self._db.execute_batch(
            [
                (
                    f"INSERT INTO chat_messages ({', '.join(table.columns)}) VALUES ({marks})"
                    " ON CONFLICT (event_id) DO NOTHING",
                    tuple(table.encode(message, self.dialect)),
                )
            ],
            durable=False,
        )
        if inserted or message.event_id is None:
            return message
        rows = await self._db.fetch(
            f"SELECT {', '.join(table.columns)} FROM chat_messages WHERE event_id = $1",
            message.event_id,
        )
        posted: ChatMessage = table.decode(rows[0], self.dialect)
        return posted

    async def recent_events(
        self,
        workspace_id: str,
        *,
        limit: int,
        webhook_id: str | None = None,
        status: EventStatus | None = None,
    ) -> list[Event]:
        columns = ", ".join(table_for(Event).columns)
        newest = f"ORDER BY received_at DESC, id DESC LIMIT {max(1, int(limit))}"
        if webhook_id is None:
            # The received_at index walked newest first, stopping at the limit; not every
            # event of the workspace read and sorted (SQLite's planner, with no statistics,
            # would pick the webhook_id index: the unary + keeps it from that).
            plus = "+" if self.dialect == "sqlite" else ""
            where = f"{plus}webhook_id IN (SELECT id FROM webhooks WHERE workspace_id = $1)"
            args: list[Any] = [workspace_id]
            if status is not None:
                args.append(status.value)
                where += " AND status = $2"
            sql = f"SELECT {columns} FROM events WHERE {where} {newest}"
        else:
            # One webhook's newest: the newest of each status, each read in order from
            # the (webhook_id, status, received_at) index, then merged; not every event
            # of the webhook read and sorted (100 ms with 50,000 of them).
            statuses = [status] if status is not None else list(EventStatus)
            ours = "EXISTS (SELECT 1 FROM webhooks WHERE id = $2 AND workspace_id = $1)"
            parts = [
                f"SELECT {columns} FROM (SELECT {columns} FROM events WHERE webhook_id = $2"
                f" AND status = ${n + 3} AND {ours} {newest}) AS s{n}"
                for n in range(len(statuses))
            ]
            args = [workspace_id, webhook_id, *(s.value for s in statuses)]
            sql = " UNION ALL ".join(parts) + f" {newest}"
        return self._events(await self._db.fetch(sql, *args))

    async def channel_messages(
        self,
        workspace_id: str,
        channel: str,
        *,
        limit: int,
        after: ChatMessage | None = None,
    ) -> list[ChatMessage]:
        table = table_for(ChatMessage)
        columns = ", ".join(table.columns)
        args: list[Any] = [workspace_id, channel]
        if after is None:
            sql = (
                f"SELECT {columns} FROM chat_messages WHERE workspace_id = $1 AND channel = $2"
                f" ORDER BY created_at DESC, id DESC LIMIT {max(1, int(limit))}"
            )
        else:
            args += [self._ts(after.created_at), after.id]
            sql = (
                f"SELECT {columns} FROM chat_messages WHERE workspace_id = $1 AND channel = $2"
                " AND (created_at > $3 OR (created_at = $3 AND id > $4))"
                f" ORDER BY created_at, id LIMIT {max(1, int(limit))}"
            )
        rows = await self._db.fetch(sql, *args)
        messages: list[ChatMessage] = [table.decode(row, self.dialect) for row in rows]
        return messages if after is not None else messages[::-1]
