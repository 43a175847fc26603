"""The one deadline helper: ``trio.fail_after`` whose TooSlowError becomes our own error."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agentws.core.deadlines import deadline, time_left_s
from agentws.core.errors import UpstreamError


def _too_slow() -> UpstreamError:
    return UpstreamError("the upstream did not answer within 5 s")


async def test_a_block_past_its_deadline_fails_with_the_error_named(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with (
        pytest.raises(UpstreamError, match="did not answer within 5 s") as raised,
        deadline(5, _too_slow),
    ):
        await trio.sleep(10)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert trio.current_time() == pytest.approx(5)


async def test_a_block_in_time_is_untouched_and_makes_no_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    made: list[UpstreamError] = []

    def too_slow() -> UpstreamError:
        made.append(_too_slow())
        return made[-1]

    with deadline(5, too_slow):
        await trio.sleep(1)
    assert made == []


async def test_an_enclosing_deadline_cancels_through(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.move_on_after(1) as outer:
        with deadline(5, _too_slow):
            await trio.sleep(10)
    assert outer.cancelled_caught


async def test_time_left_is_the_callers_deadline(autojump_clock: trio.testing.MockClock) -> None:
    assert time_left_s() is None
    with trio.fail_after(3):
        await trio.sleep(1)
        assert time_left_s() == pytest.approx(2)
        with deadline(10, _too_slow):
            assert time_left_s() == pytest.approx(2)  # the nearer deadline counts
