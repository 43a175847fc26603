"""``/healthz`` latency while one client sends hostile tool calls, in a process of its own.

Reads a JSON job on stdin::

    {"base_url": ..., "mcp_url": ..., "token": ..., "tools": {"hostile_unique": {...}, ...},
     "seconds": 10, "hostile": true}

and prints one JSON document on stdout. A prober asks ``/healthz`` every
10 ms for ``seconds`` and times each answer. With ``"hostile": true``, one
client meanwhile calls each of ``tools`` with its arguments in turn, back to
back (stateless 2026-07-28 requests, as :mod:`benchlib.modern` sends them),
and counts the calls and how long each took to be answered (a refusal, the
expected answer, included). A call or probe that does not answer within
``_TIMEOUT_S`` counts as such.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.load import latency_figures, run_job_from_stdin
from benchlib.modern import StatelessClient

_TIMEOUT_S = 30.0
_PROBE_EVERY_S = 0.01


async def _probe(base_url: str, until: float, latencies: list[float], failures: list[str]) -> None:
    async with httpx2.AsyncClient(timeout=_TIMEOUT_S) as client:
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                response = await client.get(f"{base_url}/healthz")
            except httpx2.HTTPError as exc:
                failures.append(f"/healthz: {type(exc).__name__}")
            else:
                if response.status_code != 200:
                    failures.append(f"/healthz: HTTP {response.status_code}")
            latencies.append(time.monotonic() - started)
            await trio.sleep(_PROBE_EVERY_S)


async def _hostile(
    url: str,
    token: str,
    tools: dict[str, dict[str, Any]],
    until: float,
    latencies: list[float],
    failures: list[str],
) -> None:
    async with httpx2.AsyncClient(timeout=_TIMEOUT_S) as http:
        client = StatelessClient(http, url, token)
        while time.monotonic() < until:
            for tool, arguments in tools.items():
                started = time.monotonic()
                try:
                    _, _, body = await client.call_raw(
                        "tools/call", {"name": tool, "arguments": arguments}
                    )
                except Exception as exc:
                    failures.append(f"{tool}: {exc}"[:200])
                else:
                    # Each must be refused with a tool error (invalid, or not queued).
                    if b'"isError":true' not in body.replace(b" ", b""):
                        failures.append(f"{tool}: not refused: {body[:200]!r}")
                latencies.append(time.monotonic() - started)


async def run(job: dict[str, Any]) -> dict[str, Any]:
    until = time.monotonic() + float(job["seconds"])
    probes: list[float] = []
    calls: list[float] = []
    failures: list[str] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_probe, job["base_url"], until, probes, failures)
        if job.get("hostile"):
            nursery.start_soon(
                _hostile, job["mcp_url"], job["token"], job["tools"], until, calls, failures
            )
    probes.sort()
    calls.sort()
    return {
        "healthz": latency_figures(probes),
        "healthz_count": len(probes),
        "hostile_calls": len(calls),
        "hostile": latency_figures(calls) if calls else None,
        "failures": len(failures),
        "failure_samples": failures[:5],
    }


if __name__ == "__main__":
    run_job_from_stdin(lambda job: run)
