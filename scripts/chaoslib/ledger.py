"""What the store says became of the deliveries: events, their messages, their attempts.

The database is read directly, read-only, beside the running server: SQLite
through ``sqlite3`` (``mode=ro``, WAL lets it read while the server writes),
PostgreSQL through ``psql --csv``. Three tables matter: ``events`` (status,
attempts, the posted message's id), ``chat_messages`` (one row per posted
message, with its event) and ``event_attempts`` (one row per finished
attempt). :func:`account` then holds the sender's record of acknowledged
deliveries against them.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import trio

from chaoslib.common import ScenarioError
from chaoslib.sender import Delivery

__all__ = ["Attempt", "Database", "Snapshot", "account", "cross_check", "open_database"]

_SNAPSHOT_SQL = """
SELECT 'e', id, status, CAST(attempts AS TEXT), COALESCE(message_id, ''),
       COALESCE(lease_owner, ''), COALESCE(error, '') FROM events
UNION ALL
SELECT 'm', event_id, id, channel, '', '', '' FROM chat_messages WHERE event_id IS NOT NULL
UNION ALL
SELECT 'a', event_id, outcome, instance_id, CAST(number AS TEXT), COALESCE(error, ''),
       COALESCE(CAST(finished_at AS TEXT), '') FROM event_attempts
"""


class Database:
    """Rows of a query, as tuples of strings."""

    async def rows(self, sql: str) -> list[tuple[str, ...]]:
        raise NotImplementedError


class _Sqlite(Database):
    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self, sql: str) -> list[tuple[str, ...]]:
        uri = f"file:{self.path}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as conn:
            return [tuple("" if v is None else str(v) for v in row) for row in conn.execute(sql)]

    async def rows(self, sql: str) -> list[tuple[str, ...]]:
        return await trio.to_thread.run_sync(self._read, sql)


class _Postgres(Database):
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.argv = [
            "psql", "-X", "-q", "-t", "--csv", "-v", "ON_ERROR_STOP=1",
            "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432),
            "-U", parts.username or "postgres", "-d", parts.path.lstrip("/") or "postgres",
        ]  # fmt: skip
        query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
        schema = query.get("search_path")
        self.prefix = f"SET search_path TO {schema};" if schema else ""

    async def rows(self, sql: str) -> list[tuple[str, ...]]:
        done = await trio.run_process(
            [*self.argv, "-c", self.prefix + sql],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        if done.returncode != 0:
            raise ScenarioError(f"psql failed: {done.stderr.decode(errors='replace').strip()}")
        return [tuple(row) for row in csv.reader(io.StringIO(done.stdout.decode())) if row]


def open_database(url: str) -> Database:
    if url.startswith("sqlite:///"):
        return _Sqlite(Path(url.removeprefix("sqlite:///")).resolve())
    return _Postgres(url)


@attrs.frozen
class EventRow:
    status: str
    attempts: int
    message_id: str
    lease_owner: str
    error: str


@attrs.frozen
class Attempt:
    outcome: str
    instance_id: str
    number: int
    error: str
    #: When it ended (seconds since the epoch; 0 when not recorded).
    finished_at: float


def _epoch(text: str) -> float:
    """A stored timestamp (ISO, or PostgreSQL's text form; UTC when naive) in epoch seconds."""
    if not text:
        return 0.0
    value = dt.datetime.fromisoformat(text.replace(" ", "T", 1))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


@attrs.frozen
class Snapshot:
    events: dict[str, EventRow]
    #: event id -> ids of its messages (the schema allows one; counted anyway).
    messages: dict[str, list[str]]
    #: event id -> finished attempts.
    attempts: dict[str, list[Attempt]]

    @classmethod
    async def read(cls, db: Database) -> Snapshot:
        events: dict[str, EventRow] = {}
        messages: dict[str, list[str]] = {}
        attempts: dict[str, list[Attempt]] = {}
        for kind, key, a, b, c, d, e in await db.rows(_SNAPSHOT_SQL):
            if kind == "e":
                events[key] = EventRow(a, int(b), c, d, e)
            elif kind == "m":
                messages.setdefault(key, []).append(a)
            else:
                attempts.setdefault(key, []).append(Attempt(a, b, int(c or 0), d, _epoch(e)))
        return cls(events, messages, attempts)

    def by_status(self) -> dict[str, int]:
        return dict(Counter(row.status for row in self.events.values()))

    def done(self, ids: set[str]) -> bool:
        """Whether every event of ``ids`` is done."""
        return all((row := self.events.get(i)) is not None and row.status == "done" for i in ids)

    def running(self) -> dict[str, str]:
        """Running events and their lease owners."""
        return {i: row.lease_owner for i, row in self.events.items() if row.status == "running"}


def account(deliveries: list[Delivery], snap: Snapshot) -> dict[str, Any]:
    """Each delivery against the store: lost, duplicated, and how they ran.

    A delivery is *kept* when the sender got 202 (or 200 for a redelivery)
    and its event is ``done`` with exactly one chat message, the one the
    event records. Anything else is *lost*: not acknowledged in time,
    refused, acknowledged but not stored, not done, without its message.
    *Duplicated*: an event with more than one message, two deliveries given
    one event, or an event stored that no delivery was acknowledged with
    (it would post a message nobody's delivery accounts for).
    """
    acked = [d for d in deliveries if d.event_id]
    lost: dict[str, list[str]] = {
        "unacknowledged": [d.key for d in deliveries if not d.event_id],
        "not_stored": [],
        "not_done": [],
        "no_message": [],
        "wrong_message": [],
    }
    statuses: Counter[str] = Counter()
    for d in acked:
        row = snap.events.get(str(d.event_id))
        if row is None:
            lost["not_stored"].append(d.key)
            continue
        statuses[row.status] += 1
        posted = snap.messages.get(str(d.event_id), [])
        if row.status != "done":
            lost["not_done"].append(f"{d.key} ({row.status}: {row.error[:120]})")
        elif not posted:
            lost["no_message"].append(d.key)
        elif row.message_id not in posted:
            lost["wrong_message"].append(d.key)
    ids = Counter(str(d.event_id) for d in acked)
    duplicated = {
        "posted_twice": sorted(i for i, m in snap.messages.items() if len(m) > 1),
        "one_event_two_deliveries": sorted(i for i, n in ids.items() if n > 1),
        "unacknowledged_events": sorted(set(snap.events) - set(ids)),
    }
    attempts = Counter(snap.events[i].attempts for i in ids if i in snap.events)
    done_runs = Counter(
        sum(1 for a in snap.attempts.get(i, []) if a.outcome == "done") for i in ids
    )
    outcomes = Counter(a.outcome for i in ids for a in snap.attempts.get(i, []))
    lost_keys = {k.split(" ")[0] for keys in lost.values() for k in keys}
    return {
        "deliveries": len(deliveries),
        "acknowledged": len(acked),
        "events_stored": len(snap.events),
        "event_statuses": dict(statuses),
        "lost": len(lost_keys),
        "lost_detail": {k: v[:10] for k, v in lost.items() if v},
        "duplicated": sum(len(v) for v in duplicated.values()),
        "duplicated_detail": {k: v[:10] for k, v in duplicated.items() if v},
        "attempts_per_event": {str(k): v for k, v in sorted(attempts.items())},
        "completed_runs_per_event": {str(k): v for k, v in sorted(done_runs.items())},
        "attempt_outcomes": dict(outcomes),
    }


def cross_check(deliveries: list[Delivery], events: Any, messages: Any) -> dict[str, Any]:
    """The acknowledged events as ``agentws event list`` and ``channel tail`` show them.

    A second opinion on :func:`account`, through the CLI's store layer
    rather than SQL: each acknowledged event listed ``done`` with its
    ``message_id``, and exactly one message of the channel naming it.
    """
    listed = {str(e["id"]): e for e in events}
    posted = Counter(str(m.get("event_id")) for m in messages if m.get("event_id"))
    message_ids = {str(m["id"]) for m in messages}
    disagreements = []
    for d in deliveries:
        if not d.event_id:
            continue
        event = listed.get(d.event_id)
        if event is None:
            disagreements.append(f"{d.key}: {d.event_id} not listed")
        elif event.get("status") != "done":
            disagreements.append(f"{d.key}: {d.event_id} is {event.get('status')}")
        elif posted[d.event_id] != 1 or event.get("message_id") not in message_ids:
            disagreements.append(f"{d.key}: {posted[d.event_id]} message(s) in the channel")
    return {
        "events_listed": len(listed),
        "messages_listed": len(messages),
        "disagreements": len(disagreements),
        "disagreement_samples": disagreements[:5],
    }
