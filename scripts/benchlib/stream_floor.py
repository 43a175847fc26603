"""The stack's floor under a mass revocation: N bare SSE streams on QuartTrio, ended at once.

``scripts/bench sessions`` times how long after a token's revocation every
one of its N streams has ended. This measures what the stack agentws is
built on (Hypercorn's trio worker, Quart) takes to end N streams with
nothing of agentws in the way: a QuartTrio route whose SSE generator sends
one comment and waits on one shared ``trio.Event``; ``POST /end`` sets it,
so every stream ends in the same turn of the loop, and the client times
each stream's end (its terminating chunk) from that moment. No store, no
token, no session: whatever agentws does on revocation comes on top.

It runs twice per level: as configured (the cycle collector on, the
objects made at start frozen, as agentws does) and with the collector off
for the whole run, which is what the teardown costs when no collector
pass falls into it.

Run as a server: ``python stream_floor.py [--no-collector]`` binds
127.0.0.1 on a free port, prints one JSON line ``{"base_url": ...}`` and
serves until SIGTERM; :func:`measure` starts it and plays the client.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import selectors
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import trio
from quart_trio import QuartTrio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.hypercorn_loopback import loopback_config, serve_on_loopback

__all__ = ["measure"]

_START_TIMEOUT_S = 30.0
# How long the client waits for every stream to open, then to end.
_OPEN_TIMEOUT_S = 120.0
_END_TIMEOUT_S = 60.0
# Seconds of quiet between the last stream opening and ending them.
_SETTLE_S = 2.0
# Open this many connections, then read what has arrived, so the backlog never fills.
_OPEN_STEP = 200
_LAST_CHUNK = b"0\r\n\r\n"


def make_app() -> QuartTrio:
    app = QuartTrio("agentws-bench-stream-floor")
    end = trio.Event()
    ended_at: list[float] = []

    @app.get("/sse")
    async def sse() -> tuple[Any, int, dict[str, str]]:
        async def stream() -> Any:
            yield b": open\n\n"
            await end.wait()

        return stream(), 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

    @app.post("/end")
    async def end_all() -> dict[str, float]:
        ended_at.append(time.time())
        end.set()
        return {"ended_at": ended_at[0]}

    return app


async def _serve(collector: bool) -> None:
    def freeze() -> None:
        gc.freeze()
        if not collector:
            gc.disable()

    config = loopback_config(keep_alive_timeout=3600, backlog=4096)
    await serve_on_loopback(make_app(), config, on_bound=freeze)


def _open_streams(
    port: int, count: int
) -> tuple[selectors.DefaultSelector, dict[socket.socket, bytes]]:
    selector = selectors.DefaultSelector()
    seen: dict[socket.socket, bytes] = {}
    request = b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"

    def read_ready(timeout: float) -> None:
        for key, _ in selector.select(timeout):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)  # noqa: S101 - only sockets registered
            seen[sock] += sock.recv(65536)

    for n in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(request)
        sock.setblocking(False)
        seen[sock] = b""
        selector.register(sock, selectors.EVENT_READ)
        if n % _OPEN_STEP == _OPEN_STEP - 1:
            read_ready(0)
    deadline = time.monotonic() + _OPEN_TIMEOUT_S
    while any(b": open" not in data for data in seen.values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream floor: not all {count} streams opened")
        read_ready(0.5)
    return selector, seen


def _time_ends(
    base_url: str, selector: selectors.DefaultSelector, seen: dict[socket.socket, bytes]
) -> list[float]:
    ask = urllib.request.Request(base_url + "/end", method="POST", data=b"")  # noqa: S310 - loopback
    with urllib.request.urlopen(ask, timeout=_END_TIMEOUT_S) as answer:  # noqa: S310 - loopback
        ended_at = float(json.loads(answer.read())["ended_at"])
    ends: list[float] = []
    deadline = time.monotonic() + _END_TIMEOUT_S
    while len(ends) < len(seen) and time.monotonic() < deadline:
        for key, _ in selector.select(1.0):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)  # noqa: S101 - only sockets registered
            data = sock.recv(65536)
            seen[sock] += data
            if not data or seen[sock].endswith(_LAST_CHUNK):
                ends.append(time.time() - ended_at)
                selector.unregister(sock)
    return sorted(ends)


def measure(procs: Any, count: int, *, collector: bool) -> dict[str, Any]:
    """End ``count`` bare SSE streams at once; when each ended, as the client saw it.

    Args:
        procs: the run's :class:`benchlib.procs.Processes`, which owns the server.
        collector: whether the server keeps the cycle collector on.
    """
    argv = [sys.executable, str(Path(__file__).resolve())]
    if not collector:
        argv.append("--no-collector")
    server = procs.start(f"stream-floor-{count}-{'gc' if collector else 'nogc'}", argv)
    try:
        base_url = server.read_json_line(_START_TIMEOUT_S)["base_url"]
        port = int(base_url.rsplit(":", 1)[1])
        selector, seen = _open_streams(port, count)
        try:
            time.sleep(_SETTLE_S)
            ends = _time_ends(base_url, selector, seen)
        finally:
            for sock in seen:
                sock.close()
            selector.close()
    finally:
        procs.stop(server)
    return {
        "streams": count,
        "ended": len(ends),
        "collector": collector,
        "p50_ms": 1000 * ends[len(ends) // 2] if ends else None,
        "max_ms": 1000 * ends[-1] if ends else None,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Bare SSE streams on QuartTrio, ended at once.")
    parser.add_argument("--no-collector", action="store_true", help="turn the cycle collector off")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    trio.run(_serve, not parser.parse_args().no_collector)
