"""Back-off: how long to wait before trying again after failures in a row.

One rule for everything that retries (a webhook event's run, the change
listener, a connector's link and its listen stream): the wait doubles with
each failure from a first wait up to a cap. With ``jitter`` ("full
jitter"), the wait is drawn uniformly below that ceiling, so many clients
failing together do not come back together.
"""

from __future__ import annotations

import random

import attrs

__all__ = ["Backoff"]

# 2**62 times any first wait is past every cap; the exponent stops there so
# that a retry loop that has failed for days does not overflow a float.
_MAX_DOUBLINGS = 62


@attrs.frozen
class Backoff:
    """Capped exponential back-off, with or without full jitter."""

    #: The wait after the first failure (its ceiling, with jitter).
    first_s: float
    #: No wait is longer than this.
    cap_s: float
    #: Draw the wait uniformly in ``[0, ceiling)`` rather than waiting the ceiling.
    jitter: bool = False

    def ceiling_s(self, failures: int) -> float:
        """``first_s * 2 ** (failures - 1)``, at most ``cap_s`` (``failures`` counts from 1)."""
        doublings = min(max(0, failures - 1), _MAX_DOUBLINGS)
        return min(self.cap_s, self.first_s * 2.0**doublings)

    def delay_s(self, failures: int) -> float:
        """How long to wait after ``failures`` failures in a row (counted from 1)."""
        ceiling = self.ceiling_s(failures)
        if not self.jitter:
            return ceiling
        return random.uniform(0, ceiling)  # noqa: S311 - spreading retries, not a secret
