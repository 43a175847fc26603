"""The overview's figures: rollup buckets, their series, and latency histograms.

A :class:`Bucket` is one figure of one workspace over one span of time (a
minute, or a quarter hour or an hour rolled from its minutes): a counter (events received,
done and failed per webhook; refused deliveries per reason; tool calls per
decision; model tokens per kind), one bin of the latency histogram, or a
sampled gauge (approval queue depth, oldest waiting age; open MCP sessions
per transport, one sample per instance). Series names are fixed here;
keys are ids, reasons, decisions, kinds, bin numbers or transports.

Latency is kept as a log-scale histogram, :data:`BINS_PER_DECADE` bins for
each factor of ten (each about 12 % wide), so the percentiles of any span
come from its merged bins, never from averaged percentiles: a bin's
representative is its geometric middle, within 6 % of every value in it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs

__all__ = [
    "BINS_PER_DECADE",
    "COUNTERS",
    "DECISIONS",
    "GAUGES",
    "HOUR",
    "MINUTE",
    "QUARTER",
    "TOKEN_KINDS",
    "TRANSPORTS",
    "WIDER_SPANS",
    "Bucket",
    "RollupMark",
    "bin_of",
    "bin_value",
    "decision_of",
    "merge_bins",
    "percentile",
]

#: Spans of a bucket, in minutes: a minute, and the steps of the wider charts
#: (a quarter hour for 24 hours, an hour for 7 days), rolled from the minutes.
MINUTE = 1
QUARTER = 15
HOUR = 60
WIDER_SPANS = (QUARTER, HOUR)

#: Series that add up over time (a span's value is the sum of its minutes').
COUNTERS = ("received", "done", "failed", "latency", "refused", "tool_calls", "tokens")
#: Series sampled once a minute (a span's value is its largest sample).
GAUGES = ("approvals_depth", "approvals_oldest_s", "sessions")

#: The transports of MCP sessions (as agentws.doors.mcp.sessions.session names them).
TRANSPORTS = ("streamable", "sse")

#: Tool calls by what the gate did: how the overview names the decisions.
DECISIONS = ("ran", "queued", "confirmed", "denied")
TOKEN_KINDS = ("input", "output")

#: Latency bins per factor of ten: 20 make a bin about 12 % wide.
BINS_PER_DECADE = 20


@attrs.frozen
class Bucket:
    """One figure of one workspace over one span (a row of ``rollup_buckets``)."""

    workspace_id: str
    #: The span's length in minutes: :data:`MINUTE`, :data:`QUARTER` or :data:`HOUR`.
    span_m: int
    #: The span's start, in minutes since the epoch.
    minute: int
    #: One of :data:`COUNTERS` or :data:`GAUGES`.
    series: str
    #: Webhook id, reason, decision, token kind, latency bin, transport; "" for none.
    key: str
    value: float
    #: Whose sample it is (sessions are per instance); "" for everyone's figures.
    instance_id: str = ""


@attrs.frozen
class RollupMark:
    """How far the rollup of closed minutes has come (one row, shared by every instance)."""

    #: Every minute before this one (minutes since the epoch) is rolled up.
    minute: int
    #: Every delivery-log row up to this id is counted.
    delivery_id: int


def bin_of(latency_ms: float) -> int:
    """The histogram bin of a latency: bin ``b`` holds ``[10**(b/20), 10**((b+1)/20))`` ms.

    Anything under 1 ms (and a negative value, a clock step) is bin 0.
    """
    if latency_ms <= 1.0:
        return 0
    return max(0, math.floor(BINS_PER_DECADE * math.log10(latency_ms)))


def bin_value(index: int) -> float:
    """The value a bin stands for: its geometric middle, in ms."""
    return float(10 ** ((index + 0.5) / BINS_PER_DECADE))


def merge_bins(parts: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """The histogram of several spans: counts added bin by bin."""
    merged: dict[int, int] = {}
    for part in parts:
        for index, count in part.items():
            merged[index] = merged.get(index, 0) + count
    return merged


def percentile(bins: Mapping[int, int], q: float) -> float | None:
    """The ``q`` quantile (0 < q <= 1) of a histogram by nearest rank; None when it is empty.

    The value is that of the bin holding the ``ceil(q * n)``-th smallest
    sample, so p50 of two samples is the smaller one's bin.
    """
    total = sum(count for count in bins.values() if count > 0)
    if total == 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index in sorted(bins):
        count = bins[index]
        if count <= 0:
            continue
        seen += count
        if seen >= rank:
            return round(bin_value(index), 3)
    raise AssertionError("unreachable: the ranks add up to the total")


def decision_of(detail: Mapping[str, object]) -> str | None:
    """What a tool call's audit entry says the gate did, as the overview names it.

    ``ran``: the call ran without asking; ``queued``: it waits for an admin;
    ``confirmed``: a destructive call the caller confirmed, which ran;
    ``denied``: refused by scope or permission. Other entries (a call whose
    confirmation is pending or declined, invalid arguments, over the queue's
    limits) are None: no tool ran or waits because of them.
    """
    decision = detail.get("decision")
    outcome = detail.get("outcome")
    if decision == "deny":
        return "denied"
    if outcome == "queued":
        return "queued"
    if outcome == "confirmed_and_ran":
        return "confirmed"
    if outcome == "ran":
        return "ran"
    return None
