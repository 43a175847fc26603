"""What agentws did with the webhook benchmark's deliveries, read from its SQLite database.

:func:`event_counts` counts the events by status and the chat messages
(durability: every acknowledged event must be there); :func:`event_times`
and :func:`summarise_e2e` turn the end-to-end run's record (when each
delivery was sent, what it was answered, when its message was first seen)
and the stored timestamps into the spread of each stage, POST → message.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import sqlite3
from pathlib import Path
from typing import Any

from benchlib.load import latency_figures, percentile

__all__ = ["event_counts", "event_times", "summarise_e2e"]


def event_counts(database: Path) -> dict[str, int]:
    """Events by status, and chat messages, in an agentws database (read-only)."""
    uri = f"file:{database}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        counts = {
            str(status): int(count)
            for status, count in conn.execute("SELECT status, count(*) FROM events GROUP BY status")
        }
        counts["events"] = sum(counts.values())
        counts["messages"] = int(conn.execute("SELECT count(*) FROM chat_messages").fetchone()[0])
    return counts


def _timestamp(text: str | None) -> float | None:
    """A stored ISO timestamp (UTC) as seconds since the epoch."""
    if text is None:
        return None
    value = dt.datetime.fromisoformat(str(text))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


def event_times(database: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    """received/started/finished times and status of events, their messages' created_at."""
    uri = f"file:{database}?mode=ro"
    found: dict[str, dict[str, Any]] = {}
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in conn.execute(
                "SELECT e.id, e.status, e.attempts, e.received_at, e.started_at, e.finished_at,"
                " m.created_at FROM events e LEFT JOIN chat_messages m ON m.event_id = e.id"
                f" WHERE e.id IN ({marks})",
                chunk,
            ):
                found[row[0]] = {
                    "status": row[1],
                    "attempts": row[2],
                    "received_at": _timestamp(row[3]),
                    "started_at": _timestamp(row[4]),
                    "finished_at": _timestamp(row[5]),
                    "message_at": _timestamp(row[6]),
                }
    return found


def _spread(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(value / 1000 for value in values_ms)
    return {**latency_figures(ordered, empty_max=math.nan), "count": len(ordered)}


def summarise_e2e(load: dict[str, Any], times: dict[str, dict[str, Any]]) -> dict[str, Any]:
    measured = [e for e in load["events"] if e["measured"]]
    accepted = [e for e in measured if e.get("event_id")]
    e2e, seen, lag, commit, queued, run, ingest = [], [], [], [], [], [], []
    for event in accepted:
        ingest.append(event["ingest_ms"])
        row = times.get(event["event_id"], {})
        message_at = row.get("message_at")
        if message_at is None:
            continue
        sent = event["sent_at"]
        e2e.append((message_at - sent) * 1000)
        first_seen = load["seen"].get(event["event_id"])
        if first_seen:
            seen.append((first_seen[0] - sent) * 1000)
            lag.append((first_seen[0] - message_at) * 1000)
        if row.get("received_at") is not None and row.get("started_at") is not None:
            commit.append((row["received_at"] - sent) * 1000)
            queued.append((row["started_at"] - row["received_at"]) * 1000)
            run.append((message_at - row["started_at"]) * 1000)
    lates = sorted(e["late_ms"] for e in measured)
    statuses: dict[str, int] = {}
    for row in times.values():
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    return {
        "rate": load["rate"],
        "sent": len(measured),
        "accepted": len(accepted),
        "arrived": len(e2e),
        "errors": load["errors"],
        "error_samples": load["error_samples"],
        "statuses": load["statuses"],
        "event_statuses": statuses,
        "retried": sum(1 for row in times.values() if (row.get("attempts") or 0) > 1),
        "e2e": _spread(e2e),
        "observed": _spread(seen),
        "created_to_seen": _spread(lag),
        "ingest": _spread(ingest),
        "post_to_commit": _spread(commit),
        "commit_to_start": _spread(queued),
        "start_to_message": _spread(run),
        "send_late_p99_ms": percentile(lates, 0.99),
        "polls": load["polls"],
    }
