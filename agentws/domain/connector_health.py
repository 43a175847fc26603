"""A connector's health, from what is stored: its tool cache and the audit log.

- **Last refresh**: the newest ``fetched_at`` of its cached tools (every
  refresh, by a link, the CLI or the dashboard, stamps them all).
- **Calls** over the window (the last hour): the ``tool.call`` audit
  entries of its tools that ran; the **error rate** is the share that
  ended in a tool error, the **latency** the median ``duration_ms`` (which
  the gate records for each call that ran).
- **Last error**: the newest of a failed call in the window and a failed
  refresh from the dashboard (``connector.refresh`` with an ``error``).

A tool call's entry names the tool as callers see it, ``<connector>_<action>``;
it is given to the connector with the longest name it starts with.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from statistics import median

import attrs

from agentws.domain.tool_records import Connector

__all__ = ["HEALTH_ACTIONS", "Activity", "ConnectorHealth", "connector_health"]

#: The audit actions health is made of.
HEALTH_ACTIONS = ("tool.call", "connector.refresh")
# Outcomes of a call that ran (the others were queued, denied, not confirmed).
_RAN = frozenset({"ran", "confirmed_and_ran"})


@attrs.frozen
class Activity:
    """What health needs of one audit entry of :data:`HEALTH_ACTIONS` (not the whole entry)."""

    action: str
    target: str
    created_at: datetime
    #: A call's outcome (``ran``, ``queued``…); None for a refresh.
    outcome: str | None = None
    duration_ms: float | None = None
    #: A call's: whether the tool answered with an error; a refresh's: why it failed.
    error: bool | str | None = None


@attrs.frozen
class ConnectorHealth:
    """One connector's health over the window."""

    tools: int = 0
    last_refresh: datetime | None = None
    calls: int = 0
    errors: int = 0
    #: Median duration of the calls that ran and say how long they took.
    p50_ms: int | None = None
    last_error: str | None = None
    last_error_at: datetime | None = None

    @property
    def error_rate(self) -> float | None:
        """The share of calls that failed; None with no calls."""
        return self.errors / self.calls if self.calls else None


def connector_health(
    connectors: Iterable[Connector],
    entries: Iterable[Activity],
    tool_summaries: dict[str, tuple[int, datetime | None]],
) -> dict[str, ConnectorHealth]:
    """Connector id -> its health, from ``entries`` (of :data:`HEALTH_ACTIONS`, any order)."""
    known = sorted(connectors, key=lambda c: len(c.name), reverse=True)
    durations: dict[str, list[int]] = {c.id: [] for c in known}
    counts: dict[str, list[int]] = {c.id: [0, 0] for c in known}
    errors: dict[str, tuple[datetime, str]] = {}
    for entry in entries:
        if entry.action == "connector.refresh":
            owner = next((c for c in known if entry.target.endswith(f"/{c.name}")), None)
            message = entry.error
            if owner is not None and isinstance(message, str):
                _newest(errors, owner.id, entry.created_at, f"refresh: {message}")
            continue
        owner = next((c for c in known if entry.target.startswith(f"{c.name}_")), None)
        if owner is None or entry.outcome not in _RAN:
            continue
        counts[owner.id][0] += 1
        if entry.duration_ms is not None:
            durations[owner.id].append(int(entry.duration_ms))
        if entry.error is True:
            counts[owner.id][1] += 1
            _newest(errors, owner.id, entry.created_at, f"{entry.target} answered with an error")
    health: dict[str, ConnectorHealth] = {}
    for connector in known:
        tools, fetched = tool_summaries.get(connector.id, (0, None))
        calls, failed = counts[connector.id]
        taken = durations[connector.id]
        error = errors.get(connector.id)
        health[connector.id] = ConnectorHealth(
            tools=tools,
            last_refresh=fetched,
            calls=calls,
            errors=failed,
            p50_ms=round(median(taken)) if taken else None,
            last_error=error[1] if error else None,
            last_error_at=error[0] if error else None,
        )
    return health


def _newest(errors: dict[str, tuple[datetime, str]], key: str, at: datetime, message: str) -> None:
    if key not in errors or errors[key][0] < at:
        errors[key] = (at, message)
