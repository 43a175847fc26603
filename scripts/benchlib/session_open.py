"""MCP sessions opened and held open, in either transport: the client of ``scripts/bench sessions``.

A session here is what an idle client (Claude Desktop, mcp-remote, an IDE)
keeps open, in either transport:

- Streamable HTTP: ``POST initialize`` (its answer carries ``Mcp-Session-Id``),
  ``POST notifications/initialized``, then a ``GET`` with the session id that
  opens the session's SSE stream, held open;
- legacy HTTP+SSE (2024-11-05): ``GET`` with ``Accept: text/event-stream``
  opens the stream, whose ``endpoint`` event names the messages URL; the
  client POSTs ``initialize`` there (answered on the stream) and
  ``notifications/initialized``; the stream is held open.

For each session the *initialize latency* (from sending ``initialize`` to
its answer) and the *open time* (from the session's first request to its
stream open and ``initialized`` accepted) are kept, and the wall-clock time
(``time.time()``) at which its stream ended, if it did, so a revocation's
effect can be timed against the revocation's own timestamp. A
:class:`Batch` is sessions opened together (:func:`open_batch`); what is
measured with them open is :mod:`benchlib.session_hold`'s.
"""

from __future__ import annotations

import gc
import json
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urljoin

import attrs
import httpx2
import trio

from benchlib.load import MAX_ERROR_SAMPLES, latency_figures, percentile
from benchlib.mcp_client import (
    PROTOCOL_VERSION,
    CallError,
    initialize_params,
    parse_result,
    request_headers,
)
from benchlib.sse import sse_events

__all__ = [
    "TIMEOUT_S",
    "Batch",
    "Clients",
    "Held",
    "Target",
    "auth",
    "legacy_handshake",
    "open_batch",
    "post",
]

LEGACY_PROTOCOL_VERSION = "2024-11-05"
# A handshake slower than this is a failure: the server is stuck.
TIMEOUT_S = 30.0
# Sessions whose streams share one HTTP client: the pool is searched on every request,
# so one client holding 1,000 connections would slow the client, not the server.
_SESSIONS_PER_CLIENT = 100
# The client freezes its objects each time this many more sessions of a batch are open.
_FREEZE_EVERY = 100


@attrs.frozen
class Target:
    """A server under test: where each transport listens, its process."""

    name: str
    streamable_url: str
    sse_url: str
    pid: int


@attrs.define(eq=False)
class Held:
    """One session: how long it took to open, and when its stream ended."""

    transport: str
    init_s: float = math.nan
    open_s: float = math.nan
    #: The headers of its requests (Streamable HTTP): token, session id, protocol version.
    headers: dict[str, str] = attrs.field(factory=dict)
    #: ``time.time()`` when its stream ended, after it had opened; None while open.
    ended_at: float | None = None
    #: Why it ended, when the stream broke rather than finishing cleanly.
    end_error: str | None = None


class Batch:
    """Sessions opened together; ``settled`` once each opened, failed or was skipped."""

    def __init__(self, name: str, transport: str, count: int) -> None:
        self.name = name
        self.transport = transport
        self.count = count
        self.held: list[Held] = []
        self.failed = 0
        self.skipped = 0
        self.errors: list[str] = []
        self.open_wall_s = 0.0
        self.settled = trio.Event()
        #: Set once every opened session's stream has ended (and none is still opening).
        self.all_ended = trio.Event()
        self._pending = count
        self._live = 0
        if count == 0:
            self.settled.set()
            self.all_ended.set()

    @property
    def live(self) -> int:
        return self._live

    def _settle_one(self) -> None:
        self._pending -= 1
        if self._pending == 0:
            self.settled.set()
            if self._live == 0:
                self.all_ended.set()

    def opened(self, held: Held) -> None:
        self.held.append(held)
        self._live += 1
        if len(self.held) % _FREEZE_EVERY == 0:
            # The client's held sessions live as long as the measure: out of its
            # collector's sight, or its full passes stall every handshake in flight.
            gc.freeze()
        self._settle_one()

    def failed_one(self, error: str) -> None:
        self.failed += 1
        if len(self.errors) < MAX_ERROR_SAMPLES:
            self.errors.append(error)
        self._settle_one()

    def skipped_one(self) -> None:
        self.skipped += 1
        self._settle_one()

    def ended(self, held: Held, error: str | None) -> None:
        held.ended_at = time.time()
        held.end_error = error
        self._live -= 1
        if self._live == 0 and self._pending == 0:
            self.all_ended.set()

    def figures(self) -> dict[str, Any]:
        init = sorted(h.init_s for h in self.held)
        opened = sorted(h.open_s for h in self.held)
        init_figures = latency_figures(init)
        return {
            "name": self.name,
            "transport": self.transport,
            "count": self.count,
            "opened": len(self.held),
            "failed": self.failed,
            "skipped": self.skipped,
            "open_wall_s": self.open_wall_s,
            "init_p50_ms": init_figures["p50_ms"] if init else math.nan,
            "init_p99_ms": init_figures["p99_ms"] if init else math.nan,
            "init_max_ms": init_figures["max_ms"] if init else math.nan,
            "open_p50_ms": percentile(opened, 0.5) * 1000 if opened else math.nan,
            "open_p99_ms": percentile(opened, 0.99) * 1000 if opened else math.nan,
            "errors": self.errors,
        }


def auth(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


async def post(
    client: httpx2.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> httpx2.Response:
    return await client.post(url, content=json.dumps(body).encode(), headers=headers)


async def _streamable_initialize(
    client: httpx2.AsyncClient, url: str, token: str | None, held: Held
) -> None:
    headers = request_headers(token)
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
    started = time.perf_counter()
    response = await post(client, url, request, headers)
    if response.status_code != 200:
        raise CallError(f"initialize: HTTP {response.status_code}: {response.text[:200]}")
    content_type = response.headers.get("content-type", "")
    result = parse_result("initialize", 1, content_type, response.content)
    held.init_s = time.perf_counter() - started
    session_id = response.headers.get("mcp-session-id")
    if not session_id:
        raise CallError("initialize: no Mcp-Session-Id in the answer")
    headers["mcp-session-id"] = session_id
    headers["mcp-protocol-version"] = str(result.get("protocolVersion", PROTOCOL_VERSION))
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await post(client, url, notification, headers)
    if response.status_code not in (200, 202):
        raise CallError(f"initialized: HTTP {response.status_code}: {response.text[:200]}")
    held.headers = headers


async def _hold_streamable(
    client: httpx2.AsyncClient,
    target: Target,
    token: str | None,
    held: Held,
    ready: Callable[[], None],
    delete_on_cancel: bool,
) -> None:
    with trio.fail_after(TIMEOUT_S):
        await _streamable_initialize(client, target.streamable_url, token, held)
    stream_headers = {k: v for k, v in held.headers.items() if k != "content-type"}
    stream_headers["accept"] = "text/event-stream"
    timeout = httpx2.Timeout(TIMEOUT_S, read=None)
    try:
        async with client.stream(
            "GET", target.streamable_url, headers=stream_headers, timeout=timeout
        ) as response:
            if response.status_code != 200:
                await response.aread()
                raise CallError(f"GET stream: HTTP {response.status_code}: {response.text[:200]}")
            ready()
            async for _ in response.aiter_raw():  # keep-alives until the server ends it
                pass
    except trio.Cancelled:
        if delete_on_cancel:
            with trio.move_on_after(2, shield=True):
                await client.delete(target.streamable_url, headers=held.headers)
        raise


async def legacy_handshake(
    client: httpx2.AsyncClient,
    sse_url: str,
    token: str | None,
    events: AsyncIterator[tuple[str, str]],
) -> float:
    """Initialize a legacy SSE session whose stream ``events`` reads; the initialize latency.

    Reads the ``endpoint`` event, POSTs ``initialize`` there, waits for its
    answer on the stream, then POSTs ``notifications/initialized``.

    :raises CallError: the server answered otherwise.
    """
    post_headers = {**auth(token), "content-type": "application/json"}
    event, data = await anext(events)
    if event != "endpoint":
        raise CallError(f"first event is {event!r}, not 'endpoint'")
    messages_url = urljoin(sse_url, data)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": initialize_params(LEGACY_PROTOCOL_VERSION),
    }
    started = time.perf_counter()
    answer = await post(client, messages_url, request, post_headers)
    if answer.status_code not in (200, 202):
        raise CallError(f"initialize: HTTP {answer.status_code}: {answer.text[:200]}")
    async for event, data in events:
        message = json.loads(data)
        if event == "message" and message.get("id") == 1:
            if "error" in message:
                raise CallError(f"initialize: {message['error']}")
            break
    else:
        raise CallError("the stream ended before the initialize answer")
    init_s = time.perf_counter() - started
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answer = await post(client, messages_url, notification, post_headers)
    if answer.status_code not in (200, 202):
        raise CallError(f"initialized: HTTP {answer.status_code}")
    return init_s


async def _hold_legacy(
    client: httpx2.AsyncClient,
    target: Target,
    token: str | None,
    held: Held,
    ready: Callable[[], None],
) -> None:
    headers = {**auth(token), "accept": "text/event-stream"}
    timeout = httpx2.Timeout(TIMEOUT_S, read=None)
    async with client.stream("GET", target.sse_url, headers=headers, timeout=timeout) as response:
        if response.status_code != 200:
            await response.aread()
            raise CallError(f"GET: HTTP {response.status_code}: {response.text[:200]}")
        events = sse_events(response.aiter_lines())
        with trio.fail_after(TIMEOUT_S):
            held.init_s = await legacy_handshake(client, target.sse_url, token, events)
        ready()
        async for _ in events:  # nothing but keep-alives until the server ends it
            pass


async def _session(
    client: httpx2.AsyncClient,
    target: Target,
    token: str | None,
    batch: Batch,
    limiter: trio.CapacityLimiter,
    deadline: float,
    delete_on_cancel: bool,
) -> None:
    held = Held(batch.transport)
    await limiter.acquire()
    handshaking = True
    started = 0.0

    def ready() -> None:
        nonlocal handshaking
        held.open_s = time.perf_counter() - started
        handshaking = False
        limiter.release()
        batch.opened(held)

    try:
        if trio.current_time() > deadline:
            batch.skipped_one()
            return
        started = time.perf_counter()
        try:
            if batch.transport == "streamable":
                await _hold_streamable(client, target, token, held, ready, delete_on_cancel)
            else:
                await _hold_legacy(client, target, token, held, ready)
        except Exception as exc:  # every failure is counted, with a sample
            if handshaking:
                batch.failed_one(f"{batch.transport}: {exc!r}")
                return
            batch.ended(held, repr(exc))
            return
        if not handshaking:
            batch.ended(held, None)
    finally:
        if handshaking:
            limiter.release()


class Clients:
    """HTTP clients for held streams, each shared by at most ``_SESSIONS_PER_CLIENT``."""

    def __init__(self, stack: list[httpx2.AsyncClient]) -> None:
        self._clients = stack
        self._used = 0

    @staticmethod
    def new() -> httpx2.AsyncClient:
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=32)
        return httpx2.AsyncClient(limits=limits, timeout=TIMEOUT_S)

    def next(self) -> httpx2.AsyncClient:
        index = self._used // _SESSIONS_PER_CLIENT
        if index == len(self._clients):
            self._clients.append(self.new())
        self._used += 1
        return self._clients[index]

    async def aclose(self) -> None:
        for client in self._clients:
            with trio.move_on_after(5, shield=True):
                await client.aclose()


async def open_batch(
    clients: Clients,
    target: Target,
    token: str | None,
    batch: Batch,
    nursery: trio.Nursery,
    concurrency: int,
    timeout_s: float,
    *,
    delete_on_cancel: bool = False,
) -> Batch:
    """Open ``batch.count`` sessions (held in ``nursery``); returns once each settled."""
    limiter = trio.CapacityLimiter(concurrency)
    deadline = trio.current_time() + timeout_s
    started = time.perf_counter()
    for _ in range(batch.count):
        nursery.start_soon(
            _session, clients.next(), target, token, batch, limiter, deadline, delete_on_cancel
        )
    await batch.settled.wait()
    batch.open_wall_s = time.perf_counter() - started
    return batch
