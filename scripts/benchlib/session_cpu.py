"""CPU timelines around a revocation: sampled every 20 ms, read in 100 ms windows.

Run as a process (:mod:`benchlib.session_observe` starts it)::

    python session_cpu.py [--every 0.02] [--max-seconds 120] NAME=PID [NAME=PID ...]

It prints ``{"ready": true}``, then samples, every ``--every`` seconds,
each process's CPU clock (``clock_getcpuclockid``: user + system time of
all its threads, in nanoseconds; /proc/<pid>/stat counts 10 ms ticks, too
coarse for 100 ms windows), summed by NAME (so ``client=1 client=2`` is one
line), its own CPU time (added to ``observers``), and the machine's busy
time (/proc/stat), until the wall-clock time it reads on stdin (or
``--max-seconds``). Then it prints ``{"names": [...], "rows": [[time.time(),
seconds of each name, machine busy seconds], ...]}``.

:func:`timeline` reads that around an origin (a revocation's
``revoked_at``): when the server was last busy, what each process spent.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["stop_time", "timeline"]

# A 100 ms window counts as busy when the server used this much more of a
# core than its baseline (the second before the origin: keep-alives, the probe).
BUSY_SHARE = 0.10
WINDOW_S = 0.1
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Samples kept in the results from this long before the origin.
_KEEP_BEFORE_S = 1.5


def _process_clock(pid: int) -> int:
    clock = ctypes.c_int()
    error = ctypes.CDLL(None, use_errno=True).clock_getcpuclockid(pid, ctypes.byref(clock))
    if error:
        raise OSError(error, os.strerror(error), f"clock_getcpuclockid({pid})")
    return clock.value


def _machine_busy_s() -> float:
    with open("/proc/stat", "rb") as stat:
        fields = stat.readline().split()[1:9]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields)
    return (user + nice + system + irq + softirq + steal) / _CLOCK_TICKS


def stop_time(current: float) -> float:
    """The wall-clock time to stop at: ``current`` until the parent writes one on stdin
    (a blank line or EOF: now). For the observer processes, this one and the probe."""
    if select.select([sys.stdin], [], [], 0)[0]:
        line = sys.stdin.readline()
        return float(line) if line.strip() else time.time()
    return current


def _sample(names: list[str], pids: list[tuple[str, int]], every_s: float, limit_s: float) -> None:
    clocks = [(names.index(name), _process_clock(pid)) for name, pid in pids]
    observers = names.index("observers")
    rows: list[list[float | None]] = []
    stop = time.time() + limit_s
    print(json.dumps({"ready": True}), flush=True)
    due = time.monotonic()
    while time.time() < stop:
        now = time.time()
        values: list[float | None] = [0.0] * len(names)
        for index, clock in clocks:
            try:
                values[index] = (values[index] or 0.0) + time.clock_gettime(clock)
            except OSError:  # the process has exited
                values[index] = None
        values[observers] = (values[observers] or 0.0) + time.process_time()
        rows.append([now, *values, _machine_busy_s()])
        stop = stop_time(stop)
        due = max(due + every_s, time.monotonic())
        time.sleep(max(0.0, due - time.monotonic()))
    print(json.dumps({"names": names, "rows": rows}), flush=True)


class _Line:
    """One name's cumulative CPU seconds, linearly interpolated between samples."""

    def __init__(self, times: list[float], values: list[float]) -> None:
        self.times, self.values = times, values

    def at(self, t: float) -> float:
        i = bisect.bisect_left(self.times, t)
        if i <= 0:
            return self.values[0]
        if i >= len(self.times):
            return self.values[-1]
        t0, t1 = self.times[i - 1], self.times[i]
        v0, v1 = self.values[i - 1], self.values[i]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1

    def spent(self, start: float, end: float) -> float:
        return self.at(end) - self.at(start)


def _lines(document: dict[str, Any], origin: float) -> dict[str, _Line]:
    names: list[str] = [*document["names"], "machine"]
    rows = [r for r in document["rows"] if all(v is not None for v in r)]
    times = [r[0] - origin for r in rows]
    return {name: _Line(times, [r[i + 1] for r in rows]) for i, name in enumerate(names)}


def timeline(
    document: dict[str, Any], origin: float, last_end: float | None, after_s: float = 10.0
) -> dict[str, Any]:
    """The figures of a sampler's ``document`` around ``origin`` (``time.time()``).

    Args:
        last_end: when the last stream ended (``time.time()``), if it did.
        after_s: how long after ``origin`` the window runs.

    Returns:
        ``baseline_share`` (the server's share of a core in the median 100 ms
        window of the second before ``origin``);
        ``idle_at_ms`` (the end of the last 100 ms window, from ``origin`` to
        ``after_s``, in which the server used more than ``BUSY_SHARE`` of a
        core above that baseline: None when none did) and ``busy_spans``
        (runs of such windows: start ms, end ms, server CPU seconds);
        ``<name>_cpu_s`` over the window and ``<name>_cpu_to_last_end_s``
        from ``origin`` to ``last_end``, for the server, the client, the
        observers and ``other`` (the machine's busy time less all of them);
        ``server_cpu_above_baseline_s``, the server's over the window less
        its baseline's;
        ``samples``, the timeline itself: ms from ``origin``, then each
        name's CPU ms since the first sample kept.
    """
    lines = _lines(document, origin)
    server = lines["server"]
    first, last = server.times[0], server.times[-1]
    # The median 100 ms window of the second before: one keep-alive burst does not move it.
    shares = sorted(
        server.spent(-(k + 1) * WINDOW_S, -k * WINDOW_S) / WINDOW_S
        for k in range(10)
        if -(k + 1) * WINDOW_S >= first
    )
    baseline = shares[len(shares) // 2] if shares else 0.0
    threshold = baseline + BUSY_SHARE
    spans: list[list[float]] = []
    k = 0
    while (k + 1) * WINDOW_S <= min(after_s, last) + 1e-9:
        start, end = k * WINDOW_S, (k + 1) * WINDOW_S
        used = server.spent(start, end)
        if used / WINDOW_S > threshold:
            if spans and abs(spans[-1][1] - start * 1000) < 1e-6:
                spans[-1][1] = end * 1000
                spans[-1][2] += used
            else:
                spans.append([start * 1000, end * 1000, used])
        k += 1
    until = min(after_s, last)
    end_s = (last_end - origin) if last_end is not None else None
    figures: dict[str, Any] = {
        "window_s": until,
        "baseline_share": baseline,
        "busy_share_above_baseline": BUSY_SHARE,
        "idle_at_ms": spans[-1][1] if spans else None,
        "busy_spans": [[round(a), round(b), round(c, 4)] for a, b, c in spans],
    }
    ours = [name for name in lines if name != "machine"]
    for name in ours:
        figures[f"{name}_cpu_s"] = lines[name].spent(0.0, until)
        if end_s is not None:
            figures[f"{name}_cpu_to_last_end_s"] = lines[name].spent(0.0, end_s)
    machine = lines["machine"].spent(0.0, until)
    figures["other_cpu_s"] = max(0.0, machine - sum(figures[f"{n}_cpu_s"] for n in ours))
    figures["server_cpu_above_baseline_s"] = figures["server_cpu_s"] - baseline * until
    keep = [i for i, t in enumerate(server.times) if t >= -_KEEP_BEFORE_S]
    if keep:
        zero = {name: line.values[keep[0]] for name, line in lines.items()}
        figures["sample_columns"] = ["ms", *(f"{n}_cpu_ms" for n in lines)]
        figures["samples"] = [
            [round(server.times[i] * 1000, 1)]
            + [round((line.values[i] - zero[name]) * 1000, 1) for name, line in lines.items()]
            for i in keep
        ]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description="Sample processes' CPU clocks until told.")
    parser.add_argument("--every", type=float, default=0.02, help="seconds between samples")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="stop after this long")
    parser.add_argument("pids", nargs="+", metavar="NAME=PID")
    args = parser.parse_args()
    pids = [(name, int(pid)) for name, _, pid in (p.partition("=") for p in args.pids)]
    names = list(dict.fromkeys([name for name, _ in pids] + ["observers"]))
    _sample(names, pids, args.every, args.max_seconds)


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
