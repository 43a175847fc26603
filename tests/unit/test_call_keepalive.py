"""A stateless caller's call shows it is alive while it runs: a beat each interval it waits.

A pending call's step beats from its own wait (:class:`PendingCalls`); a
call that runs in the request (a native connector's) beats from a task
beside it (:func:`call_modern`). A call answered within the interval never
beats, so its answer stays one JSON response. Timers on ``autojump_clock``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
import trio
import trio.testing
from mcp.shared.exceptions import MCPError

from agentws.doors.mcp.relay.modern_calls import call_modern
from agentws.doors.mcp.relay.pending_calls import KeepAlive, PendingCall
from tests.unit.test_pending_calls import _result, pending_calls

EVERY_S = 15.0


class Beats:
    def __init__(self) -> None:
        self.at: list[float] = []

    async def beat(self) -> None:
        self.at.append(trio.current_time())

    def keepalive(self) -> KeepAlive:
        return KeepAlive(EVERY_S, self.beat)


async def test_a_pending_calls_step_beats_each_interval_it_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def run(call: PendingCall) -> types.CallToolResult:
        await trio.sleep(40)
        return _result("slow")

    beats = Beats()
    async with pending_calls() as calls:
        start = trio.current_time()
        assert await calls.start("tok", run, keepalive=beats.keepalive()) == _result("slow")
    assert [at - start for at in beats.at] == [EVERY_S, 2 * EVERY_S]


async def test_a_question_asked_after_a_beat_still_reaches_the_client(
    autojump_clock: trio.testing.MockClock,
) -> None:
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message="sure?", requested_schema={"type": "object"})
    )

    async def run(call: PendingCall) -> types.CallToolResult:
        await trio.sleep(20)
        await call.ask(question)
        return _result("asked")

    beats = Beats()
    async with pending_calls() as calls:
        step = await calls.start("tok", run, keepalive=beats.keepalive())
        assert isinstance(step, types.InputRequiredResult)
        assert list((step.input_requests or {}).values()) == [question]
        assert len(beats.at) == 1
        answer = {"q1": types.ElicitResult(action="accept", content={})}
        resumed = await calls.resume(
            str(step.request_state), "tok", answer, keepalive=beats.keepalive()
        )
        assert resumed == _result("asked")
    assert len(beats.at) == 1  # the answer came at once: no beat in the second round


async def test_a_call_answered_in_time_never_beats(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def run(call: PendingCall) -> types.CallToolResult:
        await trio.sleep(EVERY_S - 1)
        return _result("quick")

    beats = Beats()
    async with pending_calls() as calls:
        assert await calls.start("tok", run, keepalive=beats.keepalive()) == _result("quick")
    assert beats.at == []


def _context(keepalive: KeepAlive | None) -> Any:
    # What call_modern reads off the request's context: the caller and its keep-alive.
    caller = SimpleNamespace(caller=SimpleNamespace(token_id="tok"), keepalive=keepalive)
    return SimpleNamespace(lifespan_context=caller)


async def test_a_call_run_in_the_request_beats_beside_it_until_it_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def run(channel: Any) -> types.CallToolResult:
        await trio.sleep(50)
        return _result("native")

    beats = Beats()
    params = types.CallToolRequestParams(name="github_search", arguments={})
    async with pending_calls() as calls:
        start = trio.current_time()
        result = await call_modern(_context(beats.keepalive()), params, calls, False, run)
        ended = trio.current_time()
        await trio.sleep(3 * EVERY_S)
    assert result == _result("native")
    assert [at - start for at in beats.at] == [EVERY_S, 2 * EVERY_S, 3 * EVERY_S]
    assert ended - start == 50  # and no beat after it ended


async def test_a_call_run_in_the_request_that_fails_fails_as_itself(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def run(channel: Any) -> types.CallToolResult:
        await trio.sleep(20)
        raise MCPError(types.INVALID_PARAMS, "no such repository")

    beats = Beats()
    params = types.CallToolRequestParams(name="github_search", arguments={})
    async with pending_calls() as calls:
        with pytest.raises(MCPError) as failed:
            await call_modern(_context(beats.keepalive()), params, calls, False, run)
    # The error the SDK maps to the wire, not an exception group around it.
    assert failed.value.error.message == "no such repository"
    assert len(beats.at) == 1


def _remote_context(keepalive: KeepAlive | None, capabilities: types.ClientCapabilities) -> Any:
    context = _context(keepalive)
    context.session = SimpleNamespace(client_capabilities=capabilities)
    return context


@pytest.mark.parametrize(
    ("capabilities", "pending"),
    [
        (types.ClientCapabilities(), 0),
        (types.ClientCapabilities(elicitation=types.ElicitationCapability()), 1),
    ],
)
async def test_a_remote_call_waits_as_a_pending_call_only_if_its_client_can_be_asked(
    autojump_clock: trio.testing.MockClock, capabilities: types.ClientCapabilities, pending: int
) -> None:
    seen: list[int] = []
    beats = Beats()

    async def run(channel: Any) -> types.CallToolResult:
        seen.append(len(calls))
        await trio.sleep(20)
        return _result("remote")

    params = types.CallToolRequestParams(name="upstream_echo", arguments={})
    async with pending_calls() as calls:
        start = trio.current_time()
        context = _remote_context(beats.keepalive(), capabilities)
        assert await call_modern(context, params, calls, True, run) == _result("remote")
    assert seen == [pending]
    assert [at - start for at in beats.at] == [EVERY_S]
