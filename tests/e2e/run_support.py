"""Webhooks and deliveries for tests of agent runs in a serving agentws."""

from __future__ import annotations

from typing import Any

import httpx2

from agentws.domain.models import Event
from agentws.store import Store
from tests.e2e.mcp_support import Running
from tests.e2e.webhook_support import CHANNEL, Hook, make_hook, wait_until

__all__ = ["deliver", "finished", "hook"]


async def hook(server: Running, name: str = "ci", **options: Any) -> Hook:
    """A webhook of workspace acme posting to local:ops, without a rate limit to speak of."""
    return await make_hook(
        server,
        name,
        prompt=options.pop("prompt", "Summarise the event."),
        channel=CHANNEL,
        rate_per_min=100_000,
        burst=100_000,
        **options,
    )


async def deliver(issued: Hook, body: dict[str, Any]) -> str:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(issued.url, json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["event_id"])


async def finished(store: Store, event_id: str, timeout_s: float = 10.0) -> Event:
    """``event_id`` once it is done or failed."""
    event: Event = await wait_until(
        lambda: store.get(Event, event_id),
        lambda event: event.status.finished,
        timeout_s=timeout_s,
        what=f"event {event_id} to finish",
    )
    return event
