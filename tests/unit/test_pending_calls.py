"""Calls of stateless clients that wait for input: rounds, answers, time-outs, cancellation.

The service's own timers (how long a question waits) run on ``autojump_clock``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import mcp_types as types
import pytest
import trio
import trio.testing
from mcp.shared.exceptions import MCPError

from agentws.core.errors import OverCapacityError
from agentws.doors.mcp.relay.pending_calls import (
    PendingCall,
    PendingCalls,
    is_pending_state,
    owner_of_state,
)

ANSWER_S = 30.0


@asynccontextmanager
async def pending_calls() -> AsyncIterator[PendingCalls]:
    calls = PendingCalls("inst-a", ANSWER_S)
    async with trio.open_nursery() as nursery:
        await nursery.start(calls.serve)
        yield calls
        calls.close()


def _question(text: str) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=text, requested_schema={"type": "object"})
    )


def _result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _yes(content: dict[str, object] | None = None) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content or {"ok": True})  # type: ignore[arg-type]


async def test_a_call_asks_round_after_round_and_ends_with_its_result() -> None:
    heard: list[object] = []

    async def run(call: PendingCall) -> types.CallToolResult:
        heard.append(await call.ask(_question("first?")))
        heard.append(await call.ask(_question("second?")))
        return _result("done")

    async with pending_calls() as calls:
        first = await calls.start("tok", run)
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None
        assert list(first.input_requests) == ["q1"]
        state = first.request_state
        assert state is not None and is_pending_state(state)
        assert owner_of_state(state) == "inst-a"

        second = await calls.resume(state, "tok", {"q1": _yes()})
        assert isinstance(second, types.InputRequiredResult)
        assert second.input_requests is not None
        assert list(second.input_requests) == ["q2"]
        # Each round has a state of its own; an answered one continues nothing.
        assert second.request_state is not None and second.request_state != state
        with pytest.raises(MCPError):
            await calls.resume(state, "tok", {"q2": _yes()})
        state = second.request_state

        last = await calls.resume(state, "tok", {"q2": _yes({"n": 2})})
        assert last == _result("done")
        assert heard == [_yes(), _yes({"n": 2})]
        assert len(calls) == 0


async def test_unanswered_questions_are_asked_again() -> None:
    async def run(call: PendingCall) -> types.CallToolResult:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call.ask, _question("a?"))
            nursery.start_soon(call.ask, _question("b?"))
        return _result("both")

    async with pending_calls() as calls:
        step = await calls.start("tok", run)
        assert isinstance(step, types.InputRequiredResult)
        # Both asked before the step answered, or the second on the next round.
        state = step.request_state
        assert state is not None
        asked = set(step.input_requests or {})
        while asked != {"q1", "q2"}:
            step = await calls.resume(state, "tok", {})
            assert isinstance(step, types.InputRequiredResult)
            assert step.request_state is not None
            state = step.request_state
            asked |= set(step.input_requests or {})
        step = await calls.resume(state, "tok", {"q1": _yes()})
        assert isinstance(step, types.InputRequiredResult)
        assert list(step.input_requests or {}) == ["q2"]
        assert step.request_state is not None
        assert await calls.resume(step.request_state, "tok", {"q2": _yes()}) == _result("both")


async def test_another_token_or_a_made_up_state_continues_nothing() -> None:
    async def run(call: PendingCall) -> types.CallToolResult:
        await call.ask(_question("?"))
        return _result("done")

    async with pending_calls() as calls:
        step = await calls.start("tok", run)
        assert isinstance(step, types.InputRequiredResult)
        assert step.request_state is not None
        for state, token in [(step.request_state, "other"), ("agwp_inst-a.nothing", "tok")]:
            with pytest.raises(MCPError) as refused:
                await calls.resume(state, token, {"q1": _yes()})
            assert refused.value.error.code == types.INVALID_PARAMS
        assert len(calls) == 1


async def test_a_question_not_answered_in_time_fails_for_the_remote(
    autojump_clock: trio.testing.MockClock,
) -> None:
    answers: list[object] = []

    async def run(call: PendingCall) -> types.CallToolResult:
        answers.append(await call.ask(_question("?")))
        return _result("gave up")

    async with pending_calls() as calls:
        step = await calls.start("tok", run)
        assert isinstance(step, types.InputRequiredResult)
        assert step.request_state is not None
        await trio.sleep(ANSWER_S + 1)
        [answer] = answers
        assert isinstance(answer, types.ErrorData)
        assert "did not answer" in answer.message
        # The outcome waits a question's time for the client's next step, then is dropped.
        assert await calls.resume(step.request_state, "tok", {}) == _result("gave up")
        assert len(calls) == 0


async def test_a_client_gone_while_its_call_runs_cancels_the_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cancelled = trio.Event()
    started = trio.Event()

    async def run(call: PendingCall) -> types.CallToolResult:
        try:
            started.set()
            await trio.sleep_forever()
        finally:
            cancelled.set()

    async with pending_calls() as calls:
        with trio.move_on_after(1) as step:
            await calls.start("tok", run)
        assert step.cancelled_caught
        assert started.is_set()
        with trio.fail_after(1):
            await cancelled.wait()


async def test_shutdown_ends_every_pending_call() -> None:
    ended = trio.Event()

    async def run(call: PendingCall) -> types.CallToolResult:
        try:
            await call.ask(_question("?"))
        finally:
            ended.set()
        return _result("never")

    async with pending_calls() as calls:
        await calls.start("tok", run)
    assert ended.is_set()


async def test_a_finished_call_whose_outcome_was_taken_is_not_kept() -> None:
    async def run(call: PendingCall) -> types.CallToolResult:
        return _result("done at once")

    async with pending_calls() as calls:
        for _ in range(50):
            assert await calls.start("tok", run) == _result("done at once")
        # Every call's task ends once its outcome was taken: none waits out a
        # question's time holding the call (it used to, for every call).
        await trio.testing.wait_all_tasks_blocked()
        assert len(calls) == 0
        assert calls._nursery is not None and calls._nursery.child_tasks == frozenset()


async def test_each_token_has_its_own_share_of_pending_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def run(call: PendingCall) -> types.CallToolResult:
        await call.ask(_question("never answered?"))
        return _result("late")

    calls = PendingCalls("inst-a", ANSWER_S, max_calls=5, max_per_token=3)
    async with trio.open_nursery() as nursery:
        await nursery.start(calls.serve)
        for _ in range(3):
            assert isinstance(await calls.start("greedy", run), types.InputRequiredResult)
        with pytest.raises(OverCapacityError, match="AGENTWS_MCP_MAX_PENDING_PER_TOKEN"):
            await calls.start("greedy", run)
        for _ in range(2):
            assert isinstance(await calls.start("other", run), types.InputRequiredResult)
        with pytest.raises(OverCapacityError, match="AGENTWS_MCP_MAX_SESSIONS"):
            await calls.start("third", run)
        # Unanswered questions give their places back after a question's time.
        await trio.sleep(ANSWER_S * 2 + 1)
        assert len(calls) == 0
        assert isinstance(await calls.start("greedy", run), types.InputRequiredResult)
        calls.close()
