"""Bulk replays: which failed events a replay takes, and how the replays are spaced.

A bulk replay takes a webhook's failed events that match a selection
(received in a time range, an error containing some text) and have never
been replayed, oldest first, and queues one replay of each: a new event
with the same body and headers whose ``replay_of`` names it. The replays
are spaced by the rate asked for: the n-th is available ``n * 60 / rate``
seconds after the first, so the worker runs them no faster, on any number
of instances, and a restart changes nothing. Nothing here does I/O.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from agentws.core.errors import ValidationError

__all__ = [
    "MAX_REPLAYS",
    "MAX_REPLAY_RATE",
    "ReplayCandidate",
    "ReplayOrder",
    "ReplaySelection",
    "like_pattern",
    "replay_times",
]

#: Failed events one bulk replay takes at most (the rest wait for the next one).
MAX_REPLAYS = 10_000
#: Replays a minute at most.
MAX_REPLAY_RATE = 6_000
# Error texts searched are at most this long (a search, not a document).
_MAX_NEEDLE = 200


@attrs.frozen(kw_only=True)
class ReplaySelection:
    """Which failed events of a webhook a bulk replay takes (besides: never replayed)."""

    #: Received at or after this.
    since: datetime | None = None
    #: Received before this.
    until: datetime | None = None
    #: The error contains this text (any case).
    error_contains: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValidationError("the time range is empty: 'since' must come before 'until'")
        if self.error_contains is not None and len(self.error_contains) > _MAX_NEEDLE:
            raise ValidationError(f"the error text searched is longer than {_MAX_NEEDLE}")

    def describe(self) -> str:
        """The selection in words: "failed events received since …"."""
        words = ["failed events"]
        if self.since is not None:
            words.append(f"received since {self.since.isoformat(timespec='seconds')}")
        if self.until is not None:
            words.append(f"received before {self.until.isoformat(timespec='seconds')}")
        if self.error_contains:
            words.append(f"whose error contains {self.error_contains!r}")
        return " ".join(words)


@attrs.frozen
class ReplayCandidate:
    """A failed event a bulk replay would take (never its body: that stays in the store)."""

    id: str
    received_at: datetime
    error: str | None
    #: A replay's own prompt (the one its original ran with), if it is a replay.
    prompt: str | None


@attrs.frozen
class ReplayOrder:
    """One replay to queue: of ``original_id``, as event ``event_id``."""

    original_id: str
    event_id: str
    #: The prompt it runs with; None: the webhook's when it runs.
    prompt: str | None
    #: Not run before this.
    available_at: datetime
    #: Its place in the queue (which keeps arrival order).
    received_at: datetime


def replay_times(start: datetime, count: int, rate_per_min: int) -> list[tuple[datetime, datetime]]:
    """(received, available) of each of ``count`` replays queued at ``start``.

    Available ``rate_per_min`` apart from ``start``; received a microsecond
    apart, so that they keep their originals' order in the queue (a webhook
    with concurrency 1 runs them in that order), before whatever arrives next.
    """
    if not 1 <= rate_per_min <= MAX_REPLAY_RATE:
        raise ValidationError(f"the replay rate must be 1 to {MAX_REPLAY_RATE} a minute")
    step = timedelta(seconds=60 / rate_per_min)
    tick = timedelta(microseconds=1)
    return [(start + tick * n, start + step * n) for n in range(count)]


def like_pattern(text: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern matching ``text`` anywhere, in lower case."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
