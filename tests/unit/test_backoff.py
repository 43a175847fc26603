"""The one back-off: doubling from a first wait up to a cap, with or without full jitter."""

from __future__ import annotations

import random

import pytest

from agentws.core.backoff import Backoff


def test_the_wait_doubles_from_the_first_up_to_the_cap() -> None:
    backoff = Backoff(first_s=1.0, cap_s=60.0)
    assert [backoff.delay_s(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_a_loop_that_has_failed_for_days_still_waits_the_cap() -> None:
    backoff = Backoff(first_s=0.5, cap_s=5.0, jitter=True)
    assert backoff.ceiling_s(100_000) == 5.0
    assert 0 <= backoff.delay_s(100_000) < 5.0


def test_no_failure_counted_yet_waits_the_first_wait() -> None:
    assert Backoff(first_s=30.0, cap_s=900.0).delay_s(0) == 30.0


@pytest.mark.parametrize("failures", [1, 3, 12])
def test_full_jitter_draws_below_the_ceiling(failures: int) -> None:
    backoff = Backoff(first_s=2.0, cap_s=300.0, jitter=True)
    random.seed(failures)
    draws = [backoff.delay_s(failures) for _ in range(200)]
    ceiling = backoff.ceiling_s(failures)
    assert all(0 <= d < ceiling for d in draws)
    # Spread over the range, not bunched at the ceiling: retries do not come back together.
    assert min(draws) < ceiling / 4 and max(draws) > ceiling * 3 / 4
