"""A mass close ends every stream before any of its responses unwinds, then unwinds them a
batch at a time; a client that hangs up on reading its stream's end has its connection
closed in its response's turn; stopping the supervisor lets every held response go."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import trio
import trio.testing

from agentws.bridges import hangups
from agentws.bridges.hangups import HangUp
from agentws.doors.mcp.sessions.supervisor import (
    _CANCEL_BATCH,
    _UNWIND_BATCH,
    McpSession,
    SessionSupervisor,
)
from agentws.doors.mcp.sessions.teardowns import TeardownHold
from agentws.doors.mcp.transports.door_requests import DoorRequest
from agentws.doors.mcp.transports.streams import stream_events, write_sse
from agentws.http.asgi import BodyReader
from agentws.settings.config import Settings
from tests.unit.supervisor_support import make_caller, running_supervisor

# Three batches and a part.
MANY = 3 * _CANCEL_BATCH + 50
PATIENCE_S = 30.0


def _supervisor() -> AbstractAsyncContextManager[SessionSupervisor]:
    settings = Settings(mcp_max_sessions=2 * MANY, mcp_max_sessions_per_token=2 * MANY)
    return running_supervisor(settings, "teardown-holds")


class _Log(list[tuple[str, TeardownHold | None]]):
    """What the responses did, in order: a stream ended, a response unwound, a connection
    closed (each with its hold)."""

    def __init__(self) -> None:
        super().__init__()
        self._grew = trio.Event()

    def add(self, kind: str, session: McpSession) -> None:
        self.append((kind, session.teardown_hold))
        self._grew.set()

    async def reaching(self, count: int) -> None:
        while len(self) < count:
            self._grew = trio.Event()
            await self._grew.wait()


async def _respond(session: McpSession, log: _Log) -> None:
    """What a stream's HTTP response does: read it to its end, leave, wait its turn, unwind."""
    connection = session.open_stream()
    assert connection is not None
    async for _ in connection.receive:
        pass
    session.leave(connection)
    log.add("ended", session)
    await session.teardown_turn()
    log.add("unwound", session)


async def _revoked_with_responses(count: int) -> _Log:
    """Revoke a token whose ``count`` sessions each have a stream's response; what they did."""
    revoked = make_caller("revoked")
    log = _Log()
    async with _supervisor() as supervisor, trio.open_nursery() as responses:
        for _ in range(count):
            responses.start_soon(_respond, await supervisor.open(revoked, "sse"), log)
        await trio.testing.wait_all_tasks_blocked()
        assert supervisor.revoke(revoked.token_id) == count
        with trio.fail_after(PATIENCE_S):
            await log.reaching(2 * count)
    return log


async def test_every_stream_of_a_mass_close_ends_before_any_response_unwinds() -> None:
    log = await _revoked_with_responses(MANY)

    assert [kind for kind, _ in log] == ["ended"] * MANY + ["unwound"] * MANY
    # The responses unwind a hold's worth at a time, one hold after another.
    unwound = [hold for _, hold in log[MANY:]]
    holds = [hold for i, hold in enumerate(unwound) if i == 0 or hold is not unwound[i - 1]]
    assert len(holds) == len(set(map(id, holds))) == -(-MANY // _UNWIND_BATCH)
    assert all(hold is not None for hold in holds)


async def _never() -> dict[str, Any]:
    await trio.sleep_forever()
    raise AssertionError("unreachable")


async def _sent(message: dict[str, Any]) -> None:
    pass


def _request(send: Any = _sent) -> DoorRequest:
    """A request for a session's stream on an HTTP/1.1 connection; ``send`` takes its answer."""
    return DoorRequest(
        scope={"type": "http", "http_version": "1.1"},
        receive=_never,
        send=send,
        workspace="acme",
        group="ops",
        messages_path=False,
        body=BodyReader(_never, 1.0),
    )


async def _respond_over_http(
    session: McpSession, log: _Log, connections: trio.Nursery, settings: Settings
) -> None:
    """A stream's HTTP response on a connection of its own, whose client hangs up on
    reading the stream's end: the connection's read loop sees its input end then."""
    hang_up = hangups.watch_connection()  # as the Hypercorn bridge does for the connection
    request = _request()
    connection = session.open_stream()
    assert connection is not None
    try:
        assert await write_sse(request, session, stream_events((), connection.receive), settings)
    finally:
        session.leave(connection)
    log.add("ended", session)
    connections.start_soon(_client_hangs_up, hang_up, session, log)
    await session.teardown_turn()
    log.add("unwound", session)


async def _client_hangs_up(hang_up: HangUp, session: McpSession, log: _Log) -> None:
    await hang_up.input_ended()
    log.add("closed", session)


async def test_a_connection_whose_client_hangs_up_on_the_end_closes_in_its_turn() -> None:
    """Its close waits with its response: after every stream of the close has ended."""
    revoked = make_caller("revoked")
    log = _Log()
    async with (
        _supervisor() as supervisor,
        trio.open_nursery() as connections,
        trio.open_nursery() as responses,
    ):
        for _ in range(MANY):
            session = await supervisor.open(revoked, "sse")
            responses.start_soon(_respond_over_http, session, log, connections, supervisor.settings)
        await trio.testing.wait_all_tasks_blocked()
        assert supervisor.revoke(revoked.token_id) == MANY
        with trio.fail_after(PATIENCE_S):
            await log.reaching(3 * MANY)

    kinds = [kind for kind, _ in log]
    assert kinds[:MANY] == ["ended"] * MANY
    assert sorted(kinds[MANY:]) == ["closed"] * MANY + ["unwound"] * MANY
    # Each connection closed in its own batch's turn, which it shares with the responses.
    turns = [hold for kind, hold in log[MANY:] if kind == "closed"]
    assert None not in turns
    assert turns == [hold for kind, hold in log[MANY:] if kind == "unwound"]


async def test_a_mass_close_stops_its_streams_keep_alive_comments(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Taken by a mass close, a stream sends no keep-alive comment until its batch ends it."""
    settings = Settings(
        sse_keepalive_s=1.0, mcp_max_sessions=2 * MANY, mcp_max_sessions_per_token=2 * MANY
    )
    revoked = make_caller("revoked")
    bodies: list[list[bytes]] = []

    async def respond(session: McpSession) -> None:
        sent: list[bytes] = []
        bodies.append(sent)

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                sent.append(message["body"])

        connection = session.open_stream()
        assert connection is not None
        try:
            await write_sse(
                _request(send), session, stream_events((), connection.receive), settings
            )
        finally:
            session.leave(connection)

    async with running_supervisor(settings, "keep-alives") as supervisor:
        for _ in range(MANY):
            await supervisor.open(revoked, "sse")
        # The order the close takes them in: the streams of the first batches are never
        # read, so each of these batches waits out its bound (half a second); the last
        # batch's streams are written, and taken by the close for longer than a
        # keep-alive interval before their batch ends them.
        order = supervisor.sessions_of(revoked.token_id)
        last = order[-(MANY % _CANCEL_BATCH) :]
        unread = [session.open_stream() for session in order[: -len(last)]]
        assert None not in unread
        async with trio.open_nursery() as responses:
            for session in last:
                responses.start_soon(respond, session)
            await trio.sleep(2.5)  # two keep-alive intervals: two comments each
            assert bodies and all(sent == [b": ping\n\n"] * 2 for sent in bodies)
            assert supervisor.revoke(revoked.token_id) == MANY

    assert trio.current_time() > 2.5 + 1.0  # the last batch ended after another interval
    assert all(sent == [b": ping\n\n"] * 2 + [b""] for sent in bodies)


async def test_a_small_close_holds_nothing() -> None:
    """One batch ends at once, in the turn of its close: nothing to put its teardown after."""
    log = await _revoked_with_responses(_CANCEL_BATCH)
    assert {hold for _, hold in log} == {None}


async def test_stopping_the_supervisor_lets_every_held_response_go(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Its close cancelled mid-way (shutdown), no response waits for a turn that never comes."""
    revoked = make_caller("revoked")
    log = _Log()
    async with trio.open_nursery() as responses:
        async with _supervisor() as supervisor:
            for _ in range(MANY):
                await supervisor.open(revoked, "sse")
            # The order the close takes them in: the first batch's streams are read
            # to their end, the others' never (each later batch waits out its bound).
            order = supervisor.sessions_of(revoked.token_id)
            unread = [session.open_stream() for session in order[_CANCEL_BATCH:]]
            assert None not in unread
            for session in order[:_CANCEL_BATCH]:
                responses.start_soon(_respond, session, log)
            await trio.testing.wait_all_tasks_blocked()

            supervisor.revoke(revoked.token_id)
            await trio.sleep(0.1)
            assert [kind for kind, _ in log] == ["ended"] * _CANCEL_BATCH
        with trio.fail_after(PATIENCE_S):
            await log.reaching(2 * _CANCEL_BATCH)
    assert [kind for kind, _ in log[_CANCEL_BATCH:]] == ["unwound"] * _CANCEL_BATCH
