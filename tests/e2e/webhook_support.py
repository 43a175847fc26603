"""A real agentws serving the webhook door on a loopback port, and a sender for it.

:func:`hook_server` serves agentws (workspace ``acme``, groups ``ops`` and
``sales``, see :func:`tests.e2e.mcp_support.running`) with a service key, so
that webhooks may keep verification secrets. :func:`make_hook` creates a
webhook posting to ``local:ops`` and gives its URL on the real port;
:func:`post` delivers bytes exactly as given. The rest reads what the
deliveries left in the store: events, attempts (agent runs) and messages.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
import trio
from cryptography.fernet import Fernet

from agentws.domain.models import ChatMessage, Event, EventAttempt, Webhook
from agentws.domain.signatures import sign_github
from agentws.store.union import Store
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.mcp_support import Running, running
from tests.e2e.polling import wait_until

__all__ = [
    "ACTOR",
    "CHANNEL",
    "GRACE_S",
    "REQUEST_S",
    "WAIT_S",
    "Hook",
    "all_finished",
    "assert_error",
    "attempts",
    "deliver_github_push",
    "events",
    "hook_server",
    "make_hook",
    "messages",
    "post",
    "wait_for_messages",
]

ACTOR = "test"
CHANNEL = "local:ops"
WORKSPACE = "acme"
# Every delivery is answered at once; this bounds a hang.
REQUEST_S = 10.0
# The offline model answers at once; a message is posted within this.
WAIT_S = 5.0
# The shutdown grace of the servers these tests start. Every test waits for its
# own work to finish before the server stops, so only what is stuck (a
# connection the server failed to close) waits this out; short keeps it cheap.
GRACE_S = 1.0
_HOOK_PATH = "/hooks/"


@asynccontextmanager
async def hook_server(tmp_path: Path, **env: str) -> AsyncIterator[Running]:
    """Serve agentws with a fresh service key (``AGENTWS_SECRET_KEY``) until the block ends.

    ``env`` adds or overrides settings (the grace period is :data:`GRACE_S`).
    """
    settings = {
        "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
        "AGENTWS_SHUTDOWN_GRACE_S": str(GRACE_S),
        **env,
    }
    async with running(tmp_path, with_library=False, **settings) as server:
        yield server


@attrs.frozen
class Hook:
    """A webhook, and the URL (with its token) that reaches it on the running server."""

    webhook: Webhook
    url: str = attrs.field(repr=False)

    @property
    def id(self) -> str:
        return self.webhook.id

    @property
    def name(self) -> str:
        return self.webhook.name


async def make_hook(
    server: Running,
    name: str,
    *,
    prompt: str = "Summarise what happened and what needs doing.",
    channel: str = CHANNEL,
    **options: Any,
) -> Hook:
    """Create a webhook in ``acme`` posting to ``channel``; ``options`` go to WebhookOptions.

    The issued URL is built from the settings (``AGENTWS_BIND`` is port 0 in
    tests), so the token is taken from it and put on the real bound address.
    """
    issued = await create_webhook(
        server.store,
        server.runtime.settings,
        server.runtime.keys,
        WORKSPACE,
        name=name,
        channel=channel,
        prompt=prompt,
        options=WebhookOptions(**options),
        actor=ACTOR,
    )
    prefix, sep, token = issued.url.rpartition(_HOOK_PATH)
    assert sep and token, f"the issued URL has no {_HOOK_PATH}<token>: {issued.url!r}"
    assert prefix == server.runtime.settings.public_base_url.rstrip("/")
    return Hook(issued.webhook, server.base_url.rstrip("/") + _HOOK_PATH + token)


async def post(
    url: str,
    body: bytes | AsyncIterable[bytes],
    headers: dict[str, str] | None = None,
    *,
    method: str = "POST",
) -> httpx2.Response:
    """Send ``body`` to ``url`` as is (bytes: with Content-Length; an async iterable: chunked).

    ``headers`` are sent as given; Content-Type is ``application/json`` unless
    they name one.
    """
    sent = {"Content-Type": "application/json"}
    if headers and any(k.lower() == "content-type" for k in headers):
        sent = {}
    sent.update(headers or {})
    async with httpx2.AsyncClient(timeout=REQUEST_S) as client:
        with trio.fail_after(REQUEST_S):
            return await client.request(method, url, content=body, headers=sent)


def assert_error(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    """That ``response`` is the door's JSON refusal ``status``/``code``; its body."""
    assert response.status_code == status, (
        f"expected {status} {code}, got {response.status_code}: {response.text}"
    )
    content_type = response.headers.get("content-type", "")
    assert content_type.split(";")[0].strip() == "application/json", content_type
    body = json.loads(response.content)
    assert isinstance(body, dict), body
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict), body
    assert set(error) == {"code", "message"}, body
    assert isinstance(error["code"], str), body
    assert isinstance(error["message"], str), body
    assert error["message"].strip(), body
    assert error["code"] == code, f"expected error code {code!r}, got {body}"
    return body


async def events(store: Store, webhook_id: str) -> list[Event]:
    """The stored events of a webhook."""
    return await store.select(Event, webhook_id=webhook_id)


async def attempts(store: Store) -> list[EventAttempt]:
    """Every agent run begun so far, of any webhook."""
    return await store.select(EventAttempt)


async def messages(
    store: Store, workspace_slug: str = WORKSPACE, channel: str = CHANNEL
) -> list[ChatMessage]:
    """The messages of a local channel, oldest first."""
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.channel_messages(workspace.id, channel, limit=1000)


async def wait_for_messages(
    store: Store, n: int, *, channel: str = CHANNEL, timeout_s: float = WAIT_S
) -> list[ChatMessage]:
    """Wait until ``channel`` holds at least ``n`` messages; all of them."""
    return await wait_until(
        lambda: messages(store, WORKSPACE, channel),
        lambda found: len(found) >= n,
        timeout_s=timeout_s,
        what=f"{n} message(s) in {channel}",
    )


def _finished(found: list[Event]) -> bool:
    return all(event.status.finished for event in found)


async def all_finished(store: Store, webhook_id: str, *, timeout_s: float = WAIT_S) -> list[Event]:
    """Wait until every event of the webhook is done or failed (the worker is idle for it)."""
    return await wait_until(
        lambda: events(store, webhook_id),
        _finished,
        timeout_s=timeout_s,
        what=f"every event of webhook {webhook_id} to finish",
    )


#: A GitHub push's body, as :func:`deliver_github_push` sends it.
GITHUB_PUSH = json.dumps({"ref": "refs/heads/main", "commits": []}).encode()


async def deliver_github_push(url: str, secret: str, delivery: str) -> int:
    """POST a push signed with ``secret`` as GitHub signs it, to ``url``; the status."""
    headers = {
        **sign_github(secret, GITHUB_PUSH),
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": delivery,
    }
    async with httpx2.AsyncClient(timeout=REQUEST_S) as http:
        return (await http.post(url, content=GITHUB_PUSH, headers=headers)).status_code
