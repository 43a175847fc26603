"""The overview's time ranges: how many points, how far apart, and where they start.

A range ends with the step that holds ``now`` (the current, unfinished
minute, quarter hour or hour), so the last point grows while it is looked
at; the others are whole steps, aligned to multiples of the step since the
epoch, so two reads a second apart share their points.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from agentws.core.errors import ValidationError

__all__ = ["RANGES", "Window", "window_for"]

#: name -> (points, step in seconds)
RANGES: dict[str, tuple[int, int]] = {"1h": (60, 60), "24h": (96, 900), "7d": (168, 3600)}


@attrs.frozen
class Window:
    """The steps of one read: ``points`` steps of ``step_s`` from ``start``."""

    name: str
    points: int
    step_s: int
    #: The first step's start (inclusive).
    start: datetime
    #: The read's moment, inside the last step.
    now: datetime

    @property
    def end(self) -> datetime:
        """The last step's end (exclusive), after ``now``."""
        return self.start + timedelta(seconds=self.points * self.step_s)

    @property
    def start_minute(self) -> int:
        """The first step's start in minutes since the epoch."""
        return int(self.start.timestamp()) // 60

    @property
    def step_minutes(self) -> int:
        return self.step_s // 60

    def labels(self) -> list[str]:
        return [
            (self.start + timedelta(seconds=i * self.step_s)).isoformat()
            for i in range(self.points)
        ]

    def slot(self, minute: int) -> int | None:
        """The index of the step that holds epoch minute ``minute``; None outside."""
        index = (minute - self.start_minute) // self.step_minutes
        return index if 0 <= index < self.points else None


def window_for(range_name: str, now: datetime) -> Window:
    """The window of ``range_name`` ("1h", "24h", "7d") that ends with the step of ``now``.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for another name.
    """
    try:
        points, step_s = RANGES[range_name]
    except KeyError:
        known = ", ".join(RANGES)
        raise ValidationError(f"unknown range {range_name!r} (one of {known})") from None
    now = now.astimezone(UTC)
    epoch_s = int(now.timestamp())
    last = epoch_s - epoch_s % step_s
    start = datetime.fromtimestamp(last - (points - 1) * step_s, UTC)
    return Window(range_name, points, step_s, start, now)
