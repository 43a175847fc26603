"""The admin API's operations on a webhook: its failures, bulk replay, test events.

- ``GET …/webhooks/<ref>/failures``: the alert settings, whether it is
  paused, its latest failure streak and how many failed events a bulk
  replay would take now;
- ``POST …/webhooks/<ref>/replay``: replay its failed events (a selection
  in the body), each once, at a rate (:mod:`agentws.webhooks.replays`);
- ``POST …/webhooks/<ref>/test``: a signed sample delivery through the
  door's checks (:mod:`agentws.webhooks.test_events`); the answer holds
  the door's status and body.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.domain.replays import ReplaySelection
from agentws.domain.sample_deliveries import SampleKind
from agentws.errors import StoreUnavailableError, ValidationError
from agentws.views import streak_json, webhook_status
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks.replays import DEFAULT_LIMIT, replay_failed, replay_json

from .calls import Answer, endpoint, enum_value, field, json_body

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

_ALL_FAILED = ReplaySelection()


def _moment(data: dict[str, object], name: str) -> datetime | None:
    text = field(data, name, str)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"{name!r} must be an ISO 8601 time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


@routes.get("/workspaces/<workspace>/webhooks/<webhook>/failures")
@endpoint
async def webhook_failures(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    store = admin.store
    found = await webhooks_admin.find_webhook(store, workspace, webhook)
    return {
        "webhook": found.name,
        "status": webhook_status(found),
        "paused_at": found.paused_at.isoformat() if found.paused_at else None,
        "alert_after": found.alert_after,
        "alerts_channel": found.alerts_channel,
        "pause_on_failure": found.pause_on_failure,
        "failure_streak": streak_json(await store.latest_failure_streak(found.id)),
        "replayable": await store.count_replay_candidates(found.id, _ALL_FAILED),
    }


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/replay")
@endpoint
async def replay_webhook_failures(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    data = await json_body()
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    selection = ReplaySelection(
        since=_moment(data, "since"),
        until=_moment(data, "until"),
        error_contains=field(data, "error_contains", str),
    )
    done = await replay_failed(
        admin.store,
        found,
        selection,
        actor=caller.actor,
        rate_per_min=field(data, "rate_per_min", int),
        limit=field(data, "limit", int, DEFAULT_LIMIT),
        current_prompt=field(data, "current_prompt", bool, False),
        dry_run=field(data, "dry_run", bool, False),
    )
    if done.queued:
        admin.notify_events()
    return replay_json(done)


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/test")
@endpoint
async def test_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    data = await json_body()
    sample = enum_value(SampleKind, "sample", field(data, "sample", str))
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    if admin.send_test_event is None:
        raise StoreUnavailableError("this server takes no deliveries: no test event can be sent")
    answer = await admin.send_test_event(found, sample, caller.actor)
    return {
        "webhook": found.name,
        "sample": answer.sample.value,
        "status": answer.status,
        "answer": answer.body,
        "event_id": answer.event_id,
    }
