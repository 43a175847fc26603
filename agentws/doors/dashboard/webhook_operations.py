"""The dashboard's operations on a webhook's page: bulk replay of failed events, test events.

- "Replay failed events": the form on the webhook's page (with the count
  of failed events a replay would take, and an optional time range, error
  text and rate) leads to a confirmation page listing what would be
  replayed (a dry run); confirming there queues the replays
  (:mod:`agentws.webhooks.replays`).
- "Send a test event": a signed sample delivery through the door's
  checks (:mod:`agentws.doors.webhooks.sample_sends`); a queued one leads to its
  event's page, a refusal is shown with the door's answer.

The failure alert settings are in the page's "Change" form
(:mod:`agentws.doors.dashboard.webhooks`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError, ValidationError
from agentws.domain.models import Webhook
from agentws.domain.replays import MAX_REPLAY_RATE, ReplaySelection
from agentws.domain.sample_deliveries import SampleKind, default_sample
from agentws.domain.typed_numbers import whole_number
from agentws.doors.dashboard.frame import done, error_text, find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.doors.views import webhook_status
from agentws.http.blueprints import RouteTable
from agentws.store.sql_replays import ReplayStore
from agentws.store.sql_streaks import StreakStore
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks.replays import replay_failed

__all__ = ["operations_context", "routes"]

routes = RouteTable[AdminServices]()

# Originals the confirmation page lists (the count says how many in all).
_LISTED = 50


class _Store(ReplayStore, StreakStore, Protocol):
    """The areas of the store this module uses."""


async def operations_context(store: _Store, webhook: Webhook) -> dict[str, Any]:
    """What the webhook's page shows of its failures, replays and test events."""
    return {
        "state": webhook_status(webhook),
        "streak": await store.latest_failure_streak(webhook.id),
        "replayable": await store.count_replay_candidates(webhook.id, ReplaySelection()),
        "test_samples": [k.value for k in SampleKind],
        "default_sample": default_sample(webhook.verification).value,
    }


def _moment(text: str | None, what: str) -> datetime | None:
    """A time typed in a ``datetime-local`` field (UTC), or None."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"{what}: not a date and time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _rate(text: str | None) -> int | None:
    if not text:
        return None
    return whole_number(text, name="the rate (replays a minute)", low=1, high=MAX_REPLAY_RATE)


@routes.post("/w/<workspace>/webhooks/<webhook>/replay")
@signed_in
async def webhook_replay(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    """Without ``confirm``: the confirmation page (a dry run); with it: the replays queued."""
    form = await request.form
    page = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    store = admin.store
    try:
        found = await webhooks_admin.find_webhook(store, workspace, webhook)
        page = url_for("dashboard.webhook_show", workspace=workspace, webhook=found.name)
        selection = ReplaySelection(
            since=_moment(form.get("since"), "since"),
            until=_moment(form.get("until"), "until"),
            error_contains=form.get("error_contains") or None,
        )
        confirmed = form.get("confirm") == "yes"
        replay = await replay_failed(
            store,
            found,
            selection,
            actor=caller.actor,
            rate_per_min=_rate(form.get("rate_per_min")),
            current_prompt=form.get("prompt") == "current",
            dry_run=not confirmed,
        )
    except AgentwsError as exc:
        return done(page, error_text(exc), error=True)
    if not confirmed:
        return await render_page(
            admin,
            "webhook_replay.html",
            caller,
            workspace=await find_workspace(admin, workspace),
            webhook=found,
            replay=replay,
            listed=replay.originals[:_LISTED],
            form={k: v for k, v in form.items() if k not in ("csrf", "confirm")},
        )
    if replay.queued:
        admin.notify_events()
    notice = (
        f"Queued {len(replay.queued)} replays of failed events, at {replay.rate_per_min}/min."
        if replay.queued
        else "Nothing was replayed: those events were replayed already."
    )
    if replay.left:
        notice += f" {replay.left} more match: replay again for them."
    return done(page, notice)


@routes.post("/w/<workspace>/webhooks/<webhook>/test")
@signed_in
async def webhook_test(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Response:
    form = await request.form
    page = url_for("dashboard.webhook_show", workspace=workspace, webhook=webhook)
    try:
        found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
        page = url_for("dashboard.webhook_show", workspace=workspace, webhook=found.name)
        sample = SampleKind(form.get("sample") or default_sample(found.verification).value)
        if admin.send_test_event is None:
            raise ValidationError("this server takes no deliveries: no test event can be sent")
        answer = await admin.send_test_event(found, sample, caller.actor)
    except (AgentwsError, ValueError) as exc:
        return done(page, error_text(exc), error=True)
    if answer.event_id is None:
        error = answer.body.get("error", {})
        return done(
            page,
            f"The test event was refused: {answer.status} {error.get('code')}: "
            f"{error.get('message')}",
            error=True,
        )
    return done(
        url_for("dashboard.event", event_id=answer.event_id),
        f"Test event ({sample.value}) sent: the door answered {answer.status} "
        f"{answer.body.get('status')}; this is its event.",
    )
