"""Many MCP sessions held open on one server: what ``scripts/bench sessions`` measures of them.

:func:`measure_level` runs one server's whole measure: a warm-up, the
lister sessions, a paced ``tools/list`` load, the server's RSS before,
the bulk sessions (half Streamable HTTP, half legacy SSE, the RSS read after
each half; see :mod:`benchlib.session_open`), the ``tools/list`` load again
with them open, and, when the server has tokens to revoke, each revocation
(:mod:`benchlib.session_revoke`; the bulk sessions opened again on the next
token before each after the first) and its checks. The held streams are
the watcher processes' (:mod:`benchlib.session_watch`), started here for
the level and stopped at its end.
"""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import httpx2
import trio

from benchlib.load import Tally, run_window
from benchlib.mcp_client import CallError, initialize_params, parse_result, request_headers
from benchlib.procs import CpuWindow, rss_kb
from benchlib.report import fmt
from benchlib.session_open import (
    TIMEOUT_S,
    Batch,
    Held,
    Keeper,
    Target,
    end_sessions,
    new_client,
    open_batch,
    post,
)
from benchlib.session_revoke import Revoker, measure_revocation, wall_time
from benchlib.session_watch import open_watchers, watchers_for

if TYPE_CHECKING:
    from benchlib.procs import Processes

__all__ = ["LevelPlan", "Revocation", "Revoker", "Target", "measure_level", "wall_time"]

# Warm-up sessions of each transport opened and closed before the baseline RSS.
_WARMUP_SESSIONS = 10
# A lister load whose calls due in the window fall this far short of clients x rate is flagged.
_OFFERED_SHORTFALL = 0.1


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
    #: Streams each watcher process holds at most.
    streams_per_watcher: int
    lister_token: str | None = None


@attrs.frozen
class Revocation:
    """One revocation of a token holding the bulk sessions: ``revoke`` revokes ``token``."""

    #: The result's key (``revocation``, ``revocation_api``) and how it is revoked.
    key: str
    via: str
    token: str
    revoke: Revoker


# --- tools/list under load ------------------------------------------------------------------


def _due_times(
    seed: str, rate: float, start: float, warmup_s: float, seconds: float
) -> list[float]:
    """When one client's calls are due (``time.perf_counter()``), ascending: ``rate x
    warmup_s`` of them at random in the warm-up from ``start``, ``rate x seconds`` in the
    window after it. Uniform times given their count are what Poisson arrivals are, so
    calls come in random bursts and lulls, and the window gets exactly the rate asked for
    (a Poisson count would miss it by a few percent, the same way on every run)."""
    draw = random.Random(seed).uniform  # noqa: S311 - not a secret
    warm = [start + draw(0, warmup_s) for _ in range(round(rate * warmup_s))]
    window = [start + warmup_s + draw(0, seconds) for _ in range(round(rate * seconds))]
    return sorted(warm + window)


async def list_load(
    client: httpx2.AsyncClient,
    target: Target,
    listers: list[Held],
    rate: float,
    warmup_s: float,
    seconds: float,
) -> dict[str, Any]:
    """Each lister calls tools/list at random times, ``rate`` a second (:func:`_due_times`).

    A call's latency counts from when it was due, so one held up behind a
    slow call is charged for the wait. Every call due in the measured
    window (after ``warmup_s``, for ``seconds``) is measured, however late
    it finishes, so the load offered is ``len(listers) x rate`` whatever
    the latency (``offered_per_s`` says what it was). Every failed call is
    an error.
    """
    tally = Tally()
    tools_listed: set[int] = set()
    cpu = CpuWindow(target.pid)
    due_in_window = 0

    async def worker(index: int) -> None:
        nonlocal due_in_window
        held = listers[index]
        start = tally.measure_from - warmup_s
        request_id = 1
        for due in _due_times(f"sessions tools/list {index}", rate, start, warmup_s, seconds):
            if due >= tally.measure_until:
                return
            measured = due >= tally.measure_from
            due_in_window += measured
            await trio.sleep(max(0.0, due - time.perf_counter()))
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
            if measured:
                tally.latencies.append(time.perf_counter() - due)

    await run_window(tally, cpu, len(listers), worker, warmup_s=warmup_s, seconds=seconds)
    wanted = len(listers) * rate
    offered = due_in_window / seconds
    return {
        "clients": len(listers),
        "rate_per_client": rate,
        "seconds": seconds,
        "calls": len(tally.latencies),
        "offered_per_s": offered,
        "wanted_per_s": wanted,
        "offered_short": offered < wanted * (1 - _OFFERED_SHORTFALL),
        **tally.figures(),
        "tools_listed": sorted(tools_listed),
        **cpu.figures(),
    }


# --- checks after a revocation ----------------------------------------------------------------


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


async def _rss(pid: int, settle_s: float) -> tuple[int, int]:
    """VmRSS and its anonymous part (RssAnon), in KiB, after ``settle_s`` of quiet.

    VmRSS also counts the pages of files the process maps (its SQLite readers
    map the database), which grow with what has been read, not with what is held.
    """
    await trio.sleep(settle_s)
    return rss_kb(pid), rss_kb(pid, "RssAnon")


@attrs.define(eq=False)
class _Level:
    """What one server's measure works with."""

    procs: Processes
    target: Target
    plan: LevelPlan
    keeper: Keeper
    client: httpx2.AsyncClient
    say: Callable[[str], None]

    async def open(self, name: str, transport: str, count: int, token: str | None) -> Batch:
        batch = Batch(name, transport, count)
        plan = self.plan
        await open_batch(
            self.client,
            self.keeper,
            self.target,
            token,
            batch,
            plan.open_concurrency,
            plan.open_timeout_s,
        )
        await self.keeper.refresh()
        return batch

    async def warm_up(self) -> list[str]:
        """Open and close a few sessions of each transport (code loaded on first use)."""
        batches = [
            await self.open(
                f"warm-up {transport}", transport, _WARMUP_SESSIONS, self.plan.lister_token
            )
            for transport in ("streamable", "sse")
        ]
        await end_sessions(self.client, self.keeper, self.target, batches)
        return [error for batch in batches for error in batch.errors]

    async def open_bulk(self, token: str | None, result: dict[str, Any] | None) -> list[Batch]:
        """The bulk sessions, half of each transport; with ``result``, the RSS after each."""
        bulk: list[Batch] = []
        plan, name = self.plan, self.target.name
        for transport, count in (("streamable", plan.streamable), ("sse", plan.legacy)):
            self.say(f"{name}: opening {count} {transport} sessions")
            _quiet_gc()
            batch = await self.open(f"bulk {transport}", transport, count, token)
            bulk.append(batch)
            figures = batch.figures()
            if result is not None:
                rss, anon = await _rss(self.target.pid, plan.settle_s)
                figures["rss_after_kb"], figures["anon_after_kb"] = rss, anon
                await self.keeper.refresh()
                figures["held"] = batch.live
                result[f"bulk_{transport}"] = figures
            self.say(
                f"  {figures['opened']} of {count} open in {batch.open_wall_s:.1f} s, "
                f"initialize p50 {figures['init_p50_ms']:.1f} ms, "
                f"p99 {figures['init_p99_ms']:.1f} ms, {batch.failed} failed"
            )
        return bulk

    async def revoke(
        self,
        bulk: list[Batch],
        revocation: Revocation,
        listers: Batch,
        list_client: httpx2.AsyncClient,
    ) -> dict[str, Any]:
        held = sum(b.live for b in bulk)
        self.say(f"{self.target.name}: revoking ({revocation.via}) the token of {held} sessions")
        figures = await measure_revocation(
            self.procs,
            self.keeper,
            self.target,
            bulk,
            revocation.revoke,
            wait_s=self.plan.revoke_wait_s,
            observe=True,
            name=f"{self.target.name}-{revocation.key}",
        )
        figures["opened"] = sum(len(b.held) for b in bulk)
        figures["open_failed"] = sum(b.failed + b.skipped for b in bulk)
        figures["listers_alive"] = listers.live
        figures["listers_answering"] = sum(
            [await _list_once(list_client, self.target, h) for h in listers.held]
        )
        figures["revoked_token_status"] = await _initialize_status(
            list_client, self.target.streamable_url, revocation.token
        )
        cpu, lag = figures.get("cpu") or {}, figures.get("loop_lag") or {}
        self.say(
            f"  {figures['closed']} of {figures['streams']} streams closed, the last "
            f"{figures['close_max_ms']:.0f} ms after the revocation"
            + (f"; server idle from {fmt(cpu.get('idle_at_ms'), 0)} ms" if cpu else "")
            + (f"; loop stall {fmt(lag.get('stall_ms'), 0)} ms" if lag else "")
        )
        return figures


async def measure_level(
    procs: Processes,
    target: Target,
    plan: LevelPlan,
    say: Callable[[str], None],
    *,
    revocations: Sequence[Revocation] = (),
    revoke_listers: Revoker | None = None,
) -> dict[str, Any]:
    """One server's figures for ``plan`` (see the module docstring).

    The bulk sessions open on the first revocation's token (on none without
    revocations); before each later revocation, as many open again on its own.

    Resource handling:
        The watcher processes are started here and stopped before this
        returns, every stream closed (or, revoked, ended by the server).
    """
    result: dict[str, Any] = {"server": target.name}
    _quiet_gc()
    streams = 2 * _WARMUP_SESSIONS + plan.list_clients + plan.streamable + plan.legacy
    watchers, children = open_watchers(
        procs, target.name, watchers_for(streams, plan.streams_per_watcher)
    )
    keeper = Keeper(watchers)
    client = new_client(plan.open_concurrency)
    list_client = new_client(plan.list_clients)
    level = _Level(procs, target, plan, keeper, client, say)
    result["watchers"] = len(children)
    try:
        warm_errors = await level.warm_up()
        if warm_errors:
            result["warmup_errors"] = warm_errors
        listers = await level.open("listers", "streamable", plan.list_clients, plan.lister_token)
        result["listers"] = listers.figures()

        async def listing() -> dict[str, Any]:
            return await list_load(
                list_client,
                target,
                listers.held,
                plan.list_rate,
                plan.list_warmup_s,
                plan.list_seconds,
            )

        say(f"{target.name}: tools/list, {len(listers.held)} clients, no other session")
        result["list_idle"] = await listing()
        # Read once the listers' first load ran: what it grew (its caches, the
        # pages it read) is not the bulk sessions'.
        _quiet_gc()
        result["rss_before_kb"], result["anon_before_kb"] = await _rss(target.pid, plan.settle_s)
        first_token = revocations[0].token if revocations else None
        bulk = await level.open_bulk(first_token, result)
        _per_session(result)
        await keeper.refresh()
        held = sum(b.live for b in bulk)
        _quiet_gc()
        say(f"{target.name}: tools/list, {len(listers.held)} clients, {held} sessions open")
        result["list_loaded"] = await listing()
        await keeper.refresh()
        result["bulk_held_at_end"] = sum(b.live for b in bulk)
        for n, revocation in enumerate(revocations):
            if n:
                bulk = await level.open_bulk(revocation.token, None)
                _quiet_gc()
                await trio.sleep(plan.settle_s)
            result[revocation.key] = await level.revoke(bulk, revocation, listers, list_client)
        if revoke_listers is not None:
            result["revocation_listers"] = await measure_revocation(
                procs,
                keeper,
                target,
                [listers],
                revoke_listers,
                wait_s=plan.revoke_wait_s,
                observe=False,
                name=f"{target.name}-listers",
            )
            result["rss_after_revocations_kb"], _ = await _rss(target.pid, plan.settle_s)
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(30):
            await keeper.close()
        with trio.move_on_after(5, shield=True):
            await client.aclose()
            await list_client.aclose()
        for child in children:
            procs.stop(child)
        gc.unfreeze()
    return result


def _quiet_gc() -> None:
    """Collect now and freeze what is left, so no long collection of the client's lands
    in a measured window (its held sessions make each full pass longer)."""
    gc.collect()
    gc.freeze()


def _per_session(result: dict[str, Any]) -> None:
    """RSS per held session of each transport, from the readings around its batch."""
    before, anon_before = result["rss_before_kb"], result.get("anon_before_kb")
    for key in ("bulk_streamable", "bulk_sse"):
        figures = result[key]
        held = figures["held"]
        grown = figures["rss_after_kb"] - before
        figures["per_session_kb"] = grown / held if held else math.nan
        before = figures["rss_after_kb"]
        if anon_before is not None and "anon_after_kb" in figures:
            anon_grown = figures["anon_after_kb"] - anon_before
            figures["anon_per_session_kb"] = anon_grown / held if held else math.nan
            anon_before = figures["anon_after_kb"]
    total = result["bulk_sse"]["held"] + result["bulk_streamable"]["held"]
    grown = result["bulk_sse"]["rss_after_kb"] - result["rss_before_kb"]
    result["per_session_kb"] = grown / total if total else math.nan
