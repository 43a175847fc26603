"""What the overview page shows: :func:`read_overview`, a workspace's figures over a range.

The figures come from three places, read so that each thing is counted
once (see :mod:`agentws.rollups.minutes` for how buckets are made):

- rolled-up buckets (``rollup_buckets``) of the range's step: minutes for
  the hour, quarter hours for 24 hours, hours for 7 days; and minutes for
  the step the rollup is in;
- the source tables for what the rollup has not reached yet (the minutes
  from its mark, the current one included, at most :data:`_FOLD_M` of
  them) and the delivery-log rows after its last one: so a figure shows
  at once, without waiting for a timer;
- the live state for the last point's gauges: the approval queue now, and
  each live instance's newest sessions sample.

The mark is read before and after the rest; when a rollup moved it in
between (it commits its buckets and its mark together), the read is made
again, so a minute is never counted from both its bucket and its source.

Counters of a step are sums of its minutes; latency percentiles come from
the step's merged histogram; a gauge's point is its largest sample in the
step (a queue's peak, not its average), None where nothing was sampled
(the service was not running). Sessions are summed over instances for each
minute before the largest is taken; a sampled step without any is 0.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any, Protocol

import attrs

from agentws.domain.models import Webhook
from agentws.domain.rollups import (
    DECISIONS,
    MINUTE,
    TOKEN_KINDS,
    TRANSPORTS,
    WIDER_SPANS,
    Bucket,
    RollupMark,
    merge_bins,
    percentile,
)
from agentws.domain.rules import utcnow
from agentws.rollups.ranges import Window, window_for
from agentws.store.sql_health import HealthStore
from agentws.store.sql_records import RecordStore
from agentws.store.sql_rollup_sources import RollupSourceStore
from agentws.store.sql_rollups import RollupStore

__all__ = ["read_overview"]

# Reads made again at most, when a rollup moved its mark meanwhile (once a minute:
# a second read is rare, a third rarer still).
_READS = 3
# Minutes counted at their source at most: the rollup's mark is a minute or two
# behind, except while a first rollup catches up (or the store failed it for a
# while); meanwhile older minutes show once rolled, and a read stays cheap.
_FOLD_M = 180
# An instance is live when it beat this recently (common/instances.py beats every 2 s).
_INSTANCE_LIVE_S = 10.0
# A live instance's sessions sample is its newest of the last few minutes.
_SAMPLE_AGE_M = 2

# Series of the answer fed by counters, and the bucket series they come from.
_COUNTED = {
    "events_received": "received",
    "events_done": "done",
    "events_failed": "failed",
    "refused": "refused",
    "tool_calls": "tool_calls",
    "model_tokens": "tokens",
}


class _Store(RecordStore, HealthStore, RollupSourceStore, RollupStore, Protocol):
    """The areas of the store this module uses."""


async def read_overview(
    store: _Store, workspace_id: str, range_name: str, *, now: datetime | None = None
) -> dict[str, Any]:
    """A workspace's overview figures over ``range_name``, ready for JSON.

    Args:
        range_name: "1h" (60 points a minute apart), "24h" (96 points, 15
            minutes) or "7d" (168 points, an hour).
        now: the moment read (default: now); the last point is the step
            holding it, still going on.

    Returns:
        ``{"range", "step_s", "from", "to", "labels", "series", "totals"}``:
        ``labels`` are the steps' starts (ISO 8601, UTC), ``from`` the first
        step's start and ``to`` ``now``; ``series`` holds, per figure, one
        list with a value per step: ``events_received``, ``events_done`` and
        ``events_failed`` per webhook name (every webhook of the workspace,
        zeros included; a deleted one's figures under its id), ``latency_ms``
        ``p50`` and ``p99`` (receive → message posted, None for a step
        without a posted run), ``refused`` per reason seen (possibly none),
        ``approvals`` ``depth`` and ``oldest_s`` and ``sessions`` per
        transport (``sse``, ``streamable``): None for a step never sampled;
        ``tool_calls`` (``ran``, ``queued``, ``confirmed``, ``denied``) and
        ``model_tokens`` (``input``, ``output``). ``totals`` sums the
        counters over the range, gives the range's latency percentiles, and
        the approval queue's depth and the live instances' sessions now.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for an unknown range.
    """
    window = window_for(range_name, now if now is not None else utcnow())
    webhooks = await store.select(Webhook, workspace_id=workspace_id)
    mark = await store.rollup_mark()
    for _ in range(_READS):
        figures = await _gather(store, workspace_id, window, mark)
        again = await store.rollup_mark()
        if again == mark:
            break
        mark = again
    live = await _live(store, workspace_id, window)
    return figures.answer({w.id: w.name for w in webhooks}, live)


async def _gather(
    store: _Store, workspace_id: str, window: Window, mark: RollupMark | None
) -> _Figures:
    """The window's figures from the buckets below ``mark`` and the sources from it."""
    figures = _Figures(window)
    start = window.start_minute
    end = start + window.points * window.step_minutes
    now_minute = int(window.now.timestamp()) // 60
    rolled = start if mark is None else min(max(mark.minute, start), now_minute + 1)
    minutes_from = start
    span = window.step_minutes
    # (bucket span, from, to) of the rollups read.
    reads: list[tuple[int, int, int]] = []
    if span in WIDER_SPANS:
        # Whole steps rolled up are read as such; the one the rollup is in, as minutes.
        minutes_from = max(start, rolled - rolled % span)
        reads.append((span, start, minutes_from))
    reads.append((MINUTE, minutes_from, end))
    for span_m, first, last in reads:
        for step in await store.rollup_steps(
            workspace_id,
            span_m=span_m,
            start_minute=first,
            end_minute=last,
            origin_minute=start,
            step_m=window.step_minutes,
        ):
            figures.add_step(*step)
    sessions: defaultdict[tuple[int, str], float] = defaultdict(float)
    for bucket in await store.session_samples(
        workspace_id, start_minute=minutes_from, end_minute=end
    ):
        sessions[bucket.minute, bucket.key] += bucket.value
    for (minute, transport), value in sessions.items():
        slot = window.slot(minute)
        if slot is not None:
            figures.sample(slot, "sessions", transport, value)
    fold_from = max(rolled, now_minute - _FOLD_M)
    for bucket in await store.source_buckets(fold_from, now_minute + 1, workspace_id=workspace_id):
        figures.add_bucket(bucket)
    refused, _ = await store.refusal_buckets(
        after_id=0 if mark is None else mark.delivery_id, workspace_id=workspace_id
    )
    for bucket in refused:
        figures.add_bucket(bucket)
    return figures


async def _live(store: _Store, workspace_id: str, window: Window) -> _Live:
    """The gauges now: the approval queue, and each live instance's newest sessions sample."""
    approvals = {
        b.series: b.value
        for b in await store.approval_buckets(window.now, workspace_id=workspace_id)
    }
    now_minute = int(window.now.timestamp()) // 60
    alive = {
        i.id for i in await store.live_instances(window.now - timedelta(seconds=_INSTANCE_LIVE_S))
    }
    newest: dict[str, int] = {}
    samples = await store.session_samples(
        workspace_id, start_minute=now_minute - _SAMPLE_AGE_M, end_minute=now_minute + 1
    )
    for bucket in samples:
        if bucket.instance_id in alive:
            newest[bucket.instance_id] = max(newest.get(bucket.instance_id, 0), bucket.minute)
    sessions: defaultdict[str, float] = defaultdict(float)
    for bucket in samples:
        if newest.get(bucket.instance_id) == bucket.minute:
            sessions[bucket.key] += bucket.value
    return _Live(
        depth=int(approvals.get("approvals_depth", 0)),
        oldest_s=approvals.get("approvals_oldest_s", 0.0),
        sessions=dict(sessions),
    )


@attrs.frozen
class _Live:
    depth: int
    oldest_s: float
    sessions: dict[str, float]


class _Figures:
    """The steps' figures as they are gathered, then shaped for the answer."""

    def __init__(self, window: Window) -> None:
        self.window = window
        points = window.points
        # (series, key) -> a value per step
        self.counts: defaultdict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * points)
        # step -> latency bin -> count
        self.latency: list[dict[int, int]] = [{} for _ in range(points)]
        # (series, key) -> the largest sample per step
        self.peaks: defaultdict[tuple[str, str], list[float | None]] = defaultdict(
            lambda: [None] * points
        )

    def add(self, slot: int, series: str, key: str, value: float) -> None:
        """A counter's amount (or latency bin's count) in step ``slot``."""
        if series == "latency":
            index = int(key)
            bins = self.latency[slot]
            bins[index] = bins.get(index, 0) + int(value)
        else:
            self.counts[series, key][slot] += value

    def sample(self, slot: int, series: str, key: str, value: float) -> None:
        """A gauge's sample in step ``slot``: the step keeps its largest."""
        points = self.peaks[series, key]
        current = points[slot]
        points[slot] = value if current is None else max(current, value)

    def add_step(self, slot: int, series: str, key: str, value: float) -> None:
        """A bucket of step ``slot`` (a counter's amount, or a gauge's largest sample)."""
        if not 0 <= slot < self.window.points:
            return
        if series in _GAUGE_SERIES:
            self.sample(slot, series, key, value)
        else:
            self.add(slot, series, key, value)

    def add_bucket(self, bucket: Bucket) -> None:
        slot = self.window.slot(bucket.minute)
        if slot is None:
            return
        if bucket.series in _GAUGE_SERIES:
            self.sample(slot, bucket.series, bucket.key, bucket.value)
        else:
            self.add(slot, bucket.series, bucket.key, bucket.value)

    def answer(self, webhook_names: dict[str, str], live: _Live) -> dict[str, Any]:
        window = self.window
        last = window.points - 1
        self.sample(last, "approvals_depth", "", live.depth)
        self.sample(last, "approvals_oldest_s", "", live.oldest_s)
        for transport, count in live.sessions.items():
            self.sample(last, "sessions", transport, count)
        series: dict[str, Any] = {}
        totals: dict[str, Any] = {}
        for name, source in _COUNTED.items():
            keys = {key for (s, key) in self.counts if s == source}
            if source in ("received", "done", "failed"):
                keys |= set(webhook_names)
            elif source == "tool_calls":
                keys |= set(DECISIONS)
            elif source == "tokens":
                keys |= set(TOKEN_KINDS)
            shown: dict[str, list[int]] = {}
            for key in sorted(keys, key=lambda k: _label(source, k, webhook_names)):
                values = self.counts.get((source, key)) or [0.0] * window.points
                shown[_label(source, key, webhook_names)] = [int(v) for v in values]
            series[name] = shown
            totals[name] = sum(sum(v) for v in shown.values())
        series["latency_ms"] = {
            "p50": [percentile(bins, 0.5) for bins in self.latency],
            "p99": [percentile(bins, 0.99) for bins in self.latency],
        }
        merged = merge_bins(self.latency)
        totals["latency_p50_ms"] = percentile(merged, 0.5)
        totals["latency_p99_ms"] = percentile(merged, 0.99)
        depth = self.peaks.get(("approvals_depth", "")) or [None] * window.points
        oldest = self.peaks.get(("approvals_oldest_s", "")) or [None] * window.points
        series["approvals"] = {
            "depth": [None if v is None else int(v) for v in depth],
            "oldest_s": [None if v is None else round(v, 3) for v in oldest],
        }
        transports = sorted({key for (s, key) in self.peaks if s == "sessions"} | set(TRANSPORTS))
        # Instances sample sessions only where they have some: a step that was
        # sampled (the approval queue is, every minute) had none elsewhere.
        sessions = {
            key: [
                int(v) if v is not None else (0 if sampled is not None else None)
                for v, sampled in zip(
                    self.peaks.get(("sessions", key)) or [None] * window.points,
                    depth,
                    strict=True,
                )
            ]
            for key in transports
        }
        series["sessions"] = sessions
        totals["approvals_depth"] = live.depth
        totals["sessions"] = int(sum(live.sessions.values()))
        ordered_totals = {
            key: totals[key]
            for key in (
                "events_received",
                "events_done",
                "events_failed",
                "refused",
                "tool_calls",
                "model_tokens",
                "latency_p50_ms",
                "latency_p99_ms",
                "approvals_depth",
                "sessions",
            )
        }
        return {
            "range": window.name,
            "step_s": window.step_s,
            "from": window.start.isoformat(),
            "to": window.now.isoformat(),
            "labels": window.labels(),
            "series": {
                key: series[key]
                for key in (
                    "events_received",
                    "events_done",
                    "events_failed",
                    "latency_ms",
                    "refused",
                    "approvals",
                    "sessions",
                    "tool_calls",
                    "model_tokens",
                )
            },
            "totals": ordered_totals,
        }


_GAUGE_SERIES = frozenset({"approvals_depth", "approvals_oldest_s", "sessions"})


def _label(source: str, key: str, webhook_names: dict[str, str]) -> str:
    """How a series' key is shown: a webhook by its name (a deleted one by its id)."""
    if source in ("received", "done", "failed"):
        return webhook_names.get(key, key)
    return key
