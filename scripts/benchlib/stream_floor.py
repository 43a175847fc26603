"""The stack's floor under a mass revocation: N bare SSE streams on QuartTrio, ended at once.

``scripts/bench sessions`` times how long after a token's revocation every
one of its N streams has ended. This measures what the stack agentws is
built on (Hypercorn's trio worker, Quart) takes to end N streams with
nothing of agentws in the way: a QuartTrio route whose SSE generator sends
one comment and waits on one shared ``trio.Event``; ``POST /end`` sets it,
so every stream ends in the same turn of the loop. No store, no token, no
session: whatever agentws does on revocation comes on top.

The client is the one that times agentws's revocations: each stream is
opened on a socket of its own, then handed to the watcher processes
(:mod:`benchlib.session_watch`), which stamp each end as it arrives; the
server's CPU is sampled around it (:mod:`benchlib.session_cpu`).

Three variants (``collector``):

- ``frozen``: the floor the targets compare with. The cycle collector is on,
  and its objects are frozen (``gc.freeze()``) once at start and once every
  stream is open (``POST /freeze``), as agentws's collector steward freezes
  its open sessions' objects: what a full pass walks during the teardown is
  only what the teardown makes;
- ``off``: the collector disabled for the whole run (reported only): the
  teardown with no collector pass in it at all;
- ``paced``: as ``frozen``, but the streams end :data:`PACE` at a time, each
  batch once the last one's streams have ended (or after
  :data:`PACE_WAIT_S`), as agentws closes a revoked token's sessions so that
  no other request waits for more than a batch (reported only): the floor
  under the loop-stall target as well.

Every variant answers ``GET /healthz``, which the loop-stall probe asks
during the teardown, as it asks agentws's.

Run as a server: ``python stream_floor.py [--collector frozen|off|paced]`` binds
127.0.0.1 on a free port, prints one JSON line ``{"base_url": ...}`` and
serves until SIGTERM; :func:`measure` starts it and plays the client.
"""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import trio
from quart_trio import QuartTrio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.cli import run_trio
from benchlib.hypercorn_loopback import loopback_config, serve_on_loopback
from benchlib.session_observe import LEAD_S, start_observers
from benchlib.session_revoke import end_histogram
from benchlib.session_watch import End, Watchers, open_watchers, watchers_for
from benchlib.stream_http import open_stream

if TYPE_CHECKING:
    from benchlib.procs import Processes

__all__ = ["COLLECTORS", "measure"]

#: The variants, the floor first.
COLLECTORS = ("frozen", "off", "paced")
#: Streams ended at once by the ``paced`` variant, and its longest wait for a batch
#: (agentws's own batch and bound, ``agentws.doors.mcp.sessions.supervisor``).
PACE = 100
PACE_WAIT_S = 0.5
_SCRIPT = Path(__file__).resolve()
_START_TIMEOUT_S = 30.0
# How long the client waits for every stream to open, then to end.
_OPEN_TIMEOUT_S = 120.0
_END_TIMEOUT_S = 60.0
# Seconds of quiet between the last stream opening and ending them.
_SETTLE_S = 2.0
# Streams opening at once.
_OPEN_CONCURRENCY = 50
# How often the client asks the watchers for ends; how long the CPU is sampled after the last.
_POLL_S = 0.025
_SAMPLE_AFTER_S = 1.0


def make_app(*, paced: bool = False) -> QuartTrio:
    app = QuartTrio("agentws-bench-stream-floor")
    end = trio.Event()
    ended_at: list[float] = []
    # Paced: each stream's own end, and what to tell when its generator is done.
    held: list[tuple[trio.Event, list[Any]]] = []

    @app.get("/sse")
    async def sse() -> tuple[Any, int, dict[str, str]]:
        async def stream() -> Any:
            mine, told = trio.Event(), [None]
            if paced:
                held.append((mine, told))
            try:
                yield b": open\n\n"
                await (mine if paced else end).wait()
            finally:
                if told[0] is not None:
                    told[0]()

        return stream(), 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/freeze")
    async def freeze() -> dict[str, int]:
        gc.freeze()
        return {"frozen": gc.get_freeze_count()}

    @app.post("/end")
    async def end_all() -> dict[str, float]:
        ended_at.append(time.time())
        end.set()
        for start in range(0, len(held), PACE):
            await _end_batch(held[start : start + PACE])
        return {"ended_at": ended_at[0]}

    return app


async def _end_batch(batch: list[tuple[trio.Event, list[Any]]]) -> None:
    """End a batch of paced streams; return once their generators are done (or the bound)."""
    left = len(batch)
    done = trio.Event()

    def one_done() -> None:
        nonlocal left
        left -= 1
        if not left:
            done.set()

    for event, told in batch:
        told[0] = one_done
        event.set()
    with trio.move_on_after(PACE_WAIT_S):
        await done.wait()


async def _serve(collector: str) -> None:
    def freeze() -> None:
        gc.freeze()
        if collector == "off":
            gc.disable()

    config = loopback_config(keep_alive_timeout=3600, backlog=4096)
    await serve_on_loopback(make_app(paced=collector == "paced"), config, on_bound=freeze)


async def _open_all(base_url: str, count: int, watchers: Watchers) -> int:
    """Open ``count`` streams, each handed to the watchers once its first comment arrived."""
    limiter = trio.CapacityLimiter(_OPEN_CONCURRENCY)
    opened = 0

    async def one(key: int) -> None:
        nonlocal opened
        async with limiter:
            stream = await open_stream(base_url + "/sse", {"Accept": "text/event-stream"})
            try:
                seen = b""
                while b": open" not in seen:
                    payload = await stream.receive()
                    if not payload:
                        raise ConnectionResetError("the stream ended before it opened")
                    seen += payload
            except BaseException:
                stream.close()
                raise
            await watchers.hold(stream, key, "floor")
            opened += 1

    with trio.fail_after(_OPEN_TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            for key in range(count):
                nursery.start_soon(one, key)
    return opened


async def _measure(
    procs: Processes, count: int, collector: str, per_watcher: int
) -> dict[str, Any]:
    argv = [sys.executable, str(_SCRIPT), "--collector", collector]
    name = f"stream-floor-{count}-{collector}"
    server = procs.start(name, argv)
    try:
        base_url = server.read_json_line(_START_TIMEOUT_S)["base_url"]
        watchers, children = open_watchers(procs, name, watchers_for(count, per_watcher))
        try:
            opened = await _open_all(base_url, count, watchers)
            async with httpx2.AsyncClient(base_url=base_url, timeout=_END_TIMEOUT_S) as http:
                (await http.post("/freeze")).raise_for_status()
                await trio.sleep(_SETTLE_S)
                client = [os.getpid(), *watchers.pids]
                observers = start_observers(procs, name, server.pid, client, base_url + "/healthz")
                try:
                    await trio.sleep(LEAD_S)
                    answer = await http.post("/end")
                    answer.raise_for_status()
                    ended_at = float(answer.json()["ended_at"])
                    ends: list[End] = []
                    with trio.move_on_after(_END_TIMEOUT_S):
                        while len(ends) < opened:
                            ends += await watchers.sync()
                            await trio.sleep(_POLL_S)
                    last = max((end.at for end in ends), default=None)
                    observers.stop_at(max(time.time(), (last or 0.0) + _SAMPLE_AFTER_S))
                    sampled = await observers.figures(ended_at, last)
                finally:
                    observers.close()
        finally:
            await watchers.close()
            for child in children:
                procs.stop(child)
    finally:
        procs.stop(server)
    after = sorted(end.at - ended_at for end in ends)
    return {
        "streams": count,
        "opened": opened,
        "ended": len(after),
        "broken": sum(1 for end in ends if end.error),
        "collector": collector,
        "p50_ms": 1000 * after[len(after) // 2] if after else math.nan,
        "max_ms": 1000 * after[-1] if after else math.nan,
        "ends_per_100ms": end_histogram(after),
        "watchers": len(children),
        **sampled,
    }


def measure(procs: Processes, count: int, *, collector: str, per_watcher: int) -> dict[str, Any]:
    """End ``count`` bare SSE streams at once; when each ended, as the watchers saw it.

    Args:
        procs: the run's :class:`benchlib.procs.Processes`, which owns the server.
        collector: ``frozen`` (the floor) or ``off`` (see the module docstring).
        per_watcher: streams each watcher process holds at most.

    Returns:
        ``p50_ms``/``max_ms`` of the ends after ``POST /end`` set the event,
        ``ends_per_100ms``, and ``cpu`` (:func:`benchlib.session_cpu.timeline`).
    """
    return run_trio(functools.partial(_measure, procs, count, collector, per_watcher))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Bare SSE streams on QuartTrio, ended at once.")
    parser.add_argument("--collector", choices=COLLECTORS, default="frozen")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    trio.run(_serve, parser.parse_args().collector)
