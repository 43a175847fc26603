"""Reading a webhook's delivery log, for the dashboard, the admin API and the CLI.

The log is the webhook's events that came through its URL and the rows the
door wrote for its other answers (:mod:`agentws.webhooks.delivery_log`);
this is the one function its three readers call, so they show the same
entries.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from agentws.domain.delivery_log import Delivery, StatusFilter
from agentws.domain.models import Webhook
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.store.sql_deliveries import DeliveryLogStore
from agentws.store.sql_records import RecordStore
from agentws.webhooks.admin import find_webhook

__all__ = ["MAX_LISTED", "delivery_json", "list_deliveries", "retention"]

#: The most rows one listing asks for, whatever the log keeps.
MAX_LISTED = 10_000


class _Store(RecordStore, DeliveryLogStore, Protocol):
    """The areas of the store this module uses."""


async def list_deliveries(
    store: _Store,
    settings: Settings,
    workspace_slug: str,
    ref: str,
    *,
    limit: int,
    status: StatusFilter | None = None,
    reason: str | None = None,
) -> tuple[Webhook, list[Delivery]]:
    """A webhook (by id or name) and its delivery log, newest first.

    Args:
        limit: entries at most; never more than the log keeps
            (``AGENTWS_DELIVERY_LOG_KEEP``), nor older than it keeps them
            (``AGENTWS_DELIVERY_LOG_DAYS``): rows past the bound not
            trimmed yet, and accepted deliveries' events (which the event log
            keeps) past it, are not shown.
        status: ``accepted`` (2xx), ``refused`` (the rest) or one HTTP status.
        reason: one reason only (``invalid_signature``, ``queued``...).

    Error handling:
        :class:`~agentws.core.errors.NotFoundError` naming the workspace or webhook.
    """
    webhook = await find_webhook(store, workspace_slug, ref)
    most = min(limit, settings.delivery_log_keep, MAX_LISTED)
    if most < 1:
        return webhook, []
    days = settings.delivery_log_days
    since = utcnow() - timedelta(days=days) if days > 0 else None
    rows = await store.webhook_deliveries(
        webhook.id, limit=most, status=status, reason=reason, since=since
    )
    return webhook, rows


def delivery_json(delivery: Delivery) -> dict[str, Any]:
    """An entry of the delivery log as the API and ``--json`` show it (``id``: a row's;
    None for an accepted delivery, which is its event)."""
    return {
        "id": delivery.id,
        "received_at": delivery.received_at.isoformat(),
        "status": delivery.status,
        "reason": delivery.reason,
        "accepted": delivery.accepted,
        "body_bytes": delivery.body_bytes,
        "headers": delivery.headers,
        "source": delivery.source,
        "event_id": delivery.event_id,
        "omitted": delivery.omitted,
    }


def retention(settings: Settings) -> str:
    """What the log keeps, in words: ``the newest 500 per webhook, for 30 days``."""
    keep = settings.delivery_log_keep
    if keep < 1:
        return "nothing (AGENTWS_DELIVERY_LOG_KEEP=0: the delivery log is off)"
    days = settings.delivery_log_days
    age = f", for {days:g} day{'s' if days != 1 else ''}" if days > 0 else ""
    return f"the newest {keep} per webhook{age}"
