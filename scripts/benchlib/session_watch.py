"""Watcher processes: they hold open streams' sockets and stamp the moment each one ends.

A mass revocation ends thousands of streams within a second; a client that
reads them through an HTTP library on one event loop takes longer to notice
than the server takes to end them, and so times itself. Here the client
opens each stream (:mod:`benchlib.session_open`, :mod:`benchlib.stream_floor`)
and hands its socket over (``SCM_RIGHTS`` on a Unix socket) to one of a few
watcher processes (:class:`Watchers`), with its body's decoding state. A
watcher does nothing but wait on its sockets with epoll, read what arrives
(keep-alive comments), and, when a body ends (its last chunk, or EOF),
stamp ``time.time()`` (CLOCK_REALTIME, comparable with a token's
``revoked_at``) and close the socket. The parent collects the stamps with
:meth:`Watchers.sync`.

Each watcher runs as ``python session_watch.py`` with a ``SOCK_SEQPACKET``
socket as its stdin, one JSON message at a time:

- ``{"op": "hold", "key": K, "tag": T, "body": STATE}`` with one descriptor;
- ``{"op": "sync"}``: answered with ``{"ends": [[K, time, error], ...]}``
  messages (the ends not reported yet) then ``{"op": "synced", "live": N}``;
- ``{"op": "close", "tags": [T, ...] | null}``: closes those sockets (no end
  stamped), answered ``{"op": "closed", "closed": N}``.

It exits when its stdin closes (or on SIGTERM).
"""

from __future__ import annotations

import array
import json
import math
import selectors
import socket
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.stream_http import Body, OpenStream

if TYPE_CHECKING:
    from benchlib.procs import Child, Processes

__all__ = ["STREAMS_PER_WATCHER", "End", "Watchers", "open_watchers", "watchers_for"]

# Streams one watcher holds by default: four watchers for 10,000 streams, so that
# no one process has more than a few thousand ends to read when they all end at once.
STREAMS_PER_WATCHER = 2500
_START_TIMEOUT_S = 30.0
_RECV = 65536
# Ends sent in one reply message: well under a SEQPACKET message's limit.
_ENDS_PER_MESSAGE = 400


@attrs.frozen
class End:
    """A stream's end as its watcher saw it: when (``time.time()``), and why if it broke."""

    key: int
    at: float
    error: str | None


# --- the watcher process ----------------------------------------------------------------------


@attrs.define(eq=False)
class _Held:
    key: int
    tag: str
    body: Body
    sock: socket.socket


class _Watcher:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, None)
        self.held: dict[int, _Held] = {}
        self.ends: list[list[Any]] = []

    def run(self) -> None:
        select, read = self.selector.select, self._read
        while True:
            for key, _ in select():
                if key.data is None:
                    if not self._command():
                        return
                else:
                    read(key.data)

    def _read(self, held: _Held) -> None:
        if self.held.get(held.key) is not held:
            return  # closed by a command earlier in the same round of events
        try:
            data = held.sock.recv(_RECV)
        except BlockingIOError:
            return
        except OSError as exc:
            self._end(held, time.time(), repr(exc))
            return
        now = time.time()
        if not data:
            clean = held.body.done or held.body.mode == "close"
            self._end(held, now, None if clean else "closed before the body's end")
            return
        try:
            held.body.feed(data)
        except ValueError as exc:
            self._end(held, now, repr(exc))
            return
        if held.body.done:
            self._end(held, now, None)

    def _end(self, held: _Held, at: float, error: str | None) -> None:
        self.ends.append([held.key, at, error])
        self._forget(held)

    def _forget(self, held: _Held) -> None:
        self.selector.unregister(held.sock)
        held.sock.close()
        del self.held[held.key]

    def _command(self) -> bool:
        try:
            message, fds, _, _ = socket.recv_fds(self.control, _RECV, 1)
        except ConnectionResetError:
            return False
        if not message:
            return False
        command = json.loads(message)
        op = command["op"]
        if op == "hold":
            sock = socket.socket(fileno=fds[0])
            sock.setblocking(False)
            held = _Held(command["key"], command["tag"], Body.from_state(command["body"]), sock)
            self.held[held.key] = held
            self.selector.register(sock, selectors.EVENT_READ, held)
            if held.body.done:  # it ended before the handover
                self._end(held, time.time(), None)
            else:
                self._read(held)  # bytes may have arrived since the handover
        elif op == "sync":
            ends, self.ends = self.ends, []
            for start in range(0, len(ends), _ENDS_PER_MESSAGE):
                self._reply({"ends": ends[start : start + _ENDS_PER_MESSAGE]})
            self._reply({"op": "synced", "live": len(self.held)})
        elif op == "close":
            tags = command["tags"]
            closing = [h for h in self.held.values() if tags is None or h.tag in tags]
            for held in closing:
                self._forget(held)
            self._reply({"op": "closed", "closed": len(closing)})
        for fd in fds[1:] if op == "hold" else fds:  # descriptors nobody asked for
            socket.close(fd)
        return True

    def _reply(self, message: dict[str, Any]) -> None:
        self.control.send(json.dumps(message).encode())


def _serve() -> None:
    control = socket.socket(fileno=sys.stdin.fileno())
    print(json.dumps({"ready": True}), flush=True)
    _Watcher(control).run()


# --- the parent's side ------------------------------------------------------------------------


class _Link:
    """The parent's end of one watcher's control socket; one exchange at a time."""

    def __init__(self, sock: trio.socket.SocketType, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self.lock = trio.Lock()

    async def send(self, message: dict[str, Any], fd: int | None = None) -> None:
        payload = json.dumps(message).encode()
        if fd is None:
            await self.sock.send(payload)
            return
        fds = array.array("i", [fd])
        await self.sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])

    async def receive(self) -> dict[str, Any]:
        data = await self.sock.recv(_RECV)
        if not data:
            raise ConnectionResetError(f"watcher {self.pid} went away")
        message: dict[str, Any] = json.loads(data)
        return message


class Watchers:
    """The watcher processes of a run (see the module docstring); a stream goes to one by key."""

    def __init__(self, links: list[_Link]) -> None:
        self._links = links
        #: Streams held by the watchers now (as of the last :meth:`sync`).
        self.live = 0

    @property
    def pids(self) -> list[int]:
        return [link.pid for link in self._links]

    async def hold(self, stream: OpenStream, key: int, tag: str) -> None:
        """Hand ``stream``'s socket to a watcher; this process's descriptor is closed.

        Resource handling:
            The stream's socket is closed here whatever happens; once handed
            over, the watcher owns the connection.
        """
        link = self._links[key % len(self._links)]
        try:
            message = {"op": "hold", "key": key, "tag": tag, "body": stream.body.state()}
            async with link.lock:
                await link.send(message, stream.sock.fileno())
        finally:
            stream.close()
        self.live += 1

    async def _ask(self, link: _Link, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Send ``message`` and read the replies up to the last (the one with an ``op``).

        Shielded: a reply left half read would answer the next question.
        """
        with trio.CancelScope(shield=True):
            async with link.lock:
                await link.send(message)
                replies = [await link.receive()]
                while "op" not in replies[-1]:
                    replies.append(await link.receive())
        return replies

    async def sync(self) -> list[End]:
        """The ends each watcher stamped since the last sync."""
        ends: list[End] = []
        live = 0
        for link in self._links:
            *parts, synced = await self._ask(link, {"op": "sync"})
            live += int(synced["live"])
            for part in parts:
                ends += [End(int(k), float(at), error) for k, at, error in part["ends"]]
        self.live = live
        return ends

    async def close(self, tags: Iterable[str] | None = None) -> int:
        """Close the streams of ``tags`` (all with None), no end stamped; how many."""
        closed = 0
        names = None if tags is None else list(tags)
        for link in self._links:
            (answer,) = await self._ask(link, {"op": "close", "tags": names})
            closed += int(answer["closed"])
        self.live -= closed
        return closed


def watchers_for(streams: int, per_watcher: int = STREAMS_PER_WATCHER) -> int:
    """How many watchers hold ``streams`` at most ``per_watcher`` each."""
    return max(1, math.ceil(streams / per_watcher))


def open_watchers(procs: Processes, name: str, count: int) -> tuple[Watchers, list[Child]]:
    """Start ``count`` watcher processes (owned by ``procs``, a :class:`benchlib.procs.Processes`).

    Returns the pool and the children, which the caller stops (``procs.stop``)
    once it has closed their streams. Call it inside ``trio.run``.
    """
    links: list[_Link] = []
    children: list[Child] = []
    try:
        for n in range(count):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with theirs:
                argv = [sys.executable, str(Path(__file__).resolve())]
                child = procs.start(f"{name}-watcher-{n}", argv, stdin=theirs.fileno())
            children.append(child)
            links.append(_Link(trio.socket.from_stdlib_socket(ours), child.pid))
        for child in children:
            child.read_json_line(_START_TIMEOUT_S)
    except BaseException:
        for child in children:
            procs.stop(child)
        raise
    return Watchers(links), children


if __name__ == "__main__":
    _serve()
