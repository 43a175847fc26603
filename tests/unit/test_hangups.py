"""A connection's hang-up cancels the scope its response registered, and only while registered;
a response may have the connection wait before it closes, once."""

from __future__ import annotations

import contextvars

import trio
import trio.testing

from agentws.bridges import hangups
from agentws.bridges.hangups import HangUp


async def test_a_hang_up_cancels_the_registered_scope_once_and_a_later_one_at_once() -> None:
    hang_up = HangUp()
    with trio.CancelScope() as scope, hang_up.cancelling(scope):
        hang_up.happened()
        await trio.sleep_forever()
    assert scope.cancelled_caught
    # A response that registers after the end is cancelled at once.
    with trio.CancelScope() as late, hang_up.cancelling(late):
        await trio.sleep_forever()
    assert late.cancelled_caught


async def test_a_scope_left_before_the_hang_up_is_not_cancelled() -> None:
    hang_up = HangUp()
    with trio.CancelScope() as finished, hang_up.cancelling(finished):
        await trio.lowlevel.checkpoint()
    hang_up.happened()
    assert not finished.cancel_called


def test_only_an_http_1_connection_that_set_one_has_a_notice() -> None:
    assert hangups.current({"http_version": "1.1"}) is None  # no connection set one here

    def in_a_connection() -> tuple[HangUp, HangUp | None, HangUp | None]:
        notice = hangups.watch_connection()
        return (
            notice,
            hangups.current({"http_version": "1.1"}),
            hangups.current({"http_version": "2"}),
        )

    notice, http1, http2 = contextvars.copy_context().run(in_a_connection)
    assert http1 is notice
    assert http2 is None
    assert hangups.current({"http_version": "1.1"}) is None


async def test_the_input_ends_at_once_unless_a_response_holds_the_close() -> None:
    hang_up = HangUp()
    await hang_up.input_ended()  # nothing asked: no wait (and no checkpoint)

    release, closed = trio.Event(), trio.Event()
    hang_up.hold_close(release.wait)

    async def close() -> None:
        await hang_up.input_ended()
        closed.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(close)
        await trio.testing.wait_all_tasks_blocked()
        assert not closed.is_set()
        release.set()
    # Taken once: a later end of input does not wait again.
    with trio.fail_after(1):
        await hang_up.input_ended()
    # A connection that has ended drops what a response asked of it, and takes no more.
    hang_up.hold_close(trio.sleep_forever)
    hang_up.happened()
    with trio.fail_after(1):
        await hang_up.input_ended()
    hang_up.hold_close(trio.sleep_forever)
    with trio.fail_after(1):
        await hang_up.input_ended()
