"""The ``agentws event`` commands: the webhook event log, an event's timeline, replays.

``event list|show|replay`` (``events`` is the same command). The work is
done by :mod:`agentws.webhooks.event_search` (lists: filters, search,
pages) and :mod:`agentws.webhooks.events`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agentws.cli.arguments import page_size
from agentws.cli.output import Context, Output, iso, table
from agentws.cli.parsing import Verbs, time_window
from agentws.domain.event_lists import DEFAULT_PAGE, MAX_PAGE
from agentws.domain.models import EventStatus, Webhook

__all__ = ["add_event_commands", "event_row"]


def event_row(e: Any, w: Webhook) -> dict[str, Any]:
    """An event as JSON, named by its webhook."""
    return {
        "id": e.id,
        "webhook": w.name,
        "status": e.status.value,
        "attempts": e.attempts,
        "error": e.error,
        "message_id": e.message_id,
        "dedup_key": e.dedup_key,
        "replay_of": e.replay_of,
        "received_at": iso(e.received_at),
        "finished_at": iso(e.finished_at),
        # The URL / secret generation it came through (null: not delivered to the URL).
        "url_generation": e.url_generation,
        "secret_generation": e.secret_generation,
    }


async def _event_list(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.event_search import find_events

    webhook = await find_webhook(ctx.store, args.workspace, args.webhook) if args.webhook else None
    page = await find_events(
        ctx.store,
        args.workspace,
        webhook=webhook,
        status=EventStatus(args.status) if args.status else None,
        since=args.since.isoformat() if args.since else None,
        until=args.until.isoformat() if args.until else None,
        search=args.search,
        limit=args.limit,
        cursor=args.cursor,
    )
    names: dict[str, Webhook] = {}
    rows = []
    for e in page.items:
        if e.webhook_id not in names:
            names[e.webhook_id] = await ctx.store.get(Webhook, e.webhook_id)
        rows.append(event_row(e, names[e.webhook_id]))
    data = {
        "items": rows,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "unindexed": page.unindexed,
    }
    columns = ("id", "webhook", "status", "attempts", "received_at", "error")
    lines = [table(rows, columns, "No events.")]
    if page.next_cursor:
        lines.append(f"Older events: the same command with --cursor {page.next_cursor}")
    if page.previous_cursor:
        lines.append(f"Newer events: the same command with --cursor {page.previous_cursor}")
    if page.unindexed:
        lines.append(
            f"{page.unindexed} event(s) not in the search index yet (the service adds them "
            "within seconds): search again for them."
        )
    return Output(data, "\n".join(lines))


async def _event_show(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.events import event_timeline

    t = await event_timeline(ctx.store, args.event)
    attempts = [
        {
            "number": a.number,
            "instance_id": a.instance_id,
            "outcome": a.outcome,
            "error": a.error,
            "started_at": iso(a.started_at),
            "finished_at": iso(a.finished_at),
            "usage": a.usage,
            "tool_calls": a.tool_calls.get("calls", []),
            "transcript": a.transcript,
        }
        for a in t.attempts
    ]
    message = None
    if t.message is not None:
        message = {
            "id": t.message.id,
            "channel": t.message.channel,
            "text": t.message.text,
            "created_at": iso(t.message.created_at),
        }
    data = {
        "event": event_row(t.event, t.webhook),
        "request": {
            "headers": t.event.headers,
            "bytes": len(t.event.body),
            "body": t.request_body(),
        },
        "attempts": attempts,
        # Attempts end their record when they end: one whose process died has none.
        "unfinished_attempts": max(0, t.event.attempts - len(attempts)),
        "message": message,
    }
    return Output(data, _timeline_text(data))


def _timeline_text(data: dict[str, Any]) -> str:
    e = data["event"]
    lines = [
        f"Event {e['id']} of webhook {e['webhook']!r}: {e['status']} "
        f"after {e['attempts']} attempt(s)"
        + (f" (replay of {e['replay_of']})" if e["replay_of"] else ""),
        f"{e['received_at']}  received ({data['request']['bytes']} bytes)"
        + (f", delivery id {e['dedup_key']}" if e["dedup_key"] else ""),
    ]
    for name, value in data["request"]["headers"].items():
        lines.append(f"    {name}: {value}")
    body = json.dumps(data["request"]["body"], indent=2, ensure_ascii=False)
    lines += ["    " + line for line in body.splitlines()[:40]]
    if len(body.splitlines()) > 40:
        lines.append("    … (see --json for the whole body)")
    for a in data["attempts"]:
        lines.append(
            f"{a['started_at']}  attempt {a['number']} on {a['instance_id']}: {a['outcome']}"
            + (f" — {a['error']}" if a["error"] else "")
        )
        model = a["transcript"].get("model")
        if model:
            lines.append(f"    model: {model}")
        for call in a["tool_calls"]:
            extra = f" (approval {call['approval_id']})" if call.get("approval_id") else ""
            lines.append(f"    tool {call['name']}: {call.get('outcome')}{extra}")
    lost = data["unfinished_attempts"]
    if lost:
        lines.append(
            f"    ({lost} attempt(s) left no record: the process running them stopped "
            "or it is running now)"
        )
    m = data["message"]
    if m is not None:
        lines.append(f"{m['created_at']}  posted to {m['channel']} ({m['id']}):")
        lines += ["    " + line for line in m["text"].splitlines()]
    elif e["error"]:
        lines.append(f"error: {e['error']}")
    return "\n".join(lines)


async def _event_replay(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.events import replay_event

    replay = await replay_event(
        ctx.store, args.event, current_prompt=args.current_prompt, actor=ctx.actor
    )
    prompt = "the webhook's current prompt" if args.current_prompt else "the original prompt"
    data = {"event_id": replay.id, "replay_of": args.event, "status": replay.status.value}
    return Output(
        data,
        f"Queued {replay.id}, a replay of {args.event} with {prompt}. "
        f"Follow it with `agentws event show {replay.id}`.",
    )


def add_event_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``event`` to the ``agentws`` command line."""
    event = commands.add_parser(
        "event",
        aliases=["events"],
        help="the webhook event log: list (filter, search), show a timeline, replay",
    ).add_subparsers(dest="action", metavar="ACTION", required=True)
    e_list = event.add_parser(
        "list",
        parents=[common],
        help="a workspace's events, newest first: filter, search, page",
        description=(
            "List a workspace's webhook events, newest first, a page at a time. Filters "
            "combine: --webhook, --status, --since/--until (when received) and --search "
            "(words of the event)."
        ),
        epilog=(
            "Search: every word must appear in the event (its header values, and the string "
            'and number values of its body; keys are not searched): deploy failed; "a phrase" '
            "for words next to each other; depl* for words starting with depl. Case and "
            "accents are ignored, punctuation separates words (ann@example.com is the phrase "
            "ann example com). Times: ISO 8601 (2026-05-01, 2026-05-01T12:00:00Z; UTC unless "
            "it says otherwise) or a span before now (30m, 24h, 7d). Paging: each page ends "
            "with the --cursor of the next (older) and previous (newer) pages; pass the same "
            "filters with it. With --json: {items, next_cursor, previous_cursor, unindexed}."
        ),
    )
    e_list.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    e_list.add_argument("--webhook", metavar="WEBHOOK", help="only this webhook's (id or name)")
    e_list.add_argument(
        "--status", choices=[s.value for s in EventStatus], help="only events in this state"
    )
    time_window(
        e_list,
        "only events received at or after TIME (or 24h, 7d ago)",
        "only events received before TIME",
    )
    e_list.add_argument(
        "--search",
        "-q",
        metavar="TEXT",
        help='only events with these words (word, "a phrase", prefix*; see below)',
    )
    e_list.add_argument(
        "--limit",
        type=page_size,
        default=DEFAULT_PAGE,
        metavar="N",
        help=f"events per page, 1 to {MAX_PAGE} (default {DEFAULT_PAGE})",
    )
    e_list.add_argument("--cursor", metavar="CURSOR", help="the page a previous listing pointed to")
    e_list.set_defaults(handler=_event_list)
    e_show = event.add_parser(
        "show",
        parents=[common],
        help="an event's timeline: request, attempts, transcript, tool calls, message",
    )
    e_show.add_argument("event", metavar="EVENT", help="event id (evt_…)")
    e_show.set_defaults(handler=_event_show)
    e_replay = event.add_parser(
        "replay", parents=[common], help="queue an event again (a new event, same body)"
    )
    e_replay.add_argument("event", metavar="EVENT", help="event id (evt_…)")
    e_replay.add_argument(
        "--current-prompt",
        action="store_true",
        help="run with the webhook's prompt as it is now (default: the prompt it ran with)",
    )
    e_replay.set_defaults(handler=_event_replay)
