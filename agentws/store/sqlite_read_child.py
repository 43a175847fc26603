"""The child's side of :mod:`agentws.store.sqlite_read_processes`: reads asked for on a socket.

Run as ``python -m agentws.store.sqlite_read_child FD PATH WORKERS``: it
opens ``WORKERS`` read-only connections to the SQLite database at ``PATH``,
each read from by a thread of its own, says it is ready on the socket
``FD``, then answers every request until the socket closes.

A request is a header (its length and its number) and a pickle of the
shape, the SQL, its arguments and the read's deadline. The main thread only
takes requests off the socket, so the parent may send the next before the
last is answered; a worker that is free takes it. Each answer carries its
request's number (answers go back in the order they are done): the shape's
result, what was raised, or that the request could not be loaded (a shape
this process cannot import: the parent's threads read it).
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import socket
import sqlite3
import sys
import threading
from typing import Any

from agentws.core.errors import StoreError
from agentws.store.sqlite import connect_reader, read_rows
from agentws.store.sqlite_read_processes import (
    CANNOT,
    DONE,
    HEADER,
    RAISED,
    READY,
    take_messages,
)

__all__ = ["main"]

# The socket's bytes are taken this many at a time.
_CHUNK = 1 << 16

_Requests = queue.SimpleQueue[tuple[int, bytes] | None]


def main(argv: list[str] | None = None) -> None:
    """The child: answer reads on the socket at ``FD`` from the database at ``PATH``."""
    fd, path, workers = (argv or sys.argv[1:])[:3]
    # Ctrl-C reaches the whole process group: the parent ends this one by closing its socket.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(fd))
    requests: _Requests = queue.SimpleQueue()
    sending = threading.Lock()
    for n in range(max(int(workers), 1)):
        conn = connect_reader(path)
        threading.Thread(
            target=_work,
            args=(conn, requests, sock, sending),
            name=f"agentws sqlite read worker {n}",
            daemon=True,
        ).start()
    try:
        sock.sendall(READY)
        _take_requests(sock, requests)
    except OSError:
        pass  # the parent closed the store (or ended)
    os._exit(0)  # the workers' reads are nobody's any more: nothing to run down


def _take_requests(sock: socket.socket, requests: _Requests) -> None:
    """Put each request that arrives on the queue, until the socket closes."""
    buf = bytearray()
    while chunk := sock.recv(_CHUNK):
        buf += chunk
        for request in take_messages(buf):
            requests.put(request)


def _work(
    conn: sqlite3.Connection, requests: _Requests, sock: socket.socket, sending: threading.Lock
) -> None:
    while (request := requests.get()) is not None:
        number, body = request
        try:
            shape, sql, args, deadline_s = pickle.loads(body)  # noqa: S301 - from the parent
        except Exception:  # a shape this process cannot import
            answer = _answer(number, CANNOT, None)
        else:
            try:
                answer = _answer(number, DONE, shape(read_rows(conn, sql, args, deadline_s)))
            except Exception as exc:  # the parent raises it
                answer = _answer(number, RAISED, exc)
            except BaseException as exc:  # a worker that ended would leave its reader waiting
                why = f"SQLite: a read process's read ended with {type(exc).__name__}"
                answer = _answer(number, RAISED, StoreError(why))
        try:
            with sending:
                sock.sendall(answer)
        except OSError:
            os._exit(0)  # the parent closed the store (or ended)


def _answer(number: int, status: int, value: Any) -> bytes:
    try:
        body = pickle.dumps((status, value), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # any value or error that does not pickle
        why = f"SQLite: a read's {'error' if status == RAISED else 'result'} did not pickle: {exc}"
        body = pickle.dumps((RAISED, StoreError(why)), pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body), number) + body


if __name__ == "__main__":
    main()
