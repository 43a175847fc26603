"""Webhooks and deliveries for tests of agent runs in a serving agentws."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from cryptography.fernet import Fernet

from agentws.domain.models import ChatMessage, Event
from agentws.store.union import Store
from tests.e2e.fake_anthropic import API_KEY, FakeAnthropic, Reply, Turn, fake_anthropic
from tests.e2e.mcp_support import Running, running
from tests.e2e.polling import wait_until
from tests.e2e.webhook_support import CHANNEL, Hook, make_hook

__all__ = ["MODEL", "deliver", "finished", "hook", "message_of", "served"]

MODEL = "claude-test-1"


@asynccontextmanager
async def served(
    tmp_path: Path, replies: list[Reply], *, with_library: bool = False, **env: str
) -> AsyncIterator[tuple[Running, FakeAnthropic]]:
    """agentws with its model at a fake Messages API that answers ``replies`` in turn."""
    script = iter(replies)

    def next_reply(request: dict[str, Any]) -> Reply:
        return next(script, Turn("(out of script)"))

    settings = {
        "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
        "AGENTWS_RETRY_BASE_S": "0.02",
        "AGENTWS_MODEL": MODEL,
        **env,
    }
    async with fake_anthropic(next_reply) as fake:
        settings.update(ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=fake.base_url)
        async with running(tmp_path, with_library=with_library, **settings) as server:
            yield server, fake


async def message_of(server: Running, event_id: str) -> ChatMessage:
    """The one message recorded for ``event_id``."""
    (message,) = await server.store.select(ChatMessage, event_id=event_id)
    return message


async def hook(server: Running, name: str = "ci", **options: Any) -> Hook:
    """A webhook of workspace acme (posting to local:ops unless ``channel`` says), no rate limit."""
    return await make_hook(
        server,
        name,
        prompt=options.pop("prompt", "Summarise the event."),
        channel=options.pop("channel", CHANNEL),
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
