"""Load on one MCP server's ``tools/call`` or ``tools/list``, in a process of its own.

Reads a JSON job on stdin::

    {"url": ..., "token": ... or null, "tool": "search_context",
     "queries": [...], "limit": 5, "concurrency": 16,
     "warmup_s": 3, "seconds": 15, "server_pid": 1234 or null}

(plus ``"era": "2026-07-28"`` for requests of that stateless revision,
each on its own with no session: see :mod:`benchlib.modern`; or
``{"method": "tools/list", "expect_tools": 202, "rate_per_client": 5 or
null, ...}`` for ``tools/list`` instead, no tool or queries needed) and
prints one JSON document of results on stdout. Each of ``concurrency``
workers opens its own Streamable HTTP session (initialize, initialized),
then calls the tool in a loop, cycling through the queries from its own
offset (or lists the tools, checking that exactly ``expect_tools`` come
back, each with a name and an input schema; an answer byte-identical to
one checked before, id aside, is not parsed again), until the run ends.
``tools/list`` workers with a ``rate_per_client`` are paced instead of
back to back: each calls at random (Poisson) times, that many a second on
average, and a call's latency counts from when it was due, so a call held
up behind a slow one is charged for the wait. Only calls that start after
the warm-up and finish before the end are measured; every failed call,
warm-up included, is an error. The first answer to each query is kept
(URIs of the hits) so the caller can check both servers found the same
documents. The CPU time of this process, of the server (``server_pid``)
and of the whole machine (/proc/stat) is taken at both ends of the
measured window, so the caller can tell how much CPU other processes took
meanwhile. The window, the loop and the figures are :mod:`benchlib.load`'s;
this module owns what is MCP about the calls and their checks. The calls go
over :class:`benchlib.raw_http.RawClient` (keep-alive sockets, answers
parsed by httptools), not httpx2, which cost this process about a third of
a core at 500 calls/s: CPU the servers it measures could not use.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.load import Arrivals, Tally, run_job_from_stdin, run_window
from benchlib.mcp_client import CallError, StreamableSession, parse_result
from benchlib.modern import ERA, StatelessClient
from benchlib.procs import CpuWindow
from benchlib.raw_http import TRANSPORT_ERRORS, RawClient

# Distinct tools/list answers remembered as checked (they change only with the catalog).
_MAX_CHECKED_ANSWERS = 8
# A call slower than this is an error: the server is stuck, not slow.
_CALL_TIMEOUT_S = 30.0


class _Run(Tally):
    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__()
        self.job = job
        self.hits = 0
        self.checked = 0
        self.answers: dict[str, list[str]] = {}
        self.response_bytes = 0
        # tools/list answers checked in full, from their "result" on (the id
        # before it differs per call) -> how many tools they listed.
        self.checked_answers: dict[bytes, int] = {}

    def check(self, query: str, result: dict[str, Any]) -> None:
        if result.get("isError"):
            content = result.get("content") or [{}]
            raise CallError(f"tool error: {str(content[0].get('text'))[:200]}")
        if self.job.get("echo"):
            self.check_echo(query, result)
            return
        structured = result.get("structuredContent") or {}
        hits = structured.get("results")
        if not isinstance(hits, list) or not result.get("content"):
            raise CallError("the result has no content or no structuredContent.results")
        self.hits += len(hits)
        self.checked += 1
        if query not in self.answers:
            self.answers[query] = [str(hit.get("uri")) for hit in hits]

    def check_echo(self, text: str, result: dict[str, Any]) -> None:
        content = result.get("content") or [{}]
        if content[0].get("text") != text:
            raise CallError(f"echoed {str(content[0].get('text'))[:100]!r}, sent {text[:100]!r}")
        self.hits += 1
        self.checked += 1

    def check_list_answer(self, request_id: int, content_type: str, content: bytes) -> None:
        """Check a tools/list answer; one identical to an answer checked before is not parsed.

        Parsing 150 KB of JSON costs the client more than the server spends
        answering; on two cores the load generator would measure itself.
        """
        start = content.find(b'"result":')
        key = content[start:] if start >= 0 and content_type.startswith("application/json") else b""
        if key and key in self.checked_answers:
            self.hits += self.checked_answers[key]
            self.checked += 1
            return
        result = parse_result("tools/list", request_id, content_type, content)
        self.check_list(result)
        if key and len(self.checked_answers) < _MAX_CHECKED_ANSWERS:
            self.checked_answers[key] = len(result["tools"])

    def check_list(self, result: dict[str, Any]) -> None:
        tools = result.get("tools")
        expected = self.job.get("expect_tools")
        if not isinstance(tools, list):
            raise CallError("the result has no tools list")
        if expected is not None and len(tools) != expected:
            raise CallError(f"{len(tools)} tools listed, expected {expected}")
        if not all(isinstance(t, dict) and t.get("name") and t.get("inputSchema") for t in tools):
            raise CallError("a listed tool has no name or no inputSchema")
        self.hits += len(tools)
        self.checked += 1
        if not self.response_bytes:
            self.response_bytes = len(json.dumps(result, separators=(",", ":")))


def _arguments(job: dict[str, Any], query: str) -> dict[str, Any]:
    """A call's arguments: ``{"text": ...}`` for an echo job, else the search's."""
    if job.get("echo"):
        return {"text": query}
    return {"query": query, "limit": job["limit"]}


async def _open_session(run: _Run, client: RawClient) -> StreamableSession | StatelessClient | None:
    """An initialized session of the job's server, or None (counted as an error).

    A job of the stateless revision (``"era": "2026-07-28"``) gets a
    :class:`~benchlib.modern.StatelessClient`: no handshake, no session.
    """
    url, token = run.job["url"], run.job.get("token")
    session: StreamableSession | StatelessClient
    if run.job.get("era") == ERA:
        session = StatelessClient(client, url, token)
    else:
        session = StreamableSession(client, url, token)
    try:
        with trio.fail_after(_CALL_TIMEOUT_S):
            await session.initialize()
    except (CallError, *TRANSPORT_ERRORS, trio.TooSlowError, ValueError) as exc:
        run.error(f"initialize: {exc!r}")
        return None
    return session


async def _worker(run: _Run, client: RawClient, index: int) -> None:
    job = run.job
    if job.get("method", "tools/call") == "tools/list":
        await _list_worker(run, client, index)
        return
    stop_at = run.measure_until
    queries: list[str] = job["queries"]
    session = await _open_session(run, client)
    if session is None:
        return
    n = index * 7
    perf_counter = time.perf_counter
    try:
        while perf_counter() < stop_at:
            query = queries[n % len(queries)]
            n += 1
            params = {"name": job["tool"], "arguments": _arguments(job, query)}
            started = perf_counter()
            try:
                with trio.fail_after(_CALL_TIMEOUT_S):
                    result = await session.call("tools/call", params)
                run.check(query, result)
            except (CallError, *TRANSPORT_ERRORS, trio.TooSlowError, ValueError, KeyError) as exc:
                run.error(f"tools/call {query!r}: {exc!r}")
                continue
            run.record(started, perf_counter())
    finally:
        with trio.move_on_after(5, shield=True):
            await session.aclose()


async def _list_worker(run: _Run, client: RawClient, index: int) -> None:
    session = await _open_session(run, client)
    if session is None:
        return
    rate = run.job.get("rate_per_client")
    # Seeded per worker: the same arrival times on every run.
    arrivals = Arrivals(f"tools/list worker {index}", rate or 1.0)
    perf_counter = time.perf_counter
    due = arrivals.due
    stop_at = run.measure_until
    try:
        while perf_counter() < stop_at:
            if rate:
                due = arrivals.advance()
                await arrivals.wait()
            started = perf_counter()
            try:
                with trio.fail_after(_CALL_TIMEOUT_S):
                    answer = await session.call_raw("tools/list", {})
                run.check_list_answer(*answer)
            except (CallError, *TRANSPORT_ERRORS, trio.TooSlowError, ValueError, KeyError) as exc:
                run.error(f"tools/list: {exc!r}")
                continue
            # Paced: from when the call was due, so waiting behind a slow call counts.
            run.record(min(due, started) if rate else started, perf_counter())
    finally:
        with trio.move_on_after(5, shield=True):
            await session.aclose()


async def run_load(job: dict[str, Any]) -> dict[str, Any]:
    """Run the job described in the module docstring; the results as a JSON-able dict."""
    run = _Run(job)
    concurrency = int(job["concurrency"])
    seconds = float(job["seconds"])
    cpu = CpuWindow(job.get("server_pid"), job.get("other_pids"))
    async with RawClient(job["url"]) as client:

        async def worker(index: int) -> None:
            await _worker(run, client, index)

        await run_window(
            run, cpu, concurrency, worker, warmup_s=float(job["warmup_s"]), seconds=seconds
        )
    calls = len(run.latencies)
    return {
        "calls": calls,
        "calls_total": run.checked,
        "seconds": seconds,
        "throughput_rps": calls / seconds,
        **run.figures(),
        "mean_hits": run.hits / max(1, run.checked),
        "method": job.get("method", "tools/call"),
        "rate_per_client": job.get("rate_per_client"),
        "concurrency": concurrency,
        "response_kb": run.response_bytes / 1024,
        **cpu.figures(),
        "answers": run.answers,
    }


def main() -> None:
    run_job_from_stdin(lambda job: run_load)


if __name__ == "__main__":
    main()
