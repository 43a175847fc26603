"""The overview's maths: latency bins and percentiles of merged histograms, the ranges'
steps, and which tool calls count under which decision."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import pytest

from agentws.core.errors import ValidationError
from agentws.domain.rollups import (
    bin_of,
    bin_value,
    decision_of,
    merge_bins,
    percentile,
)
from agentws.rollups.ranges import window_for


def test_a_bin_stands_for_its_values_within_six_percent() -> None:
    for ms in (1.5, 3.0, 9.99, 10.0, 47.0, 100.0, 250.0, 999.0, 1234.5, 60_000.0, 3.6e6):
        index = bin_of(ms)
        assert 10 ** (index / 20) <= ms < 10 ** ((index + 1) / 20)
        assert abs(bin_value(index) - ms) / ms < 0.061
    assert bin_of(0.2) == bin_of(1.0) == bin_of(-5.0) == 0
    assert bin_of(10.0) == 20
    assert bin_of(1000.0) == 60


def test_percentiles_by_nearest_rank() -> None:
    assert percentile({}, 0.5) is None
    assert percentile({3: 0}, 0.99) is None
    two = {bin_of(10.0): 1, bin_of(1000.0): 1}
    assert percentile(two, 0.5) == round(bin_value(bin_of(10.0)), 3)
    assert percentile(two, 0.99) == round(bin_value(bin_of(1000.0)), 3)
    hundred = {bin_of(5.0): 98, bin_of(500.0): 1, bin_of(5000.0): 1}
    assert percentile(hundred, 0.5) == round(bin_value(bin_of(5.0)), 3)
    assert percentile(hundred, 0.99) == round(bin_value(bin_of(500.0)), 3)
    assert percentile(hundred, 1.0) == round(bin_value(bin_of(5000.0)), 3)


def test_merged_histograms_give_the_percentiles_of_all_their_samples() -> None:
    rng = random.Random(7)  # noqa: S311 - test data, not secrets
    minutes = [[rng.lognormvariate(4, 1.2) for _ in range(rng.randint(0, 40))] for _ in range(60)]
    parts = []
    for samples in minutes:
        bins: dict[int, int] = {}
        for ms in samples:
            bins[bin_of(ms)] = bins.get(bin_of(ms), 0) + 1
        parts.append(bins)
    merged = merge_bins(parts)
    everything = sorted(ms for samples in minutes for ms in samples)
    assert sum(merged.values()) == len(everything)
    for q in (0.5, 0.9, 0.99):
        exact = everything[math.ceil(q * len(everything)) - 1]
        found = percentile(merged, q)
        assert found is not None
        assert abs(found - exact) / exact < 0.061
    # Averaging each minute's p99 is not the p99 of the hour: the merge is what is kept.
    averaged = sum(p for p in (percentile(b, 0.99) for b in parts) if p is not None) / len(
        [b for b in parts if b]
    )
    assert abs(averaged - everything[math.ceil(0.99 * len(everything)) - 1]) > 0.1 * averaged


def test_ranges_end_with_the_step_of_now() -> None:
    now = datetime(2026, 5, 1, 12, 34, 56, tzinfo=UTC)
    hour = window_for("1h", now)
    assert (hour.points, hour.step_s) == (60, 60)
    assert hour.labels()[-1] == "2026-05-01T12:34:00+00:00"
    assert hour.start == datetime(2026, 5, 1, 11, 35, tzinfo=UTC)
    day = window_for("24h", now)
    assert (day.points, day.step_s) == (96, 900)
    assert day.labels()[-1] == "2026-05-01T12:30:00+00:00"
    week = window_for("7d", now)
    assert (week.points, week.step_s) == (168, 3600)
    assert week.labels()[0] == "2026-04-24T13:00:00+00:00"
    assert week.labels()[-1] == "2026-05-01T12:00:00+00:00"
    minute = int(now.timestamp()) // 60
    assert week.slot(minute) == 167
    assert week.slot(minute - 167 * 60 - 34) == 0
    assert week.slot(minute - 167 * 60 - 35) is None
    assert hour.slot(minute + 1) is None
    with pytest.raises(ValidationError, match="unknown range"):
        window_for("30d", now)


@pytest.mark.parametrize(
    ("decision", "outcome", "shown"),
    [
        ("run", "ran", "ran"),
        ("queue", "queued", "queued"),
        ("queue", "not_queued", None),
        ("confirm", "confirmed_and_ran", "confirmed"),
        ("confirm", "asked", None),
        ("confirm", "declined", None),
        ("deny", "denied", "denied"),
        ("run", "invalid_arguments", None),
    ],
)
def test_tool_calls_by_decision(decision: str, outcome: str, shown: str | None) -> None:
    assert decision_of({"decision": decision, "outcome": outcome}) == shown
