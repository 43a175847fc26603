"""The collector's steward: freezes as sessions open, reclaims cycles once they closed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from agentws.http.collector import CollectorSteward


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
    steward = CollectorSteward(lambda: (counts[0], counts[1], counts[2]))

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

    # Closing fewer than are open reclaims nothing yet.
    counts[:] = [600, 1000, 400]
    steward.step()
    gc.collect()
    assert gone() is not None

    # Not while sessions are still closing: once they have stopped.
    counts[:] = [100, 1000, 900]
    steward.step()
    gc.collect()
    assert gone() is not None
    steward.step()
    assert gone() is None
    # What is left is frozen again.
    assert gc.get_freeze_count() > 0
