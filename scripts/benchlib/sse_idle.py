"""Resident memory of idle legacy (2024-11-05) HTTP+SSE sessions on an MCP server.

Each session is what an idle mcp-remote or Claude Desktop connection looks
like: ``GET`` with ``Accept: text/event-stream`` opens the stream, its first
event ``endpoint`` names the messages URL, the client POSTs ``initialize``
there (answered on the stream) and ``notifications/initialized``, then the
stream stays open with nothing but keep-alive comments on it.

The server's RSS is read from /proc before and after opening ``count`` of
them (after a short warm-up, so code loaded on first use is not counted),
and again after closing them all.
"""

from __future__ import annotations

import math
import time
from typing import Any

import httpx2
import trio

from benchlib.mcp_client import CallError
from benchlib.procs import rss_kb
from benchlib.session_open import legacy_handshake
from benchlib.sse import sse_events

__all__ = ["measure_idle_sessions"]

# Sessions opened at once: enough to be quick, few enough not to look like a flood.
_OPEN_CONCURRENCY = 50
# Sessions opened and closed before the baseline is taken.
_WARMUP_SESSIONS = 20
_HANDSHAKE_TIMEOUT_S = 30.0
_MAX_ERROR_SAMPLES = 5


class _Tally:
    def __init__(self, count: int) -> None:
        self.count = count
        self.opened = 0
        self.failed = 0
        self.dropped = 0
        self.errors: list[str] = []
        self.settled = trio.Event()

    def done(self, error: str | None = None) -> None:
        if error is None:
            self.opened += 1
        else:
            self.failed += 1
            if len(self.errors) < _MAX_ERROR_SAMPLES:
                self.errors.append(error)
        if self.opened + self.failed >= self.count:
            self.settled.set()


async def _hold_session(
    client: httpx2.AsyncClient,
    url: str,
    token: str,
    tally: _Tally,
    limiter: trio.CapacityLimiter,
) -> None:
    stream_headers = {"authorization": f"Bearer {token}", "accept": "text/event-stream"}
    await limiter.acquire()
    handshaking = True
    try:
        timeout = httpx2.Timeout(_HANDSHAKE_TIMEOUT_S, read=None)
        async with client.stream("GET", url, headers=stream_headers, timeout=timeout) as response:
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"GET: HTTP {response.status_code} {response.text[:200]}")
            events = sse_events(response.aiter_lines())
            with trio.fail_after(_HANDSHAKE_TIMEOUT_S):
                await legacy_handshake(client, url, token, events)
            handshaking = False
            limiter.release()
            tally.done()
            async for _ in events:  # nothing but keep-alives until we are cancelled
                pass
            tally.dropped += 1  # the server ended an idle stream
    except (
        httpx2.HTTPError,
        CallError,
        RuntimeError,
        ValueError,
        trio.TooSlowError,
        StopAsyncIteration,
    ) as exc:
        if handshaking:
            tally.done(repr(exc))
        else:
            tally.dropped += 1
    finally:
        if handshaking:
            limiter.release()


async def _open_sessions(
    client: httpx2.AsyncClient, url: str, token: str, count: int, nursery: trio.Nursery
) -> _Tally:
    tally = _Tally(count)
    limiter = trio.CapacityLimiter(_OPEN_CONCURRENCY)
    for _ in range(count):
        nursery.start_soon(_hold_session, client, url, token, tally, limiter)
    await tally.settled.wait()
    return tally


async def _settled_rss(pid: int, settle_s: float) -> int:
    await trio.sleep(settle_s)
    return rss_kb(pid)


async def measure_idle_sessions(
    url: str, token: str, pid: int, count: int, *, settle_s: float = 2.0
) -> dict[str, Any]:
    """Open ``count`` idle legacy SSE sessions to ``url``; the server's RSS around that.

    Args:
        url: the group endpoint (``…/mcp/g/<workspace>/<group>``).
        token: a bearer token for it, allowed more than ``count`` sessions.
        pid: the server process, whose VmRSS is read.
        count: sessions to hold open at once.
        settle_s: wait before each RSS reading.

    Returns:
        RSS before, with the sessions open, and after closing them (KiB), the
        sessions opened and failed, error samples, and how long opening took.

    Resource handling:
        Every stream is closed before this returns.
    """
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=_OPEN_CONCURRENCY)
    async with httpx2.AsyncClient(limits=limits, timeout=_HANDSHAKE_TIMEOUT_S) as client:
        async with trio.open_nursery() as nursery:
            warmup = await _open_sessions(client, url, token, _WARMUP_SESSIONS, nursery)
            nursery.cancel_scope.cancel()
        if warmup.failed:
            return {
                "count": count,
                "opened": 0,
                "failed": count,
                "errors": [f"warm-up: {error}" for error in warmup.errors],
            }
        before_kb = await _settled_rss(pid, settle_s)
        async with trio.open_nursery() as nursery:
            started = time.perf_counter()
            tally = await _open_sessions(client, url, token, count, nursery)
            open_s = time.perf_counter() - started
            open_kb = await _settled_rss(pid, settle_s)
            held = tally.opened - tally.dropped
            nursery.cancel_scope.cancel()
    after_close_kb = await _settled_rss(pid, settle_s)
    per_session_kb = (open_kb - before_kb) / held if held > 0 else math.nan
    return {
        "count": count,
        "opened": tally.opened,
        "failed": tally.failed,
        "dropped": tally.dropped,
        "held": held,
        "errors": tally.errors,
        "open_s": open_s,
        "rss_before_kb": before_kb,
        "rss_open_kb": open_kb,
        "rss_after_close_kb": after_close_kb,
        "per_session_kb": per_session_kb,
    }
