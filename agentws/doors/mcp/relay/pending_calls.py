"""Tool calls of stateless (2026-07-28) clients that wait for their client's input.

A remote MCP connector may, while it runs a call, ask for elicitation or
sampling. A client of the stateless revision takes no request from the
server: it is answered ``input_required`` instead, with the question(s) and a
``requestState``, and retries the call with its ``inputResponses`` and that
state. Meanwhile the call goes on here, in a task of the process, waiting for
the answers (at most ``answer_s``); the retry hands them over and waits for
what comes next: the result, or another question (any number of rounds).

The state is ``agwp_<instance id>.<random>``, new each round (an answered
round's state continues nothing): the instance holding the call can be read
off it, so a retry that reaches another instance is forwarded there by
the door, as a request of another instance's session is; any instance
accepts a stateless client's request. Only the bearer token that made the
call can continue it.

A step that is cancelled (its client went away) while the call runs, rather
than waits for an answer, cancels the call: the remote is told, as for any
client that gave up. A call ends as soon as its client took its outcome; one
whose outcome nobody takes is kept a question's time (``answer_s``), for a
retry. Every pending call ends at shutdown.

A step may be given a :class:`KeepAlive`: while it waits for its call, it
beats every ``every`` seconds, so that a response held open for a slow
call shows its client (and any proxy between) that it is alive, without a
task of its own beside it. A call that runs in its request beats from
:attr:`PendingCalls.beats` (:mod:`agentws.doors.mcp.relay.beats`).

Calls are bounded per process (``max_calls``) and per bearer token
(``max_per_token``), so that one token's unanswered questions cannot take
every place: a call over either is refused with
:class:`~agentws.core.errors.OverCapacityError`, which says which limit and
when to retry.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import mcp_types as types
import trio
from mcp.shared.exceptions import MCPError

from agentws.core.errors import OverCapacityError
from agentws.doors.mcp.relay.beats import Beats

__all__ = [
    "KeepAlive",
    "PendingCall",
    "PendingCalls",
    "Step",
    "is_pending_state",
    "owner_of_state",
]

log = logging.getLogger("agentws.mcp")

#: What a call comes to, or a step of it: its result, or questions to answer first.
Step = types.CallToolResult | types.InputRequiredResult
_STATE_PREFIX = "agwp_"
# How long a step waits for more questions after one arrived.
_GATHER_S = 0.05


def _new_state(instance_id: str) -> str:
    return f"{_STATE_PREFIX}{instance_id}.{secrets.token_urlsafe(18)}"


def is_pending_state(state: object) -> bool:
    """Whether a ``requestState`` names a pending call (not, say, a confirm token)."""
    return isinstance(state, str) and state.startswith(_STATE_PREFIX)


def owner_of_state(state: str) -> str | None:
    """The instance holding the pending call ``state`` names."""
    owner, dot, _ = state.removeprefix(_STATE_PREFIX).partition(".")
    return owner if dot and owner else None


@attrs.frozen
class KeepAlive:
    """What a step does each ``every`` seconds it waits for its call: ``beat()``."""

    every: float
    beat: Callable[[], Awaitable[None]]


@attrs.define(eq=False)
class _Question:
    key: str
    request: types.InputRequest
    answered: trio.Event = attrs.field(factory=trio.Event)
    answer: Any = None


@attrs.define(eq=False)
class PendingCall:
    """One call in flight: its questions to its client, and its outcome when it has one."""

    state: str
    token_id: str
    answer_s: float
    #: The caller's own object for the call (its way back to the client).
    context: Any = None
    #: Asked and not yet answered, by key, in the order asked.
    open: dict[str, _Question] = attrs.field(factory=dict)
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    finished: trio.Event = attrs.field(factory=trio.Event)
    #: Set when a step of the client took the outcome: nothing waits for the call any more.
    taken: trio.Event = attrs.field(factory=trio.Event)
    outcome: Step | None = None
    failure: BaseException | None = None
    _changed: trio.Event = attrs.field(factory=trio.Event)
    _asked: int = 0

    async def ask(self, request: types.InputRequest) -> types.Result | types.ErrorData:
        """Put a question to the client (on its next step) and wait for the answer.

        Answers with the client's result, or an error for the remote when the
        client does not answer in ``answer_s``.
        """
        self._asked += 1
        question = _Question(f"q{self._asked}", request)
        self.open[question.key] = question
        self._wake()
        with trio.move_on_after(self.answer_s):
            await question.answered.wait()
            result: types.Result | types.ErrorData = question.answer
            return result
        self.open.pop(question.key, None)
        return types.ErrorData(
            code=types.INTERNAL_ERROR,
            message=f"the client did not answer within {self.answer_s:g} s",
        )

    def give(self, responses: dict[str, Any]) -> None:
        """The client's answers, by the keys it was asked with (unknown keys are ignored)."""
        for key, response in responses.items():
            question = self.open.pop(key, None)
            if question is not None:
                question.answer = response
                question.answered.set()

    def finish(self) -> None:
        """The call ended (:attr:`outcome` or :attr:`failure` says how)."""
        self.finished.set()
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def next_step(self) -> Step:
        """The outcome once there is one, or the open questions once there are any."""
        while not self.finished.is_set() and not self.open:
            await self._changed.wait()
        # A remote that asks several things at once sends them one after the
        # other: gather what follows closely, so the client gets them in one round.
        while not self.finished.is_set():
            asked = len(self.open)
            with trio.move_on_after(_GATHER_S):
                await self._changed.wait()
            if len(self.open) == asked:
                break
        if self.finished.is_set():
            if self.failure is not None or self.outcome is None:
                raise self.failure or MCPError(
                    types.INTERNAL_ERROR, "the call ended without a result"
                )
            return self.outcome
        return types.InputRequiredResult(
            input_requests={key: question.request for key, question in self.open.items()},
            request_state=self.state,
        )


@attrs.define(eq=False)
class PendingCalls:
    """The pending calls of this process, run in a nursery of their own."""

    instance_id: str
    #: How long a question waits for its client's answer.
    answer_s: float
    max_calls: int = 1000
    max_per_token: int = 100
    _calls: dict[str, PendingCall] = attrs.field(factory=dict, init=False)
    #: Calls running (and kept for their outcome), by bearer token.
    _live: Counter[str] = attrs.field(factory=Counter, init=False)
    #: Beats for the calls of stateless callers that run in their requests.
    beats: Beats = attrs.field(factory=Beats, init=False)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    _closing: trio.Event = attrs.field(factory=trio.Event, init=False)

    def __len__(self) -> int:
        """Calls a client's step can continue or take the outcome of."""
        return len(self._calls)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run pending calls (and :attr:`beats`) until :meth:`close` (or cancelled),
        which ends every one."""
        async with trio.open_nursery() as beating:
            await beating.start(self.beats.serve)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await self._closing.wait()
                nursery.cancel_scope.cancel()
            beating.cancel_scope.cancel()

    def close(self) -> None:
        self._closing.set()

    async def start(
        self,
        token_id: str,
        run: Callable[[PendingCall], Awaitable[Step]],
        context: Any = None,
        keepalive: KeepAlive | None = None,
    ) -> Step:
        """Run ``run(call)`` as a call that may ask its client; its first step.

        Error handling:
            :class:`~agentws.core.errors.OverCapacityError` at ``max_calls``, at the
            token's ``max_per_token``, or shutting down.
        """
        if self._nursery is None or self._closing.is_set():
            raise OverCapacityError("the server is shutting down", retry_after_s=5)
        if self._live.total() >= self.max_calls:
            raise OverCapacityError(
                f"{self._live.total()} calls wait for their clients' input in this process, its "
                "limit (AGENTWS_MCP_MAX_SESSIONS); retry in a few seconds",
                retry_after_s=5,
            )
        if self._live[token_id] >= self.max_per_token:
            raise OverCapacityError(
                f"this token has {self._live[token_id]} calls waiting for its client's input, "
                "its limit (AGENTWS_MCP_MAX_PENDING_PER_TOKEN); answer them, or retry in a few "
                "seconds",
                retry_after_s=5,
            )
        call = PendingCall(_new_state(self.instance_id), token_id, self.answer_s, context)
        self._calls[call.state] = call
        self._live[token_id] += 1
        self._nursery.start_soon(self._run, call, run)
        return await self._step(call, keepalive)

    async def resume(
        self,
        state: str,
        token_id: str,
        responses: dict[str, Any],
        *,
        on_step: Callable[[Any], None] | None = None,
        keepalive: KeepAlive | None = None,
    ) -> Step:
        """The next step of the call ``state`` names, given the client's answers.

        ``on_step(context)`` is told of the new round first (its request is now the client's).
        """
        call = self._calls.get(state)
        if call is None or call.token_id != token_id:
            raise MCPError(
                types.INVALID_PARAMS,
                "requestState names no call waiting for input here (it ended, expired or "
                "was never made with this token): call the tool again",
            )
        if on_step is not None:
            on_step(call.context)
        call.give(responses)
        return await self._step(call, keepalive)

    async def _step(self, call: PendingCall, keepalive: KeepAlive | None) -> Step:
        try:
            step = await _next_step(call, keepalive)
        except trio.Cancelled:
            # The client left while the call ran: nobody will take its outcome.
            if not call.open:
                call.scope.cancel()
            raise
        except BaseException:
            if call.finished.is_set():
                # Its failure was the outcome, and this step took it.
                self._calls.pop(call.state, None)
                call.taken.set()
            raise
        if call.finished.is_set():
            self._calls.pop(call.state, None)
            call.taken.set()
        elif isinstance(step, types.InputRequiredResult):
            # A new state each round: one that was answered continues nothing.
            self._calls.pop(call.state, None)
            call.state = _new_state(self.instance_id)
            self._calls[call.state] = call
            step.request_state = call.state
        return step

    async def _run(self, call: PendingCall, run: Callable[[PendingCall], Awaitable[Step]]) -> None:
        try:
            with call.scope:
                call.outcome = await run(call)
            if call.scope.cancelled_caught:
                call.failure = MCPError(types.INTERNAL_ERROR, "the call was cancelled")
        except Exception as exc:
            call.failure = exc
        finally:
            call.finish()
        try:
            # The client's step takes the outcome (at once, when it is waiting);
            # if none comes in a question's time, nobody will.
            with trio.move_on_after(self.answer_s):
                await call.taken.wait()
        finally:
            self._calls.pop(call.state, None)
            self._live[call.token_id] -= 1
            if self._live[call.token_id] <= 0:
                del self._live[call.token_id]


async def _next_step(call: PendingCall, keepalive: KeepAlive | None) -> Step:
    """``call``'s next step, beating ``keepalive`` each time it has waited its interval."""
    if keepalive is None:
        return await call.next_step()
    while True:
        # Waiting again after a beat loses nothing: what the call asked or
        # ended with is on the call, not in the wait.
        with trio.move_on_after(keepalive.every):
            return await call.next_step()
        await keepalive.beat()
