"""The conformance suite's client command, kept warm: agentws_client.py, imported once.

The suite starts its client command once per scenario, and importing the
``mcp`` SDK and agentws's link stack costs about a second of CPU each time.
``serve(socket_path)`` imports them once and waits; ``python warm_client.py
SOCKET SERVER_URL`` (the command the suite runs, which imports nothing
heavy) hands it its environment, arguments and standard streams, and the
warm process forks a child that runs :func:`agentws_client.main` with them
and reports its exit status. What runs is the same code as ``python
agentws_client.py SERVER_URL``.
"""

from __future__ import annotations

import array
import json
import os
import socket
import sys

# The scenario's environment the suite sets, passed on to the child.
_PASSED = ("MCP_CONFORMANCE_",)


def _send_fds(conn: socket.socket, data: bytes, fds: list[int]) -> None:
    conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def _receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    size = array.array("i").itemsize
    data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * size))
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % size)])
    return json.loads(data), list(fds)


def serve(path: str) -> None:
    """Import the client once, then run each request in a forked child. (Blocking.)"""
    import agentws_client  # noqa: F401 - the cost this process exists to pay once

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        request, fds = _receive(conn)
        pid = os.fork()
        if pid == 0:
            listener.close()
            _child(conn, request, fds)
        for fd in fds:
            os.close(fd)
        # The parent reaps its children as they end; the answer is the child's.
        conn.close()
        _reap()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _child(conn: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    status = 1
    try:
        for target, fd in zip((0, 1, 2), fds, strict=False):
            os.dup2(fd, target)
        env = request.get("env")
        if isinstance(env, dict):
            os.environ.update({str(k): str(v) for k, v in env.items()})
        argv = request.get("argv")
        sys.argv = [str(a) for a in argv] if isinstance(argv, list) else sys.argv
        import agentws_client

        try:
            agentws_client.main()
            status = 0
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
            status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            conn.sendall(str(status).encode())
        finally:
            os._exit(status)


def run(path: str, argv: list[str]) -> int:
    """Hand this process's scenario to the warm one; its exit status."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_PASSED)}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = json.dumps({"argv": ["agentws_client.py", *argv], "env": env}).encode()
    _send_fds(conn, request, [0, 1, 2])
    answer = b""
    while chunk := conn.recv(64):
        answer += chunk
    return int(answer or b"1")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        sys.exit(run(sys.argv[1], sys.argv[2:]))
