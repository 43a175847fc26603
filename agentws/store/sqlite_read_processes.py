"""Read processes: SQLite reads run, and their rows shaped, in processes of their own.

A read handed to a reader thread (:mod:`agentws.store.sqlite_threads`) takes
the interpreter lock back after each step of SQLite's work and to shape its
rows. Under load the event loop and four readers handed the lock back and
forth about 9,000 times a second, a reader most often woken only to find it
taken again: the readers spent 0.6-0.8 ms of CPU a search beyond the query
itself, and the loop waited for the lock or a core. A process has a lock of
its own.

Which reads come here: :meth:`~agentws.store.sqlite.SqliteDatabase.fetch_shaped`'s
whose shape pickles (a module-level function, or a ``functools.partial`` of
one, such as a search's answer). A shape that does not pickle, or that the
process cannot load, is read by the threads instead, as is every read while
no process is ready (the first moments after the first one, or once they
have all ended).

Each process holds one read-only connection and answers one request at a
time, in order, over a socket pair: a length-prefixed pickle each way.
Pickle is safe here: the peer is this process's own child on a socket pair,
never the network. The processes start with the first read that would use
them (a store that never searches starts none), and end when the store
closes: their socket closes and they exit; one that lingers is killed. A
process that ends on its own fails the read it was doing
(:class:`~agentws.core.errors.StoreUnavailableError`) and is not replaced:
the threads read in its stead.

The child's side is :mod:`agentws.store.sqlite_read_child`.
"""

from __future__ import annotations

import logging
import pickle
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Final

import trio

from agentws.core.errors import StoreUnavailableError

__all__ = ["CANNOT", "DONE", "HEADER", "RAISED", "READY", "ReadProcesses"]

log = logging.getLogger("agentws.store")

# The child's module: nothing imports it (run with -m, it must not be imported already).
_CHILD: Final = "agentws.store.sqlite_read_child"
#: Each message's length, before it.
HEADER: Final = struct.Struct("!I")
#: The child's first byte: its connection is open, it takes requests.
READY: Final = b"R"
#: What the child answers: the shape's result, what was raised, or that it
#: could not load the request (the threads then read it).
DONE, RAISED, CANNOT = 0, 1, 2
# A child still running this long after its socket closed is killed.
_EXIT_WAIT_S: Final = 2.0

Shape = Callable[[list[dict[str, Any]]], Any]


class _Child:
    __slots__ = ("process", "raw", "sock")

    def __init__(self, process: subprocess.Popen[bytes], raw: socket.socket) -> None:
        self.process = process
        self.raw = raw  # polled for the ready byte without a turn of the loop
        self.sock = trio.socket.from_stdlib_socket(raw)

    def ready(self) -> bool | None:
        """Whether the child has said it is ready; None if it ended first."""
        try:
            first = self.raw.recv(1)
        except BlockingIOError:
            return False
        except OSError:
            return None
        return True if first == READY else None

    async def exchange(self, request: bytes) -> tuple[int, Any]:
        await _send_all(self.sock, request)
        (size,) = HEADER.unpack(await _receive_exactly(self.sock, HEADER.size))
        answer: tuple[int, Any] = pickle.loads(  # noqa: S301 - from our own child
            await _receive_exactly(self.sock, size)
        )
        return answer


class ReadProcesses:
    """``count`` processes reading the SQLite database at ``path``, started on first use."""

    def __init__(self, path: str, count: int) -> None:
        self._path = path
        self._count = count
        self._started = False
        self._starting: list[_Child] = []
        self._children: list[_Child] = []
        self._live = 0
        self._idle_send, self._idle = trio.open_memory_channel[_Child](max(count, 1))

    async def read(
        self, shape: Shape, sql: str, args: tuple[Any, ...], deadline_s: float
    ) -> tuple[bool, Any]:
        """``(True, shape(rows))`` read by a process, or ``(False, None)``: the threads read it.

        Raises what the read or the shape raised (the driver's errors unconverted).
        """
        try:
            request = pickle.dumps((shape, sql, args, deadline_s), pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            return False, None  # a closure, a lambda: the threads shape it
        child = await self._take()
        if child is None:
            return False, None
        framed = HEADER.pack(len(request)) + request
        try:
            # As a thread's read, it runs to its end once handed over (it has a
            # deadline of its own): cancelled halfway, the answer left unread
            # would be the next read's.
            with trio.CancelScope(shield=True):
                status, value = await child.exchange(framed)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self._lost(child, exc)
            raise StoreUnavailableError("SQLite: a read process ended during a read") from None
        except BaseException:
            self._lost(child, None)
            raise
        self._idle_send.send_nowait(child)
        await trio.lowlevel.checkpoint_if_cancelled()
        if status == CANNOT:
            return False, None
        if status == RAISED:
            raise value
        return True, value

    async def _take(self) -> _Child | None:
        if not self._started:
            self._start()
        if self._starting:
            self._poll_starting()
        while self._live:
            try:
                child = self._idle.receive_nowait()
            except trio.WouldBlock:
                try:
                    child = await self._idle.receive()
                except trio.EndOfChannel:
                    return None  # the last one ended while this read waited
            if child.process.poll() is None:
                return child
            self._lost(child, None)  # ended while idle: no read of it fails
            log.warning(
                "SQLite: a read process ended (exit status %s): threads read in its stead",
                child.process.returncode,
            )
        return None

    def _start(self) -> None:
        self._started = True
        for _ in range(self._count):
            parent, child_end = socket.socketpair()
            try:
                process = subprocess.Popen(  # noqa: S603 - this module, by this interpreter
                    [sys.executable, "-m", _CHILD, str(child_end.fileno()), self._path],
                    pass_fds=[child_end.fileno()],
                    stdin=subprocess.DEVNULL,
                )
            except OSError as exc:
                parent.close()
                log.warning("SQLite: cannot start a read process (%s): threads read", exc)
                return
            finally:
                child_end.close()
            started = _Child(process, parent)
            self._children.append(started)
            self._starting.append(started)

    def _poll_starting(self) -> None:
        for child in list(self._starting):
            ready = child.ready()
            if ready is False:
                continue
            self._starting.remove(child)
            if ready:
                self._live += 1
                self._idle_send.send_nowait(child)
            else:
                log.warning(
                    "SQLite: a read process ended as it started (exit status %s): threads read",
                    child.process.poll(),
                )

    def _lost(self, child: _Child, exc: BaseException | None) -> None:
        self._live -= 1
        child.sock.close()
        if exc is not None:
            log.warning(
                "SQLite: a read process ended (%s; exit status %s): threads read in its stead",
                type(exc).__name__,
                child.process.poll(),
            )
        if self._live == 0 and not self._starting:
            self._idle_send.close()  # reads waiting for one read in threads

    async def aclose(self) -> None:
        """End the processes: their sockets close, they exit; killed if they linger."""
        self._idle_send.close()
        for child in self._children:
            child.sock.close()
        for child in self._children:
            await trio.to_thread.run_sync(_end, child.process)
        self._children.clear()


def _end(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def _send_all(sock: trio.socket.SocketType, data: bytes) -> None:
    view = memoryview(data)
    while view:
        sent = await sock.send(view)
        view = view[sent:]


async def _receive_exactly(sock: trio.socket.SocketType, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = await sock.recv(size - len(buf))
        if not chunk:
            raise EOFError("the read process closed its socket")
        buf += chunk
    return bytes(buf)
