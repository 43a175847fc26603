"""The bounds of the events kept for resuming SSE streams, on trio's clock.

Each stream keeps its newest ``max_events`` events, none older than
``max_age_s``; a session keeps at most ``MAX_REQUEST_STREAMS`` answered
request streams (never dropping one still waiting for its response); an
event id resumes only the stream it names; a new connection to a stream
ends the one before.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agentws.doors.mcp.sessions.replay import MAX_REQUEST_STREAMS, Replays
from tests.scaling import LINEAR, growth

AGE_S = 300.0


async def test_events_older_than_the_age_bound_are_not_replayed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    replays = Replays(max_events=100, max_age_s=AGE_S)
    stream = replays.standalone()
    stream.record("old", False)
    await trio.sleep(AGE_S - 1)
    stream.record("newer", False)
    assert [data for _, data, _ in stream.after(0)] == ["old", "newer"]
    await trio.sleep(2)
    assert stream.after(0) == [("0.2", "newer", False)]
    await trio.sleep(AGE_S)
    assert stream.after(0) == []
    # Ids go on counting: a client resuming from an old id learns nothing wrong.
    assert stream.record("next", False) == ("0.3", "next", False)


async def test_each_stream_keeps_its_newest_events() -> None:
    replays = Replays(max_events=3, max_age_s=AGE_S)
    stream = replays.open()
    for n in range(5):
        stream.record(str(n), n == 4)
    assert stream.after(0) == [("1.3", "2", False), ("1.4", "3", False), ("1.5", "4", True)]
    assert stream.finished


async def test_answered_request_streams_are_dropped_oldest_first() -> None:
    replays = Replays(max_events=10, max_age_s=AGE_S)
    waiting = replays.open()  # never answered: never dropped
    answered = []
    for _ in range(MAX_REQUEST_STREAMS + 5):
        stream = replays.open()
        stream.record("{}", True)
        answered.append(stream)
    assert replays.find(waiting.event_id(0)) == (waiting, 0)
    kept = [s for s in answered if replays.find(s.event_id(0)) is not None]
    assert kept == answered[-(MAX_REQUEST_STREAMS - 1) :]


async def test_opening_a_stream_costs_the_same_however_many_there_are() -> None:
    # A batch opens a stream per request: it used to cost one pass over all of
    # them (16,000 requests took 4.8 s of the event loop), quadratic in all.
    def open_and_answer(n: int) -> None:
        replays = Replays(max_events=10, max_age_s=AGE_S)
        waiting = [replays.open() for _ in range(n)]
        for stream in waiting:
            stream.record("{}", True)
        for _ in range(n):
            replays.open().record("{}", True)

    assert growth(lambda n: n, open_and_answer, 5_000) < LINEAR
    replays = Replays(max_events=10, max_age_s=AGE_S)
    # Streams answered with JSON are discarded: they never hold a kept one's place.
    resumable = replays.open()
    resumable.record("{}", True)
    for _ in range(10 * MAX_REQUEST_STREAMS):
        stream = replays.open()
        stream.record("{}", True)
        replays.discard(stream)
    assert replays.find(resumable.event_id(0)) == (resumable, 0)


@pytest.mark.parametrize("event_id", ["", "1", "1.", "1.x", "1.²", "9.0", "1.2", "0.5"])
async def test_ids_of_no_kept_event_resume_nothing(event_id: str) -> None:
    replays = Replays(max_events=10, max_age_s=AGE_S)
    replays.standalone()
    replays.open().record("{}", False)
    assert replays.resume(event_id) is None


async def test_a_new_connection_takes_the_stream_over() -> None:
    replays = Replays(max_events=10, max_age_s=AGE_S)
    stream = replays.open()
    first = stream.connect()
    stream.record("a", False)
    resumed = replays.resume("1.0")
    assert resumed is not None
    missed, second = resumed
    assert missed == [("1.1", "a", False)]
    assert second is not None
    # The first connection's channel ended; the stream's live events go to the second.
    with pytest.raises(trio.EndOfChannel):
        first.receive.receive_nowait()
    first.close()  # the old connection leaving does not detach the new one
    assert stream.listener is not None
    second.close()
    assert stream.listener is None
