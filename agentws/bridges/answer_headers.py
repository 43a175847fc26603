"""The headers Hypercorn adds to every answer, made at most once a second.

Hypercorn's ``Config.response_headers`` formats the ``Date`` anew for each
answer (``wsgiref.handlers.format_date_time``), 0.6% of a proxied call's
CPU in ``scripts/bench gateway``'s profile. Its text changes once a second,
and the other headers (``Server``, ``Alt-Svc``) with the configuration
only, so :func:`answer_headers` keeps what it made for the second it is.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from hypercorn.config import Config

__all__ = ["Headers", "answer_headers"]

Headers = tuple[tuple[bytes, bytes], ...]


def answer_headers(config: Config, now: Callable[[], float] = time.time) -> Headers:
    """``config``'s headers for an HTTP/1.1 answer, as made in the current second."""
    return _made(config, int(now()))


# A second's headers for each configuration a process serves (one, but for tests).
@functools.lru_cache(maxsize=8)
def _made(config: Config, second: int) -> Headers:
    return tuple(config.response_headers("h11"))
