"""Webhooks and deliveries for tests of agent runs in a serving agentws."""

from __future__ import annotations

from typing import Any

import attrs
import httpx2
import trio

from agentws.domain.models import Event
from agentws.store import Store
from agentws.webhooks.admin import IssuedWebhook, WebhookOptions, create_webhook
from tests.e2e.mcp_support import Running

__all__ = ["deliver", "finished", "hook"]


async def hook(server: Running, name: str = "ci", **options: Any) -> IssuedWebhook:
    """A webhook of workspace acme posting to local:ops, with its URL on the server's port."""
    issued = await create_webhook(
        server.store,
        server.service.settings,
        "acme",
        name=name,
        channel="local:ops",
        prompt=options.pop("prompt", "Summarise the event."),
        options=WebhookOptions(rate_per_min=100_000, burst=100_000, **options),
        actor="test",
    )
    token = issued.url.rsplit("/", 1)[1]
    return attrs.evolve(issued, url=f"{server.base_url}/hooks/{token}")


async def deliver(issued: IssuedWebhook, body: dict[str, Any]) -> str:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(issued.url, json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["event_id"])


async def finished(store: Store, event_id: str, timeout_s: float = 10.0) -> Event:
    found: list[Event] = []

    async def check() -> bool:
        event = await store.get(Event, event_id)
        found[:] = [event]
        return event.status.finished

    with trio.move_on_after(timeout_s):
        while not await check():  # noqa: ASYNC110 - the state is in the store
            await trio.sleep(0.02)
        return found[0]
    raise AssertionError(f"event {event_id} did not finish: {found}")
