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
have all ended), and every read while each process has a read for each of
its workers and has answered none for :data:`STALLED_S` (slow searches hold
no other behind them).

Requests are pipelined: a read is sent as soon as it is asked for, numbered,
over a socket pair (a length-prefixed pickle each way), and the process's
workers (:data:`WORKERS` threads, each with its own read-only connection)
take the next as soon as they are free; answers come back by number, in the
order they are done. No task waits on the socket for them: the first read
waiting takes every answer that has arrived to its reader, and when its own
is in, hands that over to another still waiting. Pickle is safe here: the
peer is this process's own child on a socket pair, never the network.

The processes start with the first read that would use them (a store that
never searches starts none), and end when the store closes: their socket
closes and they exit; one that lingers is killed. A process that ends on its
own is not replaced: the threads read in its stead, the reads it had
included (a read changes nothing, so reading it again is safe).

The child's side is :mod:`agentws.store.sqlite_read_child`.
"""

from __future__ import annotations

import itertools
import logging
import pickle
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Final

import trio

from agentws.core.errors import StoreError

__all__ = [
    "CANNOT",
    "DONE",
    "HEADER",
    "RAISED",
    "READY",
    "STALLED_S",
    "WORKERS",
    "ReadProcesses",
    "take_messages",
]

log = logging.getLogger("agentws.store")

# The child's module: nothing imports it (run with -m, it must not be imported already).
_CHILD: Final = "agentws.store.sqlite_read_child"
#: Before each message: its length, and the number of the request it is or answers.
HEADER: Final = struct.Struct("!IQ")
#: The child's first byte: its connections are open, it takes requests.
READY: Final = b"R"
#: What the child answers: the shape's result, what was raised, or that it
#: could not load the request (the threads then read it).
DONE, RAISED, CANNOT = 0, 1, 2
#: Threads reading in each process: as many reads run at once as in the
#: threads (:data:`agentws.store.sqlite._READERS`), so one slow search holds
#: no other behind it.
WORKERS: Final = 4
#: A process with a read for each worker and no answer for this long is
#: passed over (the threads read) until it answers again: its reads are slow,
#: and one sent now would wait behind them.
STALLED_S: Final = 0.25
# A child still running this long after its socket closed is killed.
_EXIT_WAIT_S: Final = 2.0
# The socket's bytes are taken this many at a time.
_CHUNK: Final = 1 << 16

Shape = Callable[[list[dict[str, Any]]], Any]


class _Waiting:
    """One read sent to a process: its answer once in, and what wakes its reader."""

    __slots__ = ("answer", "wake")

    def __init__(self) -> None:
        self.answer: tuple[int, Any] | None = None
        self.wake = trio.Event()

    def set(self, answer: tuple[int, Any]) -> None:
        self.answer = answer
        self.wake.set()


class _Child:
    __slots__ = ("buf", "process", "progress_at", "raw", "receiving", "sending", "sock", "waiting")

    def __init__(self, process: subprocess.Popen[bytes], raw: socket.socket) -> None:
        self.process = process
        self.raw = raw  # polled for the ready byte without a turn of the loop
        self.sock = trio.socket.from_stdlib_socket(raw)
        self.sending = trio.Lock()
        self.waiting: dict[int, _Waiting] = {}
        self.receiving = False  # a reader is taking answers off the socket
        self.buf = bytearray()
        # When it last answered, or was last sent a read with none outstanding.
        self.progress_at = 0.0

    def ready(self) -> bool | None:
        """Whether the child has said it is ready; None if it ended first."""
        try:
            first = self.raw.recv(1)
        except BlockingIOError:
            return False
        except OSError:
            return None
        return True if first == READY else None

    def busy(self, workers: int) -> bool:
        """Whether each worker has a read and none has answered for :data:`STALLED_S`."""
        return len(self.waiting) >= workers and trio.current_time() - self.progress_at > STALLED_S

    async def send(self, framed: bytes) -> None:
        # Shielded: a request cut off halfway would garble every one after it.
        with trio.CancelScope(shield=True):
            async with self.sending:
                view = memoryview(framed)
                while view:
                    sent = await self.sock.send(view)
                    view = view[sent:]

    async def receive_until(self, mine: _Waiting) -> None:
        """Take answers off the socket, each to its reader, until ``mine`` is in."""
        while mine.answer is None:
            chunk = await self.sock.recv(_CHUNK)
            if not chunk:
                raise EOFError("the read process closed its socket")
            self.buf += chunk
            for number, body in take_messages(self.buf):
                waiting = self.waiting.pop(number, None)
                if waiting is not None:  # else its reader was cancelled: dropped
                    waiting.set(_loaded(body))
            self.progress_at = trio.current_time()

    def hand_over(self) -> None:
        """Wake one reader still waiting, to take answers off the socket in turn."""
        for waiting in self.waiting.values():
            waiting.wake.set()
            return


class ReadProcesses:
    """``count`` processes reading the SQLite database at ``path``, started on first use."""

    def __init__(self, path: str, count: int, workers: int = WORKERS) -> None:
        self._path = path
        self._count = count
        self._workers = workers
        self._started = False
        self._starting: list[_Child] = []
        self._children: list[_Child] = []
        self._live: list[_Child] = []
        self._numbers = itertools.count()

    async def read(
        self, shape: Shape, sql: str, args: tuple[Any, ...], deadline_s: float
    ) -> tuple[bool, Any]:
        """``(True, shape(rows))`` read by a process, or ``(False, None)``: the threads read it.

        Raises what the read or the shape raised (the driver's errors unconverted).
        """
        child = self._choose()
        if child is None:
            return False, None
        try:
            request = pickle.dumps((shape, sql, args, deadline_s), pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            return False, None  # a closure, a lambda: the threads shape it
        number = next(self._numbers)
        mine = _Waiting()
        if not child.waiting:
            child.progress_at = trio.current_time()
        child.waiting[number] = mine
        try:
            await child.send(HEADER.pack(len(request), number) + request)
            status, value = await self._answer(child, mine)
        except (OSError, EOFError, trio.ClosedResourceError) as exc:
            self._lost(child, exc)
            return False, None  # a read changes nothing: the threads read it again
        finally:
            child.waiting.pop(number, None)
        if status == CANNOT:
            return False, None
        if status == RAISED:
            raise value
        return True, value

    async def _answer(self, child: _Child, mine: _Waiting) -> tuple[int, Any]:
        while mine.answer is None:
            if child not in self._live:
                raise EOFError("the read process ended")
            if child.receiving:
                await mine.wake.wait()  # answered, or handed the socket
                if mine.answer is None:
                    mine.wake = trio.Event()
                continue
            child.receiving = True
            try:
                await child.receive_until(mine)
            finally:
                child.receiving = False
                child.hand_over()
        return mine.answer

    def _choose(self) -> _Child | None:
        if not self._started:
            self._start()
        if self._starting:
            self._poll_starting()
        if not self._live:
            return None
        # One that has ended is found out by its read (the threads then read it).
        best = min(self._live, key=lambda child: len(child.waiting))
        return None if best.busy(self._workers) else best

    def _start(self) -> None:
        self._started = True
        for _ in range(self._count):
            parent, child_end = socket.socketpair()
            try:
                process = subprocess.Popen(  # noqa: S603 - this module, by this interpreter
                    [
                        sys.executable,
                        "-m",
                        _CHILD,
                        str(child_end.fileno()),
                        self._path,
                        str(self._workers),
                    ],
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
                self._live.append(child)
            else:
                log.warning(
                    "SQLite: a read process ended as it started (exit status %s): threads read",
                    child.process.poll(),
                )

    def _lost(self, child: _Child, exc: BaseException) -> None:
        if child not in self._live:
            return  # another of its reads said so already
        self._live.remove(child)
        child.sock.close()
        for waiting in child.waiting.values():
            waiting.wake.set()  # each finds its process gone
        log.warning(
            "SQLite: a read process ended (%s; exit status %s): threads read in its stead",
            type(exc).__name__,
            child.process.poll(),
        )

    async def aclose(self) -> None:
        """End the processes: their sockets close, they exit; killed if they linger."""
        self._live.clear()
        self._starting.clear()
        for child in self._children:
            child.sock.close()
        for child in self._children:
            await trio.to_thread.run_sync(_end, child.process)
        self._children.clear()


def take_messages(buf: bytearray) -> list[tuple[int, bytes]]:
    """The whole messages at the start of ``buf``, as (number, body), taken out of it."""
    messages = []
    start = 0
    while len(buf) - start >= HEADER.size:
        size, number = HEADER.unpack_from(buf, start)
        end = start + HEADER.size + size
        if len(buf) < end:
            break  # the rest of it has not come yet
        messages.append((number, bytes(buf[start + HEADER.size : end])))
        start = end
    del buf[:start]
    return messages


def _loaded(body: bytes) -> tuple[int, Any]:
    """The answer pickled in ``body``; what cannot be loaded is its reader's error, not ours."""
    try:
        answer: tuple[int, Any] = pickle.loads(body)  # noqa: S301 - from our own child
    except Exception as exc:  # an error whose class will not rebuild from its arguments
        why = f"SQLite: a read process's answer could not be loaded: {type(exc).__name__}: {exc}"
        return RAISED, StoreError(why)
    return answer


def _end(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
