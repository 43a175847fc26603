"""Many MCP sessions held open on one server: what ``scripts/bench sessions`` measures of them.

:func:`measure_level` runs one server's whole measure: a warm-up, the
lister sessions, the server's RSS before, a paced ``tools/list`` load,
the bulk sessions (half Streamable HTTP, half legacy SSE, the RSS read after
each half; see :mod:`benchlib.session_open`), the ``tools/list`` load again
with them open, and, when the server has tokens to revoke, the revocation
and its checks.
"""

from __future__ import annotations

import datetime as dt
import gc
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx2
import trio

from benchlib.load import MAX_ERROR_SAMPLES, Arrivals, Tally, percentile, run_window
from benchlib.mcp_client import CallError, initialize_params, parse_result, request_headers
from benchlib.procs import CpuWindow, rss_kb
from benchlib.session_open import (
    TIMEOUT_S,
    Batch,
    Clients,
    Held,
    Target,
    open_batch,
    post,
)

__all__ = ["LevelPlan", "Revoker", "Target", "measure_level", "wall_time"]

# Warm-up sessions of each transport opened and closed before the baseline RSS.
_WARMUP_SESSIONS = 10

#: An async function revoking a token: returns the revocation's wall-clock time
#: (the token's ``revoked_at``) and a dict of whatever else is worth keeping.
Revoker = Callable[[], Awaitable[tuple[float, dict[str, Any]]]]


def wall_time(iso: str) -> float:
    """``time.time()`` of an ISO 8601 timestamp (``revoked_at``)."""
    return dt.datetime.fromisoformat(iso).timestamp()


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
    tally = Tally()
    tools_listed: set[int] = set()
    cpu = CpuWindow(target.pid)

    async def worker(index: int) -> None:
        held = listers[index]
        arrivals = Arrivals(f"sessions tools/list {index}", rate)
        request_id = 1
        while True:
            due = arrivals.advance()
            if due >= tally.measure_until:
                return
            await arrivals.wait()
            request_id += 1
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}}
            try:
                with trio.fail_after(TIMEOUT_S):
                    response = await post(client, target.streamable_url, body, held.headers)
                if response.status_code != 200:
                    raise CallError(f"HTTP {response.status_code}: {response.text[:200]}")
                content_type = response.headers.get("content-type", "")
                result = parse_result("tools/list", request_id, content_type, response.content)
                tools = result.get("tools")
                if not isinstance(tools, list) or not tools:
                    raise CallError("no tools listed")
                tools_listed.add(len(tools))
            except Exception as exc:  # counted, with a sample
                tally.error(f"tools/list: {exc!r}")
                continue
            tally.record(due, time.perf_counter())

    await run_window(tally, cpu, len(listers), worker, warmup_s=warmup_s, seconds=seconds)
    return {
        "clients": len(listers),
        "rate_per_client": rate,
        "seconds": seconds,
        "calls": len(tally.latencies),
        **tally.figures(),
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
        "end_errors": sorted({h.end_error for h in waited if h.end_error})[:MAX_ERROR_SAMPLES],
        "revoke_returned_after_ms": (returned_at - revoked_at) * 1000,
        "close_p50_ms": percentile(after, 0.5) * 1000 if after else math.nan,
        "close_max_ms": after[-1] * 1000 if after else math.nan,
        "wait_s": wait_s,
    }


async def _initialize_status(client: httpx2.AsyncClient, url: str, token: str) -> int:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
    return (await post(client, url, request, request_headers(token))).status_code


async def _list_once(client: httpx2.AsyncClient, target: Target, held: Held) -> bool:
    body = {"jsonrpc": "2.0", "id": 9999, "method": "tools/list", "params": {}}
    try:
        with trio.fail_after(TIMEOUT_S):
            response = await post(client, target.streamable_url, body, held.headers)
        content_type = response.headers.get("content-type", "")
        parse_result("tools/list", 9999, content_type, response.content)
    except Exception:  # a failed call is the answer
        return False
    return response.status_code == 200


# --- one server's measure -------------------------------------------------------------------


async def _rss(pid: int, settle_s: float) -> int:
    await trio.sleep(settle_s)
    return rss_kb(pid)


async def _warm_up(clients: Clients, target: Target, plan: LevelPlan) -> list[str]:
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
    stream_clients = Clients([])
    list_client = Clients.new()
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
