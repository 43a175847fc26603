"""The overview's data: per-minute rollups kept in the store, and what the page reads.

- :mod:`.ranges`: the ranges a page asks for and their steps;
- :mod:`.overview`: :func:`read_overview`, the figures of one workspace;
- :mod:`.minutes`: the service's task that rolls closed minutes up, samples
  the gauges once a minute and forgets buckets past their retention.
"""

from __future__ import annotations

from agentws.rollups.overview import read_overview
from agentws.rollups.ranges import RANGES

__all__ = ["RANGES", "read_overview"]
