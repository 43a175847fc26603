"""The collector's steward: freezes as sessions open, reclaims cycles once they closed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from agentws.http.collector import YOUNG_THRESHOLD, CollectorSteward, settle_after_start


class _Cycle:
    """An object in a reference cycle: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def thawed() -> Iterator[None]:
    """Leave the process's collector as it was found: nothing frozen by the test."""
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_frozen_cycles_wait_until_as_many_sessions_closed_as_are_open(thawed: None) -> None:
    counts = [0, 0, 0]  # open, opened so far, closed so far
    now = [0.0]
    steward = CollectorSteward(lambda: (counts[0], counts[1], counts[2]), lambda: now[0])

    # A few new sessions are not worth a freeze.
    counts[:] = [10, 10, 0]
    steward.step()
    assert gc.get_freeze_count() == 0

    cycle = _Cycle()
    gone = weakref.ref(cycle)
    counts[:] = [1000, 1000, 0]
    steward.step()
    assert gc.get_freeze_count() > 0
    del cycle
    gc.collect()
    assert gone() is not None  # frozen: out of the collector's sight

    # Closing fewer than are open reclaims nothing, however long it waits.
    now[0] = 700.0
    counts[:] = [600, 1000, 400]
    steward.step()
    gc.collect()
    assert gone() is not None

    # Not while sessions are still closing, nor until they stopped for a while.
    counts[:] = [100, 1000, 900]
    now[0] = 701.0
    steward.step()
    now[0] = 705.0
    steward.step()
    gc.collect()
    assert gone() is not None
    now[0] = 711.0
    steward.step()
    assert gone() is None
    # What is left is frozen again.
    assert gc.get_freeze_count() > 0


def test_reclaims_come_at_most_every_ten_minutes_and_at_least_every_hour(thawed: None) -> None:
    counts = [0, 0, 0]
    now = [0.0]
    steward = CollectorSteward(lambda: (counts[0], counts[1], counts[2]), lambda: now[0])
    counts[:] = [1000, 1000, 0]
    steward.step()

    def cycle() -> weakref.ref[_Cycle]:
        made = _Cycle()
        gone = weakref.ref(made)
        gc.freeze()  # as a session's objects are
        return gone

    # Quiet, and enough closed: but the last reclaim (the start) was too recent.
    first = cycle()
    counts[:] = [0, 1000, 1000]
    now[0] = 300.0
    steward.step()
    now[0] = 599.0
    steward.step()
    assert first() is not None
    now[0] = 600.0
    steward.step()
    assert first() is None

    # Sessions closing without pause: an hour after the last reclaim, it comes anyway.
    second = cycle()
    for minute in range(11, 71):
        counts[:] = [0, counts[1] + 100, counts[2] + 100]
        now[0] = 600.0 + 60 * (minute - 10)
        steward.step()
        if now[0] - 600.0 < 3600:
            assert second() is not None, minute
    assert second() is None


def _frozen(thing: object) -> bool:
    """Whether ``thing`` is out of the collector's sight (in no generation it walks)."""
    return gc.is_tracked(thing) and not any(o is thing for o in gc.get_objects())


def test_with_many_sessions_open_what_survived_a_second_is_frozen(thawed: None) -> None:
    # Each idle stream waits anew at every keep-alive: with thousands open,
    # those waits are new objects that outlive the young generations.
    counts = [1000, 1000, 0]
    now = [0.0]
    steward = CollectorSteward(lambda: (counts[0], counts[1], counts[2]), lambda: now[0])
    steward.step()
    wait = _Cycle()
    now[0] = 0.5
    steward.step()
    assert not _frozen(wait)
    now[0] = 1.0
    steward.step()
    assert _frozen(wait)

    # With few sessions open, nothing is frozen however long it has been.
    gc.unfreeze()
    counts[:] = [10, 1000, 990]
    now[0] = 60.0
    steward.step()
    assert not _frozen(wait)


def test_settling_freezes_what_starting_made_and_spaces_the_youngest_pass(thawed: None) -> None:
    was = gc.get_threshold()
    try:
        settle_after_start()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *was[1:])
        # Fewer new objects than the threshold bring no pass of the youngest generation.
        passes = gc.get_stats()[0]["collections"]
        kept: list[list[int]] = [[] for _ in range(YOUNG_THRESHOLD // 2)]
        assert gc.get_stats()[0]["collections"] == passes
        del kept
    finally:
        gc.set_threshold(*was)
