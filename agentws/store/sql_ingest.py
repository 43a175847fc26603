"""What the webhook door writes, in SQL (a part of :class:`~agentws.store.sql.SqlStore`):
deliveries' events and capturing drafts' samples.

Both go through the group commit of deliveries
(:meth:`~agentws.store.database.Database.execute_grouped_nowait`), never a
transaction of their own: one statement stores each, only while its webhook
is as it must be, checked in the transaction that stores it. An event needs
its webhook active, its key not taken, and the URL and secret generations it
came through still valid; a sample needs its webhook a draft that captures,
and the statement queued right behind it drops that webhook's samples beyond
the newest ``keep``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import outcome
import trio

from agentws.core.errors import NotFoundError
from agentws.domain.deliveries import Ingested, IngestOutcome
from agentws.domain.models import Event, Webhook, WebhookSample
from agentws.store.queries import Queries
from agentws.store.tables import Dialect, table_for

if TYPE_CHECKING:
    from agentws.store.database import Row

__all__ = ["IngestQueries", "IngestStore", "StoredAnswer"]

#: What a queued write calls in trio's thread once its commit is durable: with
#: whether its row was stored, or with the store's error.
StoredAnswer = Callable[[outcome.Outcome[bool]], None]

log = logging.getLogger("agentws.store")


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
    """Whether an insert of the door's stored its row (a failed foreign key: it did not)."""
    try:
        return outcome.Value(bool(result.unwrap()))
    except NotFoundError:
        # A webhook deleted in between, where the database does not see it.
        return outcome.Value(False)
    except Exception as exc:
        return outcome.Error(exc)


_TRIM = (
    "DELETE FROM webhook_samples WHERE webhook_id = $1 AND id NOT IN"
    " (SELECT id FROM webhook_samples WHERE webhook_id = $1"
    " ORDER BY received_at DESC, id DESC LIMIT $2)"
)


@functools.cache
def _capture_sql(dialect: Dialect) -> tuple[str, Any, Any]:
    """The insert of a sample (made once); how ``active`` false and ``capture`` true are written."""
    table = table_for(WebhookSample)
    count = len(table.columns)
    marks = ", ".join(f"${i}" for i in range(1, count + 1))
    insert = (
        f"INSERT INTO webhook_samples ({', '.join(table.columns)}) SELECT {marks}"
        " WHERE EXISTS (SELECT 1 FROM webhooks"
        f" WHERE id = ${count + 1} AND active = ${count + 2} AND capture = ${count + 3})"
    )
    webhooks = table_for(Webhook)
    return (
        insert,
        webhooks.encode_value("active", False, dialect),
        webhooks.encode_value("capture", True, dialect),
    )


class IngestStore(Protocol):
    """What the webhook door stores: deliveries' events and drafts' samples."""

    def ingest_nowait(self, event: Event, answer: StoredAnswer) -> None:
        """Queue a delivery's event for the next group commit of deliveries.

        Deliveries queued while a commit runs are stored together by the
        next one, which starts as soon as it ends: one durable commit for
        many requests. The event is stored only if its webhook exists and is
        active and no event of the webhook holds its ``dedup_key``: all
        checked in the transaction that stores it. Events are committed in
        the order they were queued.

        ``answer`` is called in trio's thread once the commit is durable:
        with True if the event was stored, False if not (then
        :meth:`not_ingested` says why), or with the store's error.

        Error handling:
            :class:`~agentws.core.errors.StoreUnavailableError`, at once, when the
            store is closing (nothing queued).
        """
        ...

    def capture_nowait(self, sample: WebhookSample, *, keep: int, answer: StoredAnswer) -> None:
        """Queue a capturing draft's sample for the next group commit of deliveries.

        Stored only if its webhook exists and is a draft that captures, checked
        in the transaction that stores it; then the webhook's samples beyond
        the newest ``keep`` are dropped. ``answer`` is called in trio's thread
        once both are durable: True if the sample was stored, False if not
        (the webhook is gone, active, or no longer captures), or the store's
        error.

        Error handling:
            :class:`~agentws.core.errors.StoreUnavailableError`, at once, when the
            store is closing.
        """
        ...

    async def not_ingested(self, event: Event, *, dedup_since: datetime) -> Ingested:
        """What became of an event :meth:`ingest_nowait` did not store.

        Its webhook ``gone`` (no longer exists) or ``inactive`` (a draft);
        or its ``dedup_key`` already held by an event of the webhook
        received since ``dedup_since``: a ``duplicate`` (same body hash) or
        a ``conflict`` (another body), with that first event's id. An older
        holder of the key lets go of it, and the event is stored after all
        (``accepted``).
        """
        ...

    async def ingest_events(self, events: list[Event], *, dedup_since: datetime) -> list[Ingested]:
        """Store deliveries with :meth:`ingest_nowait`; one answer per event, in order.

        An event not stored is answered as :meth:`not_ingested` says.
        Cancelled while waiting, the events may still be stored.
        """
        ...


class IngestQueries(Queries):
    """The door's writes; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def ingest_nowait(self, event: Event, answer: StoredAnswer) -> None:
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

        def answer_for(n: int) -> StoredAnswer:
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

    def capture_nowait(self, sample: WebhookSample, *, keep: int, answer: StoredAnswer) -> None:
        insert, draft, capturing = _capture_sql(self._db.dialect)
        row = table_for(WebhookSample).encode(sample, self._db.dialect)
        stored: list[outcome.Outcome[bool]] = []
        self._db.execute_grouped_nowait(
            insert,
            [*row, sample.webhook_id, draft, capturing],
            lambda r: stored.append(_inserted(r)),
        )

        def trimmed(result: outcome.Outcome[int]) -> None:
            # Answered once the trim behind it is committed too (statements are
            # committed in order): the caller then sees at most ``keep`` samples.
            if isinstance(result, outcome.Error):
                log.warning(
                    "old samples of webhook %s were not dropped: %r",
                    sample.webhook_id,
                    result.error,
                )
            answer(stored[0] if stored else outcome.Value(False))

        self._db.execute_grouped_nowait(_TRIM, [sample.webhook_id, keep], trimmed)
