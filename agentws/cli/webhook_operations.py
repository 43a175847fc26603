"""The ``agentws webhook`` commands that operate a webhook: alerts, bulk replay, test events.

- ``--alert-after``, ``--alerts-channel`` and ``--pause-on-failure`` of
  ``webhook create|update`` (added here to those parsers), and the failure
  streak ``webhook show`` prints;
- ``webhook replay``: replay a webhook's failed events, each once, at a
  rate (:mod:`agentws.webhooks.replays`);
- ``webhook test``: a sample delivery signed as its sender signs it,
  through the door's checks (:mod:`agentws.doors.webhooks.sample_sends`), and
  then, while a service runs on the database, the run's outcome.
"""

from __future__ import annotations

import argparse
from typing import Any

import trio

from agentws.cli.arguments import per_minute_rate, seconds, whole
from agentws.cli.output import Context, Output, iso, table
from agentws.cli.parsing import Noun, time_window
from agentws.domain.models import Event, FailureStreak
from agentws.domain.replays import MAX_REPLAY_RATE, MAX_REPLAYS
from agentws.domain.sample_deliveries import SampleKind
from agentws.doors.views import sample_answer_json
from agentws.webhooks.admin import MAX_ALERT_AFTER

__all__ = [
    "add_alert_options",
    "add_operation_commands",
    "alert_changes",
    "alert_options",
    "streak_text",
]

# `webhook test` looks at its event this often while it waits.
_POLL_S = 0.25
# Originals a replay lists in its text (all of them in --json).
_LISTED = 20
# `webhook test --wait`: at most an hour.
_MAX_WAIT_S = 3600.0


# --- alert options of create and update ------------------------------------------------------


def add_alert_options(parser: argparse.ArgumentParser, *, changing: bool) -> None:
    """``--alert-after``, ``--alerts-channel``, ``--pause-on-failure`` (``changing``: of update)."""
    parser.add_argument(
        "--alert-after",
        type=whole(0, MAX_ALERT_AFTER),
        default=None if changing else 3,
        metavar="N",
        help="post one alert after N failed events in a row, and a recovery message when one "
        "succeeds again (default 3; 0: no alerts)",
    )
    parser.add_argument(
        "--alerts-channel",
        metavar="CHANNEL",
        help="where alerts go (default: the webhook's own channel"
        + ('; "" sends them there again)' if changing else ")"),
    )
    parser.add_argument(
        "--pause-on-failure",
        action=argparse.BooleanOptionalAction if changing else "store_true",
        default=None if changing else False,
        help="the alert also pauses the webhook: deliveries get 403 until it is activated again",
    )


def alert_options(args: argparse.Namespace) -> dict[str, Any]:
    """The alert settings of ``webhook create``, for WebhookOptions."""
    return {
        "alert_after": args.alert_after,
        "alerts_channel": args.alerts_channel,
        "pause_on_failure": args.pause_on_failure,
    }


def alert_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The alert settings ``webhook update`` changes, for WebhookChanges."""
    return alert_options(args)


def streak_text(streak: FailureStreak | None, alert_after: int) -> str:
    """The webhook's latest failure streak, in words, for ``webhook show``."""
    alerts = f"after {alert_after} failed events in a row" if alert_after else "off"
    if streak is None:
        return f"Failure alerts: {alerts}. No failed events in a row so far."
    since = iso(streak.started_at)
    if streak.ended_at is None:
        head = f"Failing: {streak.failures} events in a row since {since}"
    else:
        head = (
            f"Last failure streak: {streak.failures} events in a row from {since}, "
            f"ended by event {streak.recovered_event_id} at {iso(streak.ended_at)}"
        )
    lines = [f"Failure alerts: {alerts}.", head + "."]
    if streak.last_error:
        lines.append(f"  last error: {streak.last_error} (event {streak.last_event_id})")
    if streak.alerted_at is not None:
        posted = (
            f"posted at {iso(streak.alert_posted_at)}"
            if streak.alert_message_id
            else ("not posted" if streak.alert_posted_at else "waiting to be posted")
        )
        lines.append(
            f"  alert: {posted}" + (" (it paused the webhook)" if streak.paused_at else "")
        )
    if streak.recovery_posted_at is not None:
        lines.append(f"  recovery: posted at {iso(streak.recovery_posted_at)}")
    if streak.notice_error:
        lines.append(f"  last problem posting: {streak.notice_error}")
    return "\n".join(lines)


# --- webhook replay ---------------------------------------------------------------------------


async def _webhook_replay(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.replays import replay_asked, replay_json

    webhook = await find_webhook(ctx.store, args.workspace, args.webhook)
    # The options are named as the service's arguments (``--rate``: rate_per_min).
    done = await replay_asked(ctx.store, webhook, args, actor=ctx.actor)
    data = replay_json(done)
    what = done.selection.describe()
    if not done.originals:
        text = (
            f"Nothing to replay: webhook {webhook.name!r} has no {what} that were not "
            "replayed already."
        )
        return Output(data, text)
    pace = f"at {done.rate_per_min}/min (the last {_duration(done.seconds)} after the first)"
    if done.dry_run:
        head = f"Dry run: {len(done.originals)} {what} of webhook {webhook.name!r} would be "
        head += f"replayed, {pace}. Nothing was queued."
    else:
        head = f"Queued {len(done.queued)} replays of {what} of webhook {webhook.name!r}, {pace}"
        head += f" (bulk replay {done.id})."
        skipped = len(done.originals) - len(done.queued)
        if skipped:
            head += f" {skipped} were replayed by another action meanwhile and were skipped."
    if done.left:
        head += f" {done.left} more match: run it again for them."
    rows = [
        {
            "event": o.id,
            "received_at": iso(o.received_at),
            "replay": done.queued.get(o.id, "-" if not done.dry_run else ""),
            "error": o.error,
        }
        for o in done.originals[:_LISTED]
    ]
    columns = ("event", "received_at", "error") if done.dry_run else ("event", "replay", "error")
    text = head + "\n\n" + table(rows, columns, "")
    if len(done.originals) > _LISTED:
        text += f"\n… and {len(done.originals) - _LISTED} more (--json lists them all)"
    if not done.dry_run:
        text += (
            f"\n\nFollow them with `agentws event list {args.workspace} --webhook {webhook.name}`."
        )
    return Output(data, text)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- webhook test -----------------------------------------------------------------------------


async def _webhook_test(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.doors.webhooks.sample_sends import send_test_event
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.batcher import IngestBatcher
    from agentws.webhooks.intake import Intake

    webhook = await find_webhook(ctx.store, args.workspace, args.webhook)
    intake = Intake(ctx.store, IngestBatcher(ctx.store), ctx.keys)
    sample = SampleKind(args.sample) if args.sample else None
    answer = await send_test_event(ctx.settings, intake, webhook, sample, actor=ctx.actor)
    data: dict[str, Any] = {**sample_answer_json(webhook, answer), "event": None}
    lines = [
        f"Sent a {answer.sample.value} test event to webhook {webhook.name!r} "
        f"(signed for verification {webhook.verification.value}).",
        f"The door answered {answer.status}: {_answer_text(answer.body)}",
    ]
    if answer.event_id is None:
        return Output(data, "\n".join(lines), status=1)
    event = await _outcome(ctx, answer.event_id, args.wait)
    data["event"] = {
        "status": event.status.value,
        "error": event.error,
        "message_id": event.message_id,
    }
    if not event.status.finished:
        lines.append(
            f"Event {event.id} is {event.status.value}: no service ran it within "
            f"{args.wait:g} s (is `agentws serve` running on this database?). "
            f"Follow it with `agentws event show {event.id}`."
        )
        return Output(data, "\n".join(lines))
    from agentws.webhooks.events import event_timeline

    timeline = await event_timeline(ctx.store, event.id)
    if timeline.message is not None:
        data["message"] = {"channel": timeline.message.channel, "text": timeline.message.text}
        lines.append(f"Event {event.id} ran; posted to {timeline.message.channel}:")
        lines += ["    " + line for line in timeline.message.text.splitlines()]
        return Output(data, "\n".join(lines))
    lines.append(f"Event {event.id} {event.status.value}: {event.error or 'no message'}.")
    return Output(data, "\n".join(lines), status=0 if event.status.value == "done" else 1)


def _answer_text(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict):
        return f"{error.get('code')}: {error.get('message')}"
    return f"{body.get('status')} as event {body.get('event_id')}"


async def _outcome(ctx: Context, event_id: str, wait_s: float) -> Event:
    """The event once a service has run it, or as it is after ``wait_s``."""
    event = await ctx.store.get(Event, event_id)
    with trio.move_on_after(wait_s):
        while not event.status.finished:
            await trio.sleep(_POLL_S)
            event = await ctx.store.get(Event, event_id)
    return event


# --- parser -----------------------------------------------------------------------------------


def add_operation_commands(webhook: Noun) -> None:
    """Add ``webhook replay`` and ``webhook test`` to the ``webhook`` subcommands."""
    replay = webhook.verb(
        "replay",
        "replay a webhook's failed events, each once, at a rate",
        "workspace",
        "webhook",
        description="Queue one replay of each failed event of the webhook that matches and was "
        "never replayed, oldest first: a new event with the same body and headers (replay_of "
        "names the original), run by the service like any other. The replays are spaced by "
        "--rate, so the model and the chat are not flooded. Running it again while they run "
        "queues nothing twice; a replay that fails is replayed by the next run instead of "
        "its original.",
        handler=_webhook_replay,
    )
    replay.add_argument(
        "--failed",
        action="store_true",
        required=True,
        help="replay failed events (required: the events a bulk replay takes)",
    )
    time_window(
        replay,
        "only events received at or after TIME: 2026-05-01T12:00 (UTC), or 24h, 7d ago",
        "only events received before TIME",
    )
    replay.add_argument(
        "--error-contains",
        metavar="TEXT",
        help="only events whose error contains TEXT (any case)",
    )
    replay.add_argument(
        "--rate",
        dest="rate_per_min",
        type=per_minute_rate(MAX_REPLAY_RATE),
        metavar="R/min",
        help="replays a minute at most (default: the webhook's own rate; also R/s)",
    )
    replay.add_argument(
        "--limit",
        type=whole(1, MAX_REPLAYS),
        default=1000,
        metavar="N",
        help=f"take N events at most (default 1000, at most {MAX_REPLAYS}); run again for more",
    )
    replay.add_argument(
        "--current-prompt",
        action="store_true",
        help="run them with the webhook's prompt as it is now (default: the prompt each ran with)",
    )
    replay.add_argument(
        "--dry-run", action="store_true", help="say what would be replayed; queue nothing"
    )

    test = webhook.verb(
        "test",
        "send a signed sample event through the webhook's checks; show the answer",
        "workspace",
        "webhook",
        description="Send the webhook a test event: a sample delivery as its sender would send "
        "it (a GitHub ping, a Stripe invoice.payment_failed event, a Standard Webhooks "
        "envelope, a Slack event_callback, or a plain object), signed with the webhook's own "
        "secret exactly as that sender signs, and checked by the same code as a delivery to "
        "its URL (signature, rate limit, deduplication). Prints the door's answer, then waits "
        "for the run and prints its message. The URL is not kept, so the request is not sent "
        "over the network: the sender's copy of the URL and secret is not tested.",
        handler=_webhook_test,
    )
    test.add_argument(
        "--scheme-sample",
        dest="sample",
        choices=[k.value for k in SampleKind],
        help="whose delivery to imitate (default: the sender of the webhook's --verify "
        "scheme; plain for none and shared_secret)",
    )
    test.add_argument(
        "--wait",
        type=seconds(0.0, _MAX_WAIT_S),
        default=30.0,
        metavar="SECONDS",
        help="wait this long for a running service to run it (default 30, at most 3600; "
        "0: do not wait)",
    )
