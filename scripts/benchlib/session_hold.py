"""Many MCP sessions held open on one server: the client side of ``scripts/bench sessions``.

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
effect can be timed against the revocation's own timestamp.

:func:`measure_level` runs one server's whole measure: a warm-up, the
lister sessions, the server's RSS before, a paced ``tools/list`` load,
the bulk sessions (half Streamable HTTP, half legacy SSE, the RSS read after
each half), the ``tools/list`` load again with them open, and, when the
server has tokens to revoke, the revocation and its checks.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urljoin

import attrs
import httpx2
import trio

from benchlib.load import CpuWindow, latency_figures, percentile
from benchlib.mcp_client import PROTOCOL_VERSION, CallError, initialize_params, parse_result
from benchlib.procs import rss_kb
from benchlib.sse import sse_events

__all__ = ["Batch", "Held", "LevelPlan", "Revoker", "Target", "measure_level", "wall_time"]

LEGACY_PROTOCOL_VERSION = "2024-11-05"
# A handshake (or a tools/list call) slower than this is a failure: the server is stuck.
_TIMEOUT_S = 30.0
# Sessions whose streams share one HTTP client: the pool is searched on every request,
# so one client holding 1,000 connections would slow the client, not the server.
_SESSIONS_PER_CLIENT = 100
_MAX_ERROR_SAMPLES = 5
# Warm-up sessions of each transport opened and closed before the baseline RSS.
_WARMUP_SESSIONS = 10
# The client freezes its objects each time this many more sessions of a batch are open.
_FREEZE_EVERY = 100

#: An async function revoking a token: returns the revocation's wall-clock time
#: (the token's ``revoked_at``) and a dict of whatever else is worth keeping.
Revoker = Callable[[], Awaitable[tuple[float, dict[str, Any]]]]


def wall_time(iso: str) -> float:
    """``time.time()`` of an ISO 8601 timestamp (``revoked_at``)."""
    return dt.datetime.fromisoformat(iso).timestamp()


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
        if len(self.errors) < _MAX_ERROR_SAMPLES:
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


@attrs.frozen
class LevelPlan:
    """What one server is asked to hold, and how."""

    #: Bulk sessions: ``streamable`` over Streamable HTTP, ``legacy`` over legacy SSE.
    streamable: int
    legacy: int
    #: Handshakes in flight at once while opening.
    open_concurrency: int
    #: Seconds a batch may take to open; sessions not started by then are skipped.
    open_timeout_s: float
    #: Streamable HTTP sessions calling tools/list, on their own token.
    list_clients: int
    list_rate: float
    list_warmup_s: float
    list_seconds: float
    #: Seconds before each RSS reading.
    settle_s: float
    #: Seconds to wait for a revoked token's streams to end.
    revoke_wait_s: float
    bulk_token: str | None = None
    lister_token: str | None = None


# --- opening and holding one session ------------------------------------------------------


def _auth(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


async def _post(
    client: httpx2.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> httpx2.Response:
    return await client.post(url, content=json.dumps(body).encode(), headers=headers)


async def _streamable_initialize(
    client: httpx2.AsyncClient, url: str, token: str | None, held: Held
) -> None:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **_auth(token),
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
    started = time.perf_counter()
    response = await _post(client, url, request, headers)
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
    response = await _post(client, url, notification, headers)
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
    with trio.fail_after(_TIMEOUT_S):
        await _streamable_initialize(client, target.streamable_url, token, held)
    stream_headers = {k: v for k, v in held.headers.items() if k != "content-type"}
    stream_headers["accept"] = "text/event-stream"
    timeout = httpx2.Timeout(_TIMEOUT_S, read=None)
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


async def _hold_legacy(
    client: httpx2.AsyncClient,
    target: Target,
    token: str | None,
    held: Held,
    ready: Callable[[], None],
) -> None:
    headers = {**_auth(token), "accept": "text/event-stream"}
    post_headers = {**_auth(token), "content-type": "application/json"}
    timeout = httpx2.Timeout(_TIMEOUT_S, read=None)
    async with client.stream("GET", target.sse_url, headers=headers, timeout=timeout) as response:
        if response.status_code != 200:
            await response.aread()
            raise CallError(f"GET: HTTP {response.status_code}: {response.text[:200]}")
        events = sse_events(response.aiter_lines())
        with trio.fail_after(_TIMEOUT_S):
            event, data = await anext(events)
            if event != "endpoint":
                raise CallError(f"first event is {event!r}, not 'endpoint'")
            messages_url = urljoin(target.sse_url, data)
            request = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": initialize_params(LEGACY_PROTOCOL_VERSION),
            }
            started = time.perf_counter()
            answer = await _post(client, messages_url, request, post_headers)
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
            held.init_s = time.perf_counter() - started
            notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            answer = await _post(client, messages_url, notification, post_headers)
            if answer.status_code not in (200, 202):
                raise CallError(f"initialized: HTTP {answer.status_code}")
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


class _Clients:
    """HTTP clients for held streams, each shared by at most ``_SESSIONS_PER_CLIENT``."""

    def __init__(self, stack: list[httpx2.AsyncClient]) -> None:
        self._clients = stack
        self._used = 0

    @staticmethod
    def new() -> httpx2.AsyncClient:
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=32)
        return httpx2.AsyncClient(limits=limits, timeout=_TIMEOUT_S)

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
    clients: _Clients,
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


# --- tools/list under load ------------------------------------------------------------------


async def list_load(
    client: httpx2.AsyncClient,
    target: Target,
    listers: list[Held],
    rate: float,
    warmup_s: float,
    seconds: float,
) -> dict[str, Any]:
    """Each lister calls tools/list at random (Poisson) times, ``rate`` a second on average.

    A call's latency counts from when it was due, so one held up behind a
    slow call is charged for the wait; only calls due after ``warmup_s`` and
    done before the end are measured. Every failed call is an error.
    """
    latencies: list[float] = []
    errors: list[str] = []
    tools_listed: set[int] = set()
    started = time.perf_counter()
    measure_from, measure_until = started + warmup_s, started + warmup_s + seconds
    cpu = CpuWindow(target.pid)

    async def worker(index: int, held: Held) -> None:
        arrivals = random.Random(f"sessions tools/list {index}")  # noqa: S311 - not a secret
        due = time.perf_counter()
        request_id = 1
        while True:
            due += arrivals.expovariate(rate)
            if due >= measure_until:
                return
            await trio.sleep(max(0.0, due - time.perf_counter()))
            request_id += 1
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}}
            try:
                with trio.fail_after(_TIMEOUT_S):
                    response = await _post(client, target.streamable_url, body, held.headers)
                if response.status_code != 200:
                    raise CallError(f"HTTP {response.status_code}: {response.text[:200]}")
                content_type = response.headers.get("content-type", "")
                result = parse_result("tools/list", request_id, content_type, response.content)
                tools = result.get("tools")
                if not isinstance(tools, list) or not tools:
                    raise CallError("no tools listed")
                tools_listed.add(len(tools))
            except Exception as exc:  # counted, with a sample
                errors.append(f"tools/list: {exc!r}")
                continue
            ended = time.perf_counter()
            if due >= measure_from and ended <= measure_until:
                latencies.append(ended - due)

    async with trio.open_nursery() as nursery:
        cpu.start(nursery, measure_from, measure_until)
        for index, held in enumerate(listers):
            nursery.start_soon(worker, index, held)
    latencies.sort()
    return {
        "clients": len(listers),
        "rate_per_client": rate,
        "seconds": seconds,
        "calls": len(latencies),
        **latency_figures(latencies),
        "errors": len(errors),
        "error_samples": errors[:_MAX_ERROR_SAMPLES],
        "tools_listed": sorted(tools_listed),
        **cpu.figures(),
    }


# --- revocation -----------------------------------------------------------------------------


async def _revocation(batches: list[Batch], revoke: Revoker, wait_s: float) -> dict[str, Any]:
    """Revoke, then wait for every stream of ``batches`` to end; how long each took."""
    held = [h for b in batches for h in b.held if h.ended_at is None]
    revoked_at, details = await revoke()
    returned_at = time.time()
    with trio.move_on_after(wait_s):
        for batch in batches:
            await batch.all_ended.wait()
    waited = [h for h in held if h.ended_at is not None]
    after = sorted(h.ended_at - revoked_at for h in waited)  # type: ignore[operator]
    return {
        **details,
        "streams": len(held),
        "closed": len(waited),
        "still_open": len(held) - len(waited),
        "broken": sum(1 for h in waited if h.end_error),
        "end_errors": sorted({h.end_error for h in waited if h.end_error})[:_MAX_ERROR_SAMPLES],
        "revoke_returned_after_ms": (returned_at - revoked_at) * 1000,
        "close_p50_ms": percentile(after, 0.5) * 1000 if after else math.nan,
        "close_max_ms": after[-1] * 1000 if after else math.nan,
        "wait_s": wait_s,
    }


async def _initialize_status(client: httpx2.AsyncClient, url: str, token: str) -> int:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **_auth(token),
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
    return (await _post(client, url, request, headers)).status_code


async def _list_once(client: httpx2.AsyncClient, target: Target, held: Held) -> bool:
    body = {"jsonrpc": "2.0", "id": 9999, "method": "tools/list", "params": {}}
    try:
        with trio.fail_after(_TIMEOUT_S):
            response = await _post(client, target.streamable_url, body, held.headers)
        content_type = response.headers.get("content-type", "")
        parse_result("tools/list", 9999, content_type, response.content)
    except Exception:  # a failed call is the answer
        return False
    return response.status_code == 200


# --- one server's measure -------------------------------------------------------------------


async def _rss(pid: int, settle_s: float) -> int:
    await trio.sleep(settle_s)
    return rss_kb(pid)


async def _warm_up(clients: _Clients, target: Target, plan: LevelPlan) -> list[str]:
    """Open and close a few sessions of each transport (code loaded on first use)."""
    errors: list[str] = []
    async with trio.open_nursery() as nursery:
        for transport in ("streamable", "sse"):
            batch = Batch(f"warm-up {transport}", transport, _WARMUP_SESSIONS)
            await open_batch(
                clients,
                target,
                plan.lister_token,
                batch,
                nursery,
                plan.open_concurrency,
                plan.open_timeout_s,
                delete_on_cancel=True,
            )
            errors += batch.errors
        nursery.cancel_scope.cancel()
    return errors


async def measure_level(
    target: Target,
    plan: LevelPlan,
    say: Callable[[str], None],
    *,
    revoke_bulk: Revoker | None = None,
    revoke_listers: Revoker | None = None,
) -> dict[str, Any]:
    """One server's figures for ``plan`` (see the module docstring).

    Resource handling:
        Every stream this opened is closed (or cancelled) before it returns;
        with revokers, the server has closed them itself.
    """
    result: dict[str, Any] = {"server": target.name}
    _quiet_gc()
    stream_clients = _Clients([])
    list_client = _Clients.new()
    try:
        warm_errors = await _warm_up(stream_clients, target, plan)
        if warm_errors:
            result["warmup_errors"] = warm_errors
        async with trio.open_nursery() as nursery:
            listers = Batch("listers", "streamable", plan.list_clients)
            await open_batch(
                stream_clients,
                target,
                plan.lister_token,
                listers,
                nursery,
                plan.open_concurrency,
                plan.open_timeout_s,
            )
            result["listers"] = listers.figures()
            _quiet_gc()
            result["rss_before_kb"] = await _rss(target.pid, plan.settle_s)
            say(f"{target.name}: tools/list, {len(listers.held)} clients, no other session")
            result["list_idle"] = await list_load(
                list_client,
                target,
                listers.held,
                plan.list_rate,
                plan.list_warmup_s,
                plan.list_seconds,
            )
            bulk: list[Batch] = []
            for transport, count in (("streamable", plan.streamable), ("sse", plan.legacy)):
                say(f"{target.name}: opening {count} {transport} sessions")
                _quiet_gc()
                batch = Batch(f"bulk {transport}", transport, count)
                await open_batch(
                    stream_clients,
                    target,
                    plan.bulk_token,
                    batch,
                    nursery,
                    plan.open_concurrency,
                    plan.open_timeout_s,
                )
                bulk.append(batch)
                figures = batch.figures()
                figures["rss_after_kb"] = await _rss(target.pid, plan.settle_s)
                figures["held"] = batch.live
                result[f"bulk_{transport}"] = figures
                say(
                    f"  {figures['opened']} of {count} open in {batch.open_wall_s:.1f} s, "
                    f"initialize p50 {figures['init_p50_ms']:.1f} ms, "
                    f"p99 {figures['init_p99_ms']:.1f} ms, {batch.failed} failed"
                )
            _per_session(result)
            held = sum(b.live for b in bulk)
            _quiet_gc()
            say(f"{target.name}: tools/list, {len(listers.held)} clients, {held} sessions open")
            result["list_loaded"] = await list_load(
                list_client,
                target,
                listers.held,
                plan.list_rate,
                plan.list_warmup_s,
                plan.list_seconds,
            )
            result["bulk_held_at_end"] = sum(b.live for b in bulk)
            if revoke_bulk is not None:
                say(f"{target.name}: revoking the token of {held} sessions")
                revocation = await _revocation(bulk, revoke_bulk, plan.revoke_wait_s)
                revocation["listers_alive"] = listers.live
                revocation["listers_answering"] = sum(
                    [await _list_once(list_client, target, h) for h in listers.held]
                )
                if plan.bulk_token:
                    revocation["revoked_token_status"] = await _initialize_status(
                        list_client, target.streamable_url, plan.bulk_token
                    )
                result["revocation"] = revocation
                say(
                    f"  {revocation['closed']} of {revocation['streams']} streams closed, the "
                    f"last {revocation['close_max_ms']:.0f} ms after the revocation"
                )
            if revoke_listers is not None:
                result["revocation_listers"] = await _revocation(
                    [listers], revoke_listers, plan.revoke_wait_s
                )
                result["rss_after_revocations_kb"] = await _rss(target.pid, plan.settle_s)
            nursery.cancel_scope.cancel()
    finally:
        await stream_clients.aclose()
        with trio.move_on_after(5, shield=True):
            await list_client.aclose()
        gc.unfreeze()
    return result


def _quiet_gc() -> None:
    """Collect now and freeze what is left, so no long collection of the client's lands
    in a measured window (its held sessions make each full pass longer)."""
    gc.collect()
    gc.freeze()


def _per_session(result: dict[str, Any]) -> None:
    """RSS per held session of each transport, from the readings around its batch."""
    before = result["rss_before_kb"]
    for key in ("bulk_streamable", "bulk_sse"):
        figures = result[key]
        held = figures["held"]
        grown = figures["rss_after_kb"] - before
        figures["per_session_kb"] = grown / held if held else math.nan
        before = figures["rss_after_kb"]
    total = result["bulk_sse"]["held"] + result["bulk_streamable"]["held"]
    grown = result["bulk_sse"]["rss_after_kb"] - result["rss_before_kb"]
    result["per_session_kb"] = grown / total if total else math.nan
