"""The load library of the benchmarks: measured windows, request loops, latency figures.

Every load client of ``scripts/bench`` (:mod:`benchlib.mcp_load`,
:mod:`benchlib.webhook_load`, :mod:`benchlib.hostile_load`, the
``tools/list`` load of :mod:`benchlib.session_hold`) and every sequential
timing (``scripts/bench approvals``, ``scripts/bench dashboard``) runs on
this module:

- :class:`Tally` is a measured window: the latencies of the requests that
  started after the warm-up and finished before the end, every failure
  (with a few samples) and the answers' statuses;
- :func:`run_window` runs ``concurrency`` workers (a closed loop each,
  back to back) with the CPU of the processes taken at both ends of the
  window (:class:`benchlib.procs.CpuWindow`); :class:`Arrivals` paces a
  worker at random (Poisson) times instead;
- :func:`percentile` and :func:`latency_figures` make the p50/p90/p99/max
  of a run; :func:`timed_gets` times one request after another;
- :func:`best_round` keeps the best of a server's rounds and
  :func:`say_round` prints one round's figures;
- :func:`run_job_from_stdin` is the ``main`` of a load client: a JSON job
  on stdin, its JSON results on stdout.
"""

from __future__ import annotations

import gc
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import trio

from benchlib.procs import BenchError, CpuWindow, cpu_cores

__all__ = [
    "MAX_ERROR_SAMPLES",
    "Arrivals",
    "Tally",
    "best_round",
    "latency_figures",
    "percentile",
    "run_job_from_stdin",
    "run_window",
    "say_round",
    "timed_gets",
]

# Failures kept verbatim in a result, to say what went wrong without a flood.
MAX_ERROR_SAMPLES = 5


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list (0.0 if it is empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, round(fraction * len(sorted_values) + 0.5))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def latency_figures(latencies: list[float], *, empty_max: float = 0.0) -> dict[str, float]:
    """``p50_ms``, ``p90_ms``, ``p99_ms`` and ``max_ms`` of an ascending list of seconds.

    ``empty_max`` is the ``max_ms`` of an empty list.
    """
    return {
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p90_ms": percentile(latencies, 0.90) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "max_ms": (latencies[-1] * 1000) if latencies else empty_max,
    }


class Tally:
    """One measured window: latencies inside it, every failure, the answers' statuses."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0
        self.error_samples: list[str] = []
        self.statuses: dict[str, int] = {}
        self.measure_from = 0.0
        self.measure_until = 0.0

    def open_window(self, warmup_s: float, seconds: float) -> None:
        """Measure from ``warmup_s`` from now, for ``seconds`` (``time.perf_counter`` times)."""
        self.measure_from = time.perf_counter() + warmup_s
        self.measure_until = self.measure_from + seconds

    def record(self, begun: float, ended: float) -> bool:
        """Keep a request's latency if it lies inside the window; whether it did."""
        if begun >= self.measure_from and ended <= self.measure_until:
            self.latencies.append(ended - begun)
            return True
        return False

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.error_samples) < MAX_ERROR_SAMPLES:
            self.error_samples.append(text)

    def status(self, code: int | str) -> None:
        key = str(code)
        self.statuses[key] = self.statuses.get(key, 0) + 1

    def figures(self) -> dict[str, Any]:
        """The latency figures of the window, and its failures."""
        latencies = sorted(self.latencies)
        return {
            **latency_figures(latencies),
            "errors": self.errors,
            "error_samples": self.error_samples,
        }


async def run_window(
    tally: Tally,
    cpu: CpuWindow,
    concurrency: int,
    worker: Callable[[int], Awaitable[None]],
    *,
    warmup_s: float,
    seconds: float,
) -> None:
    """Open ``tally``'s window and run ``worker(0..concurrency-1)`` until they return.

    Each worker loops until ``tally.measure_until``; ``cpu`` is sampled at
    both ends of the window.
    """
    tally.open_window(warmup_s, seconds)
    async with trio.open_nursery() as nursery:
        cpu.start(nursery, tally.measure_from, tally.measure_until)
        for index in range(concurrency):
            nursery.start_soon(worker, index)


class Arrivals:
    """Random (Poisson) arrival times, ``rate`` a second on average, the same on every run."""

    def __init__(self, seed: str, rate: float) -> None:
        self._random = random.Random(seed)  # noqa: S311 - not a secret
        self._rate = rate
        #: When the next call is due (``time.perf_counter``).
        self.due = time.perf_counter()

    def advance(self) -> float:
        """The next arrival's due time."""
        self.due += self._random.expovariate(self._rate)
        return self.due

    async def wait(self) -> None:
        """Sleep until the due time."""
        await trio.sleep(max(0.0, self.due - time.perf_counter()))


def timed_gets(
    http: httpx2.Client, path: str, count: int, *, warmup: int = 0, status: int = 200
) -> tuple[list[float], int]:
    """GET ``path`` ``warmup + count`` times, one after another, the body read in full.

    Returns the times of the last ``count`` in ms, ascending, and the largest body.

    :raises BenchError: an answer was not ``status``.
    """
    times: list[float] = []
    size = 0
    for n in range(warmup + count):
        started = time.perf_counter()
        answer = http.get(path)
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status_code != status:
            raise BenchError(f"{path} answered {answer.status_code}: {answer.text[:300]}")
        if n >= warmup:
            times.append(elapsed)
            size = max(size, len(answer.content))
    times.sort()
    return times, size


def best_round(results: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The best of a server's rounds by ``key`` (the one least disturbed), with the others.

    Adds ``errors_all_rounds``, ``<key>_all_rounds`` and the most cores the
    client and other processes took in any round.
    """
    best = dict(max(results, key=lambda r: r[key]))
    best["errors_all_rounds"] = sum(r["errors"] for r in results)
    best[f"{key}_all_rounds"] = [r[key] for r in results]
    best["other_cpu_cores_max"] = max(r["other_cpu_cores"] for r in results)
    best["client_cpu_cores_max"] = max(r["client_cpu_cores"] for r in results)
    return best


def say_round(say: Callable[[str], None], result: dict[str, Any], rate: str, unit: str) -> None:
    """Work out the cores each process used in a round (:func:`~benchlib.procs.cpu_cores`),
    and say its rate (``result[rate]``, in ``unit``), latency, errors and noise."""
    cpu_cores(result)
    say(
        f"  {result[rate]:.1f} {unit}, p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms, {result['errors']} failed, server "
        f"{result['server_cpu_cores']:.2f} cores, client {result['client_cpu_cores']:.2f} cores, "
        f"other processes {result['other_cpu_cores']:.2f} cores"
    )


def run_job_from_stdin(
    runner: Callable[[dict[str, Any]], Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]],
) -> None:
    """Read a JSON job on stdin, run ``runner(job)(job)`` under trio, print its results."""
    job = json.load(sys.stdin)
    # The load generator's own collector pauses would count as the server's latency.
    gc.freeze()
    result = trio.run(runner(job), job)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
