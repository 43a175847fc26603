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

The POSTs go through one httpx2 client (:func:`new_client`); each stream is
opened on a socket of its own (:func:`benchlib.stream_http.open_stream`)
and, once the session is open, handed to a watcher process
(:mod:`benchlib.session_watch`) through the :class:`Keeper`, which maps the
watchers' stamps back to sessions. So from then on this process does no
work for a held stream, and when thousands end at once the watchers stamp
each end (``time.time()``, comparable with a revocation's timestamp) as it
arrives. For each session the *initialize latency* (from sending
``initialize`` to its answer) and the *open time* (from the session's first
request to its stream open and ``initialized`` accepted) are kept. A
:class:`Batch` is sessions opened together (:func:`open_batch`); what is
measured with them open is :mod:`benchlib.session_hold`'s.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import time
from collections.abc import AsyncIterator, Iterable
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
from benchlib.session_watch import Watchers
from benchlib.sse import sse_events
from benchlib.stream_http import OpenStream, open_stream

__all__ = [
    "TIMEOUT_S",
    "Batch",
    "Held",
    "Keeper",
    "Target",
    "auth",
    "end_sessions",
    "legacy_handshake",
    "new_client",
    "open_batch",
    "post",
]

LEGACY_PROTOCOL_VERSION = "2024-11-05"
# A handshake slower than this is a failure: the server is stuck.
TIMEOUT_S = 30.0
# The client freezes its objects each time this many more sessions of a batch are open.
_FREEZE_EVERY = 100
# How often the keeper asks the watchers for ends while waiting for some.
_POLL_S = 0.025


@attrs.frozen
class Target:
    """A server under test: where each transport listens, its process."""

    name: str
    streamable_url: str
    sse_url: str
    pid: int
    #: Its liveness page, for the loop-lag probe (:mod:`benchlib.loop_lag`); None: no probe.
    healthz_url: str | None = None


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
        self._live = 0

    @property
    def live(self) -> int:
        """Its sessions whose stream is open (as of the keeper's last look)."""
        return self._live

    def opened(self, held: Held) -> None:
        self.held.append(held)
        self._live += 1
        if len(self.held) % _FREEZE_EVERY == 0:
            # The client's held sessions live as long as the measure: out of its
            # collector's sight, or its full passes stall every handshake in flight.
            gc.freeze()

    def failed_one(self, error: str) -> None:
        self.failed += 1
        if len(self.errors) < MAX_ERROR_SAMPLES:
            self.errors.append(error)

    def skipped_one(self) -> None:
        self.skipped += 1

    def ended(self, held: Held, at: float, error: str | None) -> None:
        held.ended_at = at
        held.end_error = error
        self._live -= 1

    def dropped(self) -> None:
        """One of its streams closed by the client."""
        self._live -= 1

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


class Keeper:
    """The held streams of a run: handed to the watchers, their ends brought back to sessions."""

    def __init__(self, watchers: Watchers) -> None:
        self.watchers = watchers
        self._sessions: dict[int, tuple[Held, Batch]] = {}
        self._tags: dict[Batch, str] = {}
        self._next_key = 0

    def _tag(self, batch: Batch) -> str:
        return self._tags.setdefault(batch, f"{len(self._tags)} {batch.name}")

    async def keep(self, stream: OpenStream, held: Held, batch: Batch) -> None:
        """Hand ``stream`` (``held``'s, now open) to a watcher; ``batch`` counts it open."""
        key = self._next_key
        self._next_key += 1
        await self.watchers.hold(stream, key, self._tag(batch))
        self._sessions[key] = (held, batch)
        batch.opened(held)

    async def refresh(self) -> None:
        """Bring the ends the watchers stamped since the last look to their sessions."""
        for end in await self.watchers.sync():
            session = self._sessions.pop(end.key, None)
            if session is not None:
                held, batch = session
                batch.ended(held, end.at, end.error)

    async def wait_ended(self, held: list[Held], wait_s: float) -> None:
        """Until every stream of ``held`` has ended, or ``wait_s`` went by."""
        with trio.move_on_after(wait_s):
            while True:
                await self.refresh()
                if all(h.ended_at is not None for h in held):
                    return
                await trio.sleep(_POLL_S)
        await self.refresh()

    async def close(self, batches: Iterable[Batch] | None = None) -> None:
        """Close the streams of ``batches`` (all with None) still open, client side."""
        await self.refresh()
        closing = None if batches is None else set(batches)
        for key, (_, batch) in list(self._sessions.items()):
            if closing is None or batch in closing:
                del self._sessions[key]
                batch.dropped()
        tags = None if closing is None else [self._tag(b) for b in closing]
        await self.watchers.close(tags)


def new_client(connections: int) -> httpx2.AsyncClient:
    """The client of the sessions' POSTs: ``connections`` kept alive (one a handshake in flight)."""
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=connections)
    return httpx2.AsyncClient(limits=limits, timeout=TIMEOUT_S)


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


async def _checked_stream(url: str, headers: dict[str, str], what: str) -> OpenStream:
    stream = await open_stream(url, headers)
    if stream.head.status != 200:
        with contextlib.closing(stream):
            text = (await stream.read_body(4096)).decode("utf-8", errors="replace")
        raise CallError(f"{what}: HTTP {stream.head.status}: {text[:200]}")
    return stream


async def _open_streamable(
    client: httpx2.AsyncClient, target: Target, token: str | None, held: Held
) -> OpenStream:
    await _streamable_initialize(client, target.streamable_url, token, held)
    stream_headers = {k: v for k, v in held.headers.items() if k != "content-type"}
    stream_headers["accept"] = "text/event-stream"
    return await _checked_stream(target.streamable_url, stream_headers, "GET stream")


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


async def _open_legacy(
    client: httpx2.AsyncClient, target: Target, token: str | None, held: Held
) -> OpenStream:
    headers = {**auth(token), "accept": "text/event-stream"}
    stream = await _checked_stream(target.sse_url, headers, "GET")
    try:
        lines = stream.lines()
        async with contextlib.aclosing(lines), contextlib.aclosing(sse_events(lines)) as events:
            held.init_s = await legacy_handshake(client, target.sse_url, token, events)
    except BaseException:
        stream.close()
        raise
    return stream


async def _session(
    client: httpx2.AsyncClient,
    keeper: Keeper,
    target: Target,
    token: str | None,
    batch: Batch,
    limiter: trio.CapacityLimiter,
    deadline: float,
) -> None:
    async with limiter:
        if trio.current_time() > deadline:
            batch.skipped_one()
            return
        held = Held(batch.transport)
        started = time.perf_counter()
        opening = _open_streamable if batch.transport == "streamable" else _open_legacy
        try:
            with trio.fail_after(TIMEOUT_S):
                stream = await opening(client, target, token, held)
            held.open_s = time.perf_counter() - started
            await keeper.keep(stream, held, batch)
        except Exception as exc:  # every failure is counted, with a sample
            batch.failed_one(f"{batch.transport}: {exc!r}")


async def open_batch(
    client: httpx2.AsyncClient,
    keeper: Keeper,
    target: Target,
    token: str | None,
    batch: Batch,
    concurrency: int,
    timeout_s: float,
) -> Batch:
    """Open ``batch.count`` sessions, at most ``concurrency`` handshakes at a time.

    Returns once each opened (its stream handed to the watchers), failed or
    was skipped (not started within ``timeout_s``).
    """
    limiter = trio.CapacityLimiter(concurrency)
    deadline = trio.current_time() + timeout_s
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(batch.count):
            nursery.start_soon(_session, client, keeper, target, token, batch, limiter, deadline)
    batch.open_wall_s = time.perf_counter() - started
    return batch


async def end_sessions(
    client: httpx2.AsyncClient, keeper: Keeper, target: Target, batches: list[Batch]
) -> None:
    """End ``batches``' sessions as a client leaving would: ``DELETE`` each Streamable HTTP
    session (the server forgets it), then close every stream."""
    limiter = trio.CapacityLimiter(20)

    async def delete(held: Held) -> None:
        async with limiter:
            with contextlib.suppress(httpx2.HTTPError), trio.move_on_after(TIMEOUT_S):
                await client.delete(target.streamable_url, headers=held.headers)

    async with trio.open_nursery() as nursery:
        for batch in batches:
            for held in batch.held:
                if held.headers and held.ended_at is None:
                    nursery.start_soon(delete, held)
    await keeper.close(batches)
