"""Serving one MCP session's messages as the door receives them: no loop per session.

The SDK serves a connection with a read loop: a task reading the client's
messages from a memory stream and handing each to its JSON-RPC dispatcher,
whose writes go to a second stream that another task routes to the HTTP
side. That is several tasks, cancel scopes and streams for every session,
idle or not; at gateway scale (10,000 sessions, most of them idle) they
are most of a session's memory and of the work of tearing sessions down.

Here the door hands each client message straight to the SDK's own
:class:`~mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher`, driven message by
message through :class:`~agentws.bridges.mcp_sdk_bridge.DrivenDispatcher` (request ids,
cancellation, progress, requests to the client and their answers, the
mapping of errors to the wire) and the SDK's
:class:`~mcp.server.runner.ServerRunner` (validation, the initialization
gate, the handlers, result shaping): the protocol is the SDK's, only the
loop is gone. The dispatcher's handler tasks run in the supervisor's
nursery, each under a cancel scope the session holds, so closing a session
cancels exactly its own work; its writes go straight to the session's
router (:meth:`~agentws.doors.mcp.sessions.supervisor.McpSession.send`). An idle session is
a few objects and no task.

A session serves the handshake era (2024-11-05 to 2025-11-25): as the SDK's
handshake connection does, it refuses a request carrying the 2026-07-28
envelope. Stateless requests never reach a session (:mod:`agentws.doors.mcp.dispatch.modern`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import anyio
import trio
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.shared.dispatcher import DispatchContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.shared.transport_context import TransportContext
from mcp_types import INVALID_REQUEST

from agentws.bridges.mcp_sdk_bridge import (
    DrivenDispatcher,
    exit_stack_has_callbacks,
    has_modern_envelope,
)

__all__ = ["MessageSink", "SessionServing"]

log = logging.getLogger("agentws.mcp")

# As the SDK's handshake loop: `initialize` is answered before the next message
# is taken, so a client that pipelines it sees the session initialized.
_INLINE = frozenset({"initialize"})


class MessageSink(Protocol):
    """Where a session's outgoing messages go (its router)."""

    async def send(self, item: SessionMessage, /) -> None: ...


class _NothingToClose:
    """The parts of a stream the dispatcher may call but that hold nothing here."""

    async def aclose(self) -> None:
        """Nothing to close: the session closes its own streams."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        return None


class _Writer(_NothingToClose):
    """The dispatcher's write stream: each message goes straight to the sink."""

    __slots__ = ("_sink",)

    def __init__(self, sink: MessageSink) -> None:
        self._sink = sink

    async def send(self, item: SessionMessage, /) -> None:
        await self._sink.send(item)


class _NoReads(_NothingToClose):
    """The dispatcher's read stream, never read: the door delivers each message."""

    async def receive(self) -> SessionMessage | Exception:
        raise trio.EndOfChannel

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        raise StopAsyncIteration


_NO_READS = _NoReads()


class _SessionTasks:
    """Runs the dispatcher's tasks in the supervisor's nursery, each cancellable with the session.

    It stands where the dispatcher expects its task group (``start_soon``).
    A task that raises is logged and ends its session: one broken session
    must not take the others, or the supervisor, down with it.
    """

    __slots__ = ("_failed", "_nursery", "_scopes")

    def __init__(self, nursery: trio.Nursery, failed: Callable[[], None]) -> None:
        self._nursery = nursery
        self._failed = failed
        self._scopes: set[trio.CancelScope] = set()

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: object) -> None:
        scope = trio.CancelScope()
        self._scopes.add(scope)
        self._nursery.start_soon(self._run, scope, fn, args)

    async def _run(
        self, scope: trio.CancelScope, fn: Callable[..., Awaitable[Any]], args: tuple[object, ...]
    ) -> None:
        try:
            with scope:
                await fn(*args)
        except Exception:
            log.exception("an MCP session's handler failed; closing the session")
            self._failed()
        finally:
            self._scopes.discard(scope)

    @property
    def running(self) -> int:
        return len(self._scopes)

    def cancel_all(self) -> None:
        for scope in self._scopes:
            scope.cancel()


class SessionServing:
    """One session's protocol state (the SDK's connection and runner) and its running work.

    Resource handling:
        Built by the supervisor when the session opens; :meth:`close` cancels
        every handler the session has running (each answers its request with
        ``CONNECTION_CLOSED``, as the SDK's loop does at shutdown), fails the
        requests waiting for the client's answers, and unwinds the
        connection's exit stack in a task of its own.
    """

    __slots__ = ("_connection", "_dispatcher", "_nursery", "_runner", "_tasks")

    def __init__(
        self,
        server: Server[Any],
        state: Any,
        init_options: InitializationOptions,
        sink: MessageSink,
        nursery: trio.Nursery,
        *,
        session_id: str,
        failed: Callable[[], None],
    ) -> None:
        self._nursery = nursery
        self._tasks = _SessionTasks(nursery, failed)
        self._dispatcher = DrivenDispatcher(
            _NO_READS, _Writer(sink), inline_methods=_INLINE, task_group=self._tasks
        )
        self._connection = Connection.for_loop(self._dispatcher, session_id=session_id)
        self._runner = ServerRunner(server, self._connection, state, init_options=init_options)

    @property
    def running(self) -> int:
        """Handler tasks of this session running now."""
        return self._tasks.running

    async def deliver(self, item: SessionMessage) -> None:
        """Serve one message from the client: a request's handler starts (``initialize``
        is answered before this returns), a response wakes its waiter."""
        if self._dispatcher.closed:
            raise anyio.ClosedResourceError("the session has ended")
        # The handlers run in the context of the request that brought the
        # message (its log context), as the loop runs them in the sender's.
        await self._dispatcher.deliver(
            item, self._on_request, self._runner.on_notify, contextvars.copy_context()
        )

    async def _on_request(
        self, dctx: DispatchContext[TransportContext], method: str, params: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        if method != "initialize" and has_modern_envelope(params):
            raise MCPError(
                code=INVALID_REQUEST,
                message="this connection serves the handshake protocol era; "
                "requests carrying the 2026-07-28 envelope are not accepted on it",
            )
        return await self._runner.on_request(dctx, method, params)

    def close(self) -> None:
        """Stop serving: cancel what runs, fail what waits on the client."""
        self._dispatcher.shut()
        self._tasks.cancel_all()
        # Handlers may leave cleanups on the connection's exit stack; most
        # sessions leave none, and closing 10,000 of them should not start
        # 10,000 tasks for nothing.
        if exit_stack_has_callbacks(self._connection):
            self._nursery.start_soon(aclose_shielded, self._connection)

    def release(self) -> None:
        """Nothing of the session runs any more: let go of what points back at it.

        The SDK's runner keeps its bound handlers (cached properties), so it
        and everything it reaches, the session included, would wait for a
        pass of the cycle collector; ten thousand sessions revoked at once
        would make that pass take seconds. Without them the session's objects
        are freed as soon as it is let go of.
        """
        for cached in ("on_request", "on_notify"):
            with contextlib.suppress(AttributeError):  # never asked for
                delattr(self._runner, cached)
