"""``agentws webhook deliveries``: a webhook's delivery log, refusals included.

Every request to a webhook's URL, accepted or refused, newest first: when,
the status and reason it was answered with, its size, where it came from
and the event it became (``--json`` adds its headers, secrets hidden). The
rows are read by :func:`agentws.webhooks.delivery_listing.list_deliveries`.
"""

from __future__ import annotations

import argparse
from typing import Any

from agentws.cli.arguments import bounded_count
from agentws.cli.output import Context, Output, table
from agentws.cli.parsing import Noun
from agentws.domain.delivery_log import parse_status_filter

__all__ = ["add_deliveries_command"]


def _status(text: str) -> Any:
    try:
        return parse_status_filter(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def _deliveries(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.delivery_listing import delivery_json, list_deliveries, retention

    webhook, rows = await list_deliveries(
        ctx.store,
        ctx.settings,
        args.workspace,
        args.webhook,
        limit=args.limit,
        status=args.status,
        reason=args.reason,
    )
    data = [delivery_json(d) for d in rows]
    shown = [
        {
            "received_at": d["received_at"],
            "status": d["status"],
            "reason": d["reason"] + (f" (+{d['omitted']} not logged)" if d["omitted"] else ""),
            "bytes": d["body_bytes"],
            "source": d["source"],
            "event": d["event_id"],
        }
        for d in data
    ]
    head = (
        f"Deliveries to webhook {webhook.name!r} ({webhook.id}), newest first; "
        f"the log keeps {retention(ctx.settings)}."
    )
    columns = ("received_at", "status", "reason", "bytes", "source", "event")
    listing = table(
        shown,
        columns,
        "No deliveries logged" + (" with this filter." if args.status or args.reason else "."),
    )
    return Output(data, f"{head}\n{listing}")


def add_deliveries_command(webhook: Noun) -> None:
    """Add ``deliveries`` to ``agentws webhook``."""
    deliveries = webhook.verb(
        "deliveries",
        "a webhook's delivery log: every request to its URL, refusals included",
        "workspace",
        "webhook",
        description="List the requests made to a webhook's URL, newest first, accepted or "
        "refused: when, the HTTP status and reason it was answered with (queued, duplicate, "
        "invalid_signature, payload_too_large, rate_limited...), the body's size, the "
        "address it came from and the event it became. --json adds each request's headers, "
        "with credentials and signatures hidden. The log keeps the newest "
        "$AGENTWS_DELIVERY_LOG_KEEP (500) requests per webhook, for "
        "$AGENTWS_DELIVERY_LOG_DAYS (30) days.",
        handler=_deliveries,
    )
    deliveries.add_argument(
        "--status",
        type=_status,
        metavar="STATUS",
        help="only 'accepted' (2xx), 'refused' (the rest) or one HTTP status, e.g. 401",
    )
    deliveries.add_argument(
        "--reason", metavar="CODE", help="only this reason, e.g. invalid_signature or rate_limited"
    )
    deliveries.add_argument(
        "--limit",
        type=bounded_count,
        default=50,
        metavar="N",
        help="how many, newest first (default 50)",
    )
