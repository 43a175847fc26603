"""A fake Slack Web API (and chat incoming webhooks) on loopback, speaking Slack's wire format.

Served with Hypercorn on a free port under ``/api``:

- ``POST /api/chat.postMessage`` (JSON, ``Authorization: Bearer <bot token>``):
  stores the message with a fresh ``ts``, answers ``{"ok": true, "channel",
  "ts", "message"}``; errors as Slack gives them (HTTP 200, ``ok: false``,
  ``error``): ``invalid_auth`` for another token, ``channel_not_found``.
- ``GET /api/conversations.history`` and ``conversations.replies``: the
  channel's messages (or a thread's) newest first, ``metadata`` only with
  ``include_all_metadata=true``.
- ``POST /api/auth.test``.

Tests script trouble: ``rate_limited`` answers that many posts with HTTP 429
and ``Retry-After: retry_after``; ``fail_after_posting`` stores that many
posts and then answers HTTP 500 anyway (the answer lost, the post made).

Under ``/hooks/<path>`` it is an incoming webhook: a JSON POST is kept and
answered ``ok``; paths in ``gone_hooks`` answer 404 ``no_service``, paths
in ``broken_hooks`` answer 500 with a big HTML error page that echoes the
request (the hook's secret path, a ``?password=`` query), as proxies do.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import attrs
import trio

from tests.e2e.asgi_fakes import lifespan, read_body, served_on_loopback

__all__ = ["BOT_TOKEN", "FakeSlack", "Posted", "fake_slack"]

BOT_TOKEN = "xoxb-test-0000-bot-token"


@attrs.frozen
class Posted:
    """A message as the fake stored it, and the request that posted it."""

    channel: str
    ts: str
    body: dict[str, Any]
    authorization: str | None
    #: ``trio.current_time()`` when it arrived.
    at: float


@attrs.define(eq=False)
class FakeSlack:
    channels: set[str] = attrs.field(factory=lambda: {"C0123456789"})
    rate_limited: int = 0
    retry_after: str = "1"
    fail_after_posting: int = 0
    gone_hooks: set[str] = attrs.field(factory=set)
    broken_hooks: set[str] = attrs.field(factory=set)
    base_url: str = ""
    #: Messages posted, in order.
    messages: list[Posted] = attrs.field(factory=list)
    #: Every Web API call: (method name, trio time).
    calls: list[tuple[str, float]] = attrs.field(factory=list)
    #: Incoming-webhook posts: (path, JSON body).
    hook_posts: list[tuple[str, Any]] = attrs.field(factory=list)
    _ts: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api"

    def hook_url(self, path: str = "T000/B000/XXXXSECRETXXXX") -> str:
        return f"{self.base_url}/hooks/{path}"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if await lifespan(scope, receive, send):
            return
        body = await read_body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        path: str = scope["path"]
        if path.startswith("/hooks/"):
            status, answer, extra = self._hook(path.removeprefix("/hooks/"), body)
            await _respond(send, status, answer.encode(), "text/plain", extra)
            return
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        method = path.removeprefix("/api/")
        self.calls.append((method, trio.current_time()))
        status, data, extra = self._api(method, headers, query, body)
        await _respond(send, status, json.dumps(data).encode(), "application/json", extra)

    def _hook(self, path: str, body: bytes) -> tuple[int, str, dict[str, str]]:
        if path in self.gone_hooks:
            return 404, "no_service", {}
        if path in self.broken_hooks:
            return 500, error_page(self.hook_url(path)), {"content-type": "text/html"}
        self.hook_posts.append((path, json.loads(body)))
        return 200, "ok", {}

    def _api(
        self, method: str, headers: dict[str, str], query: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        authorization = headers.get("authorization")
        if authorization != f"Bearer {BOT_TOKEN}":
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        if method == "auth.test":
            return 200, {"ok": True, "team": "Acme", "user": "agentws-bot"}, {}
        if method == "chat.postMessage":
            if self.rate_limited > 0:
                self.rate_limited -= 1
                return 429, {"ok": False, "error": "ratelimited"}, {"retry-after": self.retry_after}
            data = json.loads(body)
            if data.get("channel") not in self.channels:
                return 200, {"ok": False, "error": "channel_not_found"}, {}
            ts = f"1800000000.{next(self._ts):06d}"
            self.messages.append(
                Posted(data["channel"], ts, data, authorization, trio.current_time())
            )
            if self.fail_after_posting > 0:
                self.fail_after_posting -= 1
                return 500, {"ok": False, "error": "internal_error"}, {}
            message = {"type": "message", "text": data["text"], "ts": ts}
            return 200, {"ok": True, "channel": data["channel"], "ts": ts, "message": message}, {}
        if method in ("conversations.history", "conversations.replies"):
            found = [
                m
                for m in reversed(self.messages)
                if m.channel == query.get("channel")
                and float(m.ts) >= float(query.get("oldest", "0"))
                and (
                    method == "conversations.history"
                    or query.get("ts") in (m.ts, m.body.get("thread_ts"))
                )
            ]
            with_metadata = query.get("include_all_metadata") == "true"
            items = [
                {"type": "message", "ts": m.ts, "text": m.body["text"]}
                | (
                    {"metadata": m.body["metadata"]}
                    if with_metadata and "metadata" in m.body
                    else {}
                )
                for m in found
            ]
            return 200, {"ok": True, "messages": items, "has_more": False}, {}
        return 200, {"ok": False, "error": "unknown_method"}, {}


def error_page(url: str) -> str:
    """A proxy's 500 page: tags, a script, a table, and the request it failed, about 60 KB."""
    rows = "\n".join(f"<tr><td>upstream {i}</td><td>down</td></tr>" for i in range(1500))
    return (
        "<!DOCTYPE html>\n<html><head><title>500 Internal Server Error</title>\n"
        "<style>body { font-family: sans-serif; }\n td { padding: 2px }</style>\n"
        "<script>window.trace = 'abc';</script></head>\n<body>\n"
        "<h1>Internal   Server\n\n Error</h1>\n"
        f"<p>The upstream failed for POST {url}?password=hunter2&amp;ok=1</p>\n"
        f"<table>{rows}</table>\n</body></html>\n"
    )


async def _respond(
    send: Any, status: int, body: bytes, content_type: str, extra: dict[str, str]
) -> None:
    headers = [(b"content-type", extra.pop("content-type", content_type).encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def fake_slack(**options: Any) -> AsyncIterator[FakeSlack]:
    """Serve a :class:`FakeSlack` on a free loopback port until the block ends."""
    fake = FakeSlack(**options)
    async with served_on_loopback(fake) as base_url:
        fake.base_url = base_url
        yield fake
