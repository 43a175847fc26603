"""A fake Anthropic Messages API on loopback, for the real ``anthropic`` SDK to talk to.

It serves ``POST /v1/messages`` (non-streaming) with Hypercorn on a free port
and answers each request with the next of a script of replies: a
:class:`Turn` (the assistant's text and tool calls, as a ``message`` object
in the API's wire format) or a :class:`Failure` (an error status with the
API's error body, and optional ``retry-after``). Every request body is kept,
so tests can assert what the model was sent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from tests.e2e.asgi_fakes import lifespan, read_body, served_on_loopback

__all__ = ["API_KEY", "Failure", "FakeAnthropic", "Turn", "fake_anthropic"]

#: The key the tests give agentws; the model check refuses any other.
API_KEY = "sk-ant-test-key"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@attrs.frozen
class Turn:
    """One assistant message: ``text`` and ``tool_calls`` as ``(name, input)`` pairs."""

    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    #: Seconds to wait before answering (a slow model).
    delay_s: float = 0.0


@attrs.frozen
class Failure:
    """An error answer: ``status`` with the API's error body."""

    status: int
    message: str = "failure"
    retry_after: str | None = None
    #: The API's millisecond variant, which the SDK prefers for its own retries.
    retry_after_ms: str | None = None
    #: Seconds to wait before answering (a slow API).
    delay_s: float = 0.0
    #: Answer this HTML page instead of the API's JSON (a proxy in front of it).
    html: str | None = None


Reply = Turn | Failure
Script = Callable[[dict[str, Any]], Reply]


@attrs.define(eq=False)
class FakeAnthropic:
    """The fake API: its base URL once serving, the requests it got, the script it follows."""

    script: Script
    base_url: str = ""
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    headers: list[dict[str, str]] = attrs.field(factory=list)
    _ids: Any = attrs.field(factory=lambda: itertools.count(1))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if await lifespan(scope, receive, send):
            return
        body = await read_body(receive)
        if scope["method"] == "GET" and scope["path"].startswith("/v1/models/"):
            await self._model_info(scope, send)
            return
        if scope["method"] != "POST" or scope["path"] != "/v1/messages":
            await _answer(send, 404, _error(404, f"no route {scope['path']}"))
            return
        request = json.loads(body)
        self.requests.append(request)
        self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        reply = self.script(request)
        if isinstance(reply, Failure):
            await trio.sleep(reply.delay_s)
            extra = {
                name: value
                for name, value in (
                    ("retry-after", reply.retry_after),
                    ("retry-after-ms", reply.retry_after_ms),
                )
                if value is not None
            }
            if reply.html is not None:
                await _answer_raw(send, reply.status, reply.html.encode(), "text/html", extra)
                return
            await _answer(send, reply.status, _error(reply.status, reply.message), extra)
            return
        await trio.sleep(reply.delay_s)
        await _answer(send, 200, self._message(request, reply))

    async def _model_info(self, scope: dict[str, Any], send: Any) -> None:
        """``GET /v1/models/{id}``: any model is known; a key other than the tests' is not."""
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        if API_KEY not in (headers.get("x-api-key"), headers.get("authorization", "")[7:]):
            await _answer(send, 401, _error(401, "invalid x-api-key"))
            return
        model = scope["path"].removeprefix("/v1/models/")
        info = {
            "type": "model",
            "id": model,
            "display_name": f"Test model {model}",
            "created_at": "2026-01-01T00:00:00Z",
        }
        await _answer(send, 200, info)

    def _message(self, request: dict[str, Any], turn: Turn) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for name, arguments in turn.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(self._ids):04d}",
                    "name": name,
                    "input": arguments,
                }
            )
        return {
            "id": f"msg_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude"),
            "content": content,
            "stop_reason": "tool_use" if turn.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 80,
            },
        }


def _error(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


async def _answer(
    send: Any, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    await _answer_raw(send, status, json.dumps(body).encode(), "application/json", headers)


async def _answer_raw(
    send: Any, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
) -> None:
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(data)).encode()),
                (b"request-id", b"req_fake"),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


@asynccontextmanager
async def fake_anthropic(script: Script) -> AsyncIterator[FakeAnthropic]:
    """Serve a :class:`FakeAnthropic` following ``script`` on a free loopback port."""
    fake = FakeAnthropic(script)
    async with served_on_loopback(fake) as base_url:
        fake.base_url = base_url
        yield fake
