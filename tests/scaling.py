"""How the cost of a function grows with its input, for tests of work done on the event loop.

A test of a bound on work says how the CPU time grows, not how long one
run takes: a machine shared with other test runs makes absolute timings
flaky, while the ratio of two sizes holds. :func:`growth` times ``work`` on
an input of size ``n`` and of size ``2n`` (the least CPU time of a few runs
each, each run repeated until it is long enough to measure) and returns the
ratio: about 2 for linear work, 4 for quadratic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["LINEAR", "cpu_seconds", "growth"]

T = TypeVar("T")

#: The ratio a linear function stays under when its input doubles (quadratic work gives 4).
LINEAR = 3.0
# A timing shorter than this is mostly noise: the clock's, the scheduler's, and
# on a machine busy with the rest of the suite, the caches' (5 ms gave ratios
# over 3 for linear work there).
_MEASURABLE_S = 0.02


def cpu_seconds(work: Callable[[], object], *, runs: int = 3, repeat: int = 1) -> float:
    """The least CPU time of ``runs`` runs of ``work`` called ``repeat`` times."""
    best = math.inf
    for _ in range(runs):
        start = time.process_time()
        for _ in range(repeat):
            work()
        best = min(best, time.process_time() - start)
    return best


def growth(make: Callable[[int], T], work: Callable[[T], object], n: int) -> float:
    """CPU time of ``work(make(2 * n))`` over that of ``work(make(n))``."""
    small, large = make(n), make(2 * n)
    once = cpu_seconds(lambda: work(small), runs=1)
    repeat = max(1, math.ceil(_MEASURABLE_S / max(once, 1e-6)))
    return cpu_seconds(lambda: work(large), repeat=repeat) / max(
        cpu_seconds(lambda: work(small), repeat=repeat), 1e-9
    )
