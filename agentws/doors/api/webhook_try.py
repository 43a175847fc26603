"""The admin API's capture and "Try a prompt": a webhook's samples, and a dry run on one.

``GET …/webhooks/<ref>/samples`` lists what a capturing draft kept (newest
first, previews), ``GET …/samples/<id>`` shows one whole, and
``POST …/webhooks/<ref>/try`` runs the agent on a sample or a past event
with a candidate prompt, posting nothing (:mod:`agentws.agent.dry_run`).
"""

from __future__ import annotations

from agentws.admins.access import AdminServices, Caller
from agentws.domain.dry_runs import TryRequest
from agentws.doors.api.calls import Answer, Endpoints, page_of, read_body
from agentws.doors.api.shapes.bodies import TryPrompt
from agentws.doors.views import dry_run_json, sample_json
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import samples as webhook_samples

__all__ = ["routes"]

routes = Endpoints()


@routes.get("/workspaces/<workspace>/webhooks/<webhook>/samples")
async def list_samples(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str
) -> Answer:
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    kept = await webhook_samples.list_samples(admin.store, found)
    return page_of([sample_json(s) for s in kept])


@routes.get("/workspaces/<workspace>/webhooks/<webhook>/samples/<sample>")
async def show_sample(
    admin: AdminServices, caller: Caller, workspace: str, webhook: str, sample: str
) -> Answer:
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    return sample_json(await webhook_samples.find_sample(admin.store, found, sample), whole=True)


@routes.post("/workspaces/<workspace>/webhooks/<webhook>/try")
async def try_prompt(admin: AdminServices, caller: Caller, workspace: str, webhook: str) -> Answer:
    asked = await read_body(TryPrompt)
    found = await webhooks_admin.find_webhook(admin.store, workspace, webhook)
    delivery, source = await webhook_samples.tried_delivery(
        admin.store, found, sample_id=asked.sample_id, event_id=asked.event_id
    )
    tried = await admin.try_prompt(
        TryRequest(
            webhook=found,
            delivery=delivery,
            source=source,
            prompt=asked.prompt,
            actor=caller.actor,
        )
    )
    return dry_run_json(tried)
