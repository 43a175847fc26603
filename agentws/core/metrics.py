"""Prometheus metrics: what the service counts, and the ``/metrics`` page.

Counters and histograms are module-level objects in ``prometheus_client``'s
default registry (with its process collector: CPU, memory, open files), moved
where the work happens: doors count what they refuse, the permission gate
counts decisions, the worker times runs. What is state rather than a count
(open sessions, the approval queue, webhook events by status) is read when
``/metrics`` is scraped and handed to :func:`render`, so nothing keeps a second copy of
it. Label values are small fixed sets (capabilities, decisions, error codes,
outcomes), never ids, so the number of series stays bounded; the one
exception is the webhook a refusal was for (:data:`WEBHOOK_REFUSALS`):
webhooks are made by admins, and requests to unknown URLs are not counted
per webhook.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

__all__ = [
    "APPROVALS_OLDEST_S",
    "APPROVALS_PENDING",
    "CONTENT_TYPE",
    "INGEST_SECONDS",
    "MCP_SESSIONS",
    "MODEL_TOKENS",
    "REJECTED",
    "RUN_SECONDS",
    "STORE_SECONDS",
    "TOOL_CALLS",
    "WEBHOOK_ALERTS",
    "WEBHOOK_DELIVERIES",
    "WEBHOOK_EVENTS",
    "WEBHOOK_PAUSES",
    "WEBHOOK_REFUSALS",
    "WEBHOOK_REPLAYS",
    "render",
    "timed_store",
]

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Webhook ingest is milliseconds; agent runs are seconds to minutes.
_INGEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
_STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)

MCP_SESSIONS = Gauge(
    "agentws_mcp_sessions", "Open MCP sessions of this instance, by transport.", ["transport"]
)
TOOL_CALLS = Counter(
    "agentws_tool_calls",
    "Tool calls through the permission gate, by the tool's capability and the gate's decision.",
    ["capability", "decision"],
)
APPROVALS_PENDING = Gauge(
    "agentws_approvals_pending", "Queued calls waiting for an admin's decision (all instances)."
)
APPROVALS_OLDEST_S = Gauge(
    "agentws_approvals_oldest_pending_seconds",
    "Age of the oldest queued call waiting for a decision; 0 when none waits.",
)
WEBHOOK_EVENTS = Gauge(
    "agentws_webhook_events", "Webhook events in the store, by status (all instances).", ["status"]
)
WEBHOOK_DELIVERIES = Counter(
    "agentws_webhook_deliveries",
    "Webhook deliveries answered by this instance: accepted, duplicate, or refused.",
    ["outcome"],
)
WEBHOOK_REFUSALS = Counter(
    "agentws_webhook_refusals",
    "Requests to a webhook's URL refused by this instance, by webhook id and reason "
    "(the error code of the answer); requests to unknown URLs are not counted here.",
    ["webhook", "reason"],
)
INGEST_SECONDS = Histogram(
    "agentws_webhook_ingest_seconds",
    "From a webhook delivery's arrival to its answer (202 after the durable commit).",
    buckets=_INGEST_BUCKETS,
)
RUN_SECONDS = Histogram(
    "agentws_webhook_run_seconds",
    "Duration of one agent run of a webhook event, by outcome.",
    ["outcome"],
    buckets=_RUN_BUCKETS,
)
MODEL_TOKENS = Counter(
    "agentws_model_tokens", "Tokens the model counted, by kind (input, output, cache...).", ["kind"]
)
STORE_SECONDS = Histogram(
    "agentws_store_seconds",
    "Duration of store operations (a read, or a whole transaction), by operation.",
    ["operation"],
    buckets=_STORE_BUCKETS,
)
WEBHOOK_ALERTS = Counter(
    "agentws_webhook_alerts",
    "Failure alerts and recoveries of webhooks handled by this instance, by kind (alert,"
    " recovery) and outcome (posted; failed: given up, the channel cannot take it).",
    ["kind", "outcome"],
)
WEBHOOK_PAUSES = Counter(
    "agentws_webhook_pauses",
    "Webhooks paused by their failure alert (counted by the instance that posts the alert).",
)
WEBHOOK_REPLAYS = Counter(
    "agentws_webhook_replays",
    "Events queued by bulk replays, and test events sent, from this process, by kind (bulk, test).",
    ["kind"],
)
REJECTED = Counter(
    "agentws_rejected_requests",
    "Requests refused by a door, by door and reason (the error code of the answer).",
    ["door", "reason"],
)


@contextmanager
def timed_store(operation: str) -> Iterator[None]:
    """Observe how long the block takes as a store ``operation``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        STORE_SECONDS.labels(operation).observe(time.perf_counter() - started)


def render(
    *,
    transports: Iterable[str],
    pending_approvals: int,
    oldest_approval_s: float,
    events: Mapping[str, int],
) -> bytes:
    """The metrics page: the state read at scrape time (the transports of the
    open MCP sessions, the approval queue, webhook events by status), then
    every metric."""
    by_transport = {"sse": 0, "streamable": 0}
    for transport in transports:
        by_transport[transport] = by_transport.get(transport, 0) + 1
    for transport, count in by_transport.items():
        MCP_SESSIONS.labels(transport).set(count)
    APPROVALS_PENDING.set(pending_approvals)
    APPROVALS_OLDEST_S.set(oldest_approval_s)
    for status, count in events.items():
        WEBHOOK_EVENTS.labels(status).set(count)
    return generate_latest(REGISTRY)
