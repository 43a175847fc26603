"""The child's side of :mod:`agentws.store.sqlite_read_processes`: reads asked for on a socket.

Run as ``python -m agentws.store.sqlite_read_child FD PATH``: it opens a
read-only connection to the SQLite database at ``PATH``, says it is ready on
the socket ``FD``, then answers each request (a length-prefixed pickle of
the shape, the SQL, its arguments and the read's deadline) with the shape's
result, what was raised, or that it cannot load the request (a shape it
cannot import: the parent's threads read it), until the socket closes.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import sqlite3
import sys
from typing import Any

from agentws.core.errors import StoreError
from agentws.store.sqlite import connect_reader, read_rows
from agentws.store.sqlite_read_processes import CANNOT, DONE, HEADER, RAISED, READY

__all__ = ["main"]


def _recv_exactly(sock: socket.socket, size: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _answer(status: int, value: Any) -> bytes:
    try:
        body = pickle.dumps((status, value), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # any value or error that does not pickle
        why = f"SQLite: a read's {'error' if status == RAISED else 'result'} did not pickle: {exc}"
        body = pickle.dumps((RAISED, StoreError(why)), pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def main(argv: list[str] | None = None) -> None:
    """The child: answer reads on the socket at ``FD`` from the database at ``PATH``."""
    fd, path = (argv or sys.argv[1:])[:2]
    # Ctrl-C reaches the whole process group: the parent ends this one by closing its socket.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(fd))
    conn = connect_reader(path)
    try:
        sock.sendall(READY)
        _serve(sock, conn)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent closed the store (or ended) before an answer went
    conn.close()
    os._exit(0)  # nothing else to run down


def _serve(sock: socket.socket, conn: sqlite3.Connection) -> None:
    while True:
        header = _recv_exactly(sock, HEADER.size)
        body = None if header is None else _recv_exactly(sock, HEADER.unpack(header)[0])
        if body is None:
            return  # the parent closed the store, or ended
        try:
            shape, sql, args, deadline_s = pickle.loads(body)  # noqa: S301 - from the parent
        except Exception:  # a shape this process cannot import
            sock.sendall(_answer(CANNOT, None))
            continue
        try:
            answer = _answer(DONE, shape(read_rows(conn, sql, args, deadline_s)))
        except Exception as exc:  # the parent raises it
            answer = _answer(RAISED, exc)
        sock.sendall(answer)


if __name__ == "__main__":
    main()
