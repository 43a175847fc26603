"""The admin API's answers have exactly the fields of their shapes (``agentws.doors.api.shapes``).

schemathesis checks that answers fit the document; this checks the other
way too: a key a view gives that its shape does not name (so the document
does not) fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import Webhook
from agentws.doors.api.shapes import records, webhooks
from agentws.doors.api.shapes.base import Shape
from tests.e2e.mcp_support import running
from tests.e2e.run_support import deliver, finished
from tests.e2e.webhook_support import Hook


def _exactly(shape: type[Shape], answer: Any) -> None:
    assert set(answer) == set(shape.model_fields), (shape.__name__, answer)
    shape.model_validate(answer)


async def test_answers_have_the_fields_of_their_shapes(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        await create_admin(server.store, "alice", actor="t")
        _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
        headers = {"Authorization": f"Bearer {secret}"}
        base = f"{server.base_url}/api/v1"
        async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=10) as api:
            _exactly(records.WorkspacePage, (await api.get("/workspaces")).json())
            created = await api.post(
                "/workspaces/acme/webhooks",
                json={"name": "ci", "channel": "local:ops", "prompt": "Summarise."},
            )
            _exactly(webhooks.IssuedWebhook, created.json())
            hook = "/workspaces/acme/webhooks/ci"
            _exactly(webhooks.Webhook, (await api.get(hook)).json())
            _exactly(webhooks.RotationStatus, (await api.get(f"{hook}/rotation")).json())
            _exactly(webhooks.WebhookFailures, (await api.get(f"{hook}/failures")).json())

            path = "/hooks/" + created.json()["url"].split("/hooks/")[1]
            stored = await server.store.get(Webhook, created.json()["id"])
            event_id = await deliver(Hook(stored, server.base_url + path), {"build": 7})
            await finished(server.store, event_id)
            _exactly(webhooks.Event, (await api.get(f"/events/{event_id}")).json())
            page = (await api.get("/workspaces/acme/events")).json()
            _exactly(webhooks.EventPage, page)
            _exactly(webhooks.EventSummary, page["items"][0])
            deliveries = (await api.get(f"{hook}/deliveries")).json()
            _exactly(webhooks.Delivery, deliveries["items"][0])
            messages = (await api.get("/workspaces/acme/channels/local:ops/messages")).json()
            _exactly(records.Message, messages["items"][0])

            token = await api.post("/workspaces/acme/groups/ops/tokens", json={"name": "t"})
            _exactly(records.IssuedToken, token.json())
            tokens = (await api.get("/workspaces/acme/groups/ops/tokens")).json()
            _exactly(records.Token, tokens["items"][0])
            renamed = await api.patch("/workspaces/acme/groups/ops", json={"name": "Ops"})
            _exactly(records.Group, renamed.json())
            _exactly(records.AuditPage, (await api.get("/audit")).json())
            audit = (await api.get("/audit")).json()["items"][0]
            _exactly(records.AuditEntry, audit)

            client = await api.post(
                "/oauth/clients",
                json={"name": "App", "redirect_uris": ["https://app.example/callback"]},
            )
            _exactly(records.RegisteredOAuthClient, client.json())
            _exactly(records.OAuthClientPage, (await api.get("/oauth/clients")).json())
            _exactly(records.Deleted, (await api.delete(hook)).json())
