"""The admin API's operations on a webhook: its failures, bulk replay, test events.

- ``GET …/webhooks/<ref>/failures``: the alert settings, whether it is
  paused, its latest failure streak and how many failed events a bulk
  replay would take now;
- ``POST …/webhooks/<ref>/replay``: replay its failed events (a selection
  in the body), each once, at a rate (:mod:`agentws.webhooks.replays`);
- ``POST …/webhooks/<ref>/test``: a signed sample delivery through the
  door's checks (:mod:`agentws.doors.webhooks.sample_sends`); the answer holds
  the door's status and body.
"""

from __future__ import annotations

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import StoreUnavailableError
from agentws.domain.replays import ReplaySelection
from agentws.doors.api.calls import Answer, Endpoints, read_body
from agentws.doors.api.shapes.bodies import BulkReplayRequest, TestEventRequest
from agentws.doors.views import sample_answer_json, streak_json, webhook_status
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks.replays import replay_asked, replay_json

__all__ = ["routes"]

routes = Endpoints()

_ALL_FAILED = ReplaySelection()


@routes.get("/workspaces/<workspace>/webhooks/<webhook>/failures")
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
async def replay_webhook_failures(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    asked = await read_body(BulkReplayRequest)
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    done = await replay_asked(admin.store, found, asked, actor=caller.actor)
    if done.queued:
        admin.notify_events()
    return replay_json(done)


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/test")
async def test_webhook(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    sample = (await read_body(TestEventRequest)).sample
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    if admin.send_test_event is None:
        raise StoreUnavailableError("this server takes no deliveries: no test event can be sent")
    answer = await admin.send_test_event(found, sample, caller.actor)
    return sample_answer_json(found, answer)
