"""How the cost of a function grows with its input, for tests of work done on the event loop.

A test of a bound on work says how the CPU time grows, not how long one
run takes: a machine shared with other test runs makes absolute timings
flaky, while the ratio of two sizes holds. :func:`growth` times ``work`` on
an input of size ``n`` and of size ``4n`` (the least CPU time of a few runs
each, taken in turns, each run repeated until it is long enough to measure)
and returns the ratio: about 4 for linear work, 16 for quadratic. A machine
busy with the rest of the suite makes a run cost up to twice what it should
(1.72 times was seen with sizes ``n`` and ``2n``): :data:`LINEAR`, halfway
between 4 and 16, tells the two apart all the same.

Where a test must bound one run's time (a step of the event loop, a search),
the bound was set on a reference machine; :func:`slowness` says how many
times slower this machine runs the same Python, measured in the same run,
and the bound is scaled by it.
"""

from __future__ import annotations

import functools
import gc
import json
import math
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["BOUNDED", "FACTOR", "LINEAR", "cpu_seconds", "growth", "slowness"]

T = TypeVar("T")

#: How many times larger the second input of :func:`growth` is.
FACTOR = 4
#: The ratio linear work stays under when its input grows :data:`FACTOR` times
#: (quadratic work gives 16): the geometric middle, so noise either way counts alike.
LINEAR = 8.0
#: The ratio work bounded whatever its input (a view of it, a prefix) stays
#: under (linear work gives 4): the geometric middle of 1 and 4, for the same
#: reason (1.55 was seen for bounded work on a machine busy with the suite).
BOUNDED = 2.0
# Runs of each size; the least of them counts.
_RUNS = 3
# A timing shorter than this is mostly noise: the clock's, the scheduler's, and
# on a machine busy with the rest of the suite, the caches' (5 ms gave ratios
# over 3 for linear work there).
_MEASURABLE_S = 0.02
# What parsing and writing back _REFERENCE_JSON took on the machine the tests'
# time bounds were set on (an AMD EPYC core): 12.6-14.0 ms of CPU.
_REFERENCE_S = 0.013
_REFERENCE_JSON = json.dumps({"rows": [{"a": n, "b": "x"} for n in range(20_000)]})


def cpu_seconds(work: Callable[[], object], *, runs: int = 3, repeat: int = 1) -> float:
    """The least CPU time of ``runs`` runs of ``work`` called ``repeat`` times.

    With the cycle collector off, as :mod:`timeit` times: when it runs, and
    what a pass costs, depend on all else the process holds (a test process
    holds the whole suite), not on ``work``.
    """
    best = math.inf
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in range(runs):
            start = time.process_time()
            for _ in range(repeat):
                work()
            best = min(best, time.process_time() - start)
    finally:
        if collecting:
            gc.enable()
    return best


def growth(make: Callable[[int], T], work: Callable[[T], object], n: int) -> float:
    """CPU time of ``work(make(FACTOR * n))`` over that of ``work(make(n))``."""
    small, large = make(n), make(FACTOR * n)
    once = cpu_seconds(lambda: work(small), runs=1)
    repeat = max(1, math.ceil(_MEASURABLE_S / max(once, 1e-6)))
    least_small = least_large = math.inf
    for _ in range(_RUNS):
        # In turns: a busy spell of the machine is less likely to miss one size only.
        least_small = min(least_small, cpu_seconds(lambda: work(small), runs=1, repeat=repeat))
        least_large = min(least_large, cpu_seconds(lambda: work(large), runs=1, repeat=repeat))
    return least_large / max(least_small, 1e-9)


@functools.cache
def slowness() -> float:
    """How many times slower than the reference machine this one runs Python; at least 1.

    Measured once per process on JSON of many small objects, the shape the
    bounded tests' costliest steps handle (an Intel Xeon took 1.8-1.9 times
    the reference's CPU for them: 106-111 ms parsing a 2 MiB webhook, 128
    ms passing on a 1 MiB result). Never below 1: a faster machine keeps
    the bounds as they were set.
    """
    took = cpu_seconds(lambda: json.dumps(json.loads(_REFERENCE_JSON)), runs=9)
    return max(1.0, took / _REFERENCE_S)
