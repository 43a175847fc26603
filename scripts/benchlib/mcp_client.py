"""A lean MCP client over httpx2: just enough JSON-RPC for load and session tests.

No SDK client on purpose: on a 2-core machine the load generator shares the
CPU with the server under test, so each call costs one POST, one
``json.dumps`` and one ``json.loads``. Responses are accepted both ways the
Streamable HTTP spec allows, ``application/json`` or a ``text/event-stream``
that carries the response.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any, Protocol

import httpx2

from benchlib.raw_http import TRANSPORT_ERRORS

__all__ = [
    "PROTOCOL_VERSION",
    "CallError",
    "HttpClient",
    "StreamableSession",
    "initialize_params",
    "parse_result",
    "parse_sse_response",
    "request_headers",
]

# The newest revision reached with the initialize handshake (mcp 2.3).
PROTOCOL_VERSION = "2025-11-25"


class CallError(Exception):
    """A call that did not produce a successful JSON-RPC result."""


class _Answer(Protocol):
    status_code: int
    content: bytes

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def text(self) -> str: ...


class HttpClient(Protocol):
    """What a session posts with: an ``httpx2.AsyncClient`` or a load's
    :class:`benchlib.raw_http.RawClient`."""

    async def post(self, url: str, *, content: bytes, headers: dict[str, str]) -> _Answer: ...

    async def delete(self, url: str, *, headers: dict[str, str]) -> _Answer: ...


# A DELETE that fails over either client: the server may have ended the session already.
_CLOSE_ERRORS = (httpx2.HTTPError, *TRANSPORT_ERRORS)


def request_headers(token: str | None) -> dict[str, str]:
    """The headers of a JSON-RPC POST, either answer accepted, with the bearer token if any."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    return headers


def initialize_params(version: str = PROTOCOL_VERSION) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "agentws-bench", "version": "1"},
    }


def parse_sse_response(text: str, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response to ``request_id`` among the events of an SSE body."""
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            payload = "\n".join(data)
            data = []
            message = json.loads(payload)
            if (
                isinstance(message, dict)
                and message.get("id") == request_id
                and ("result" in message or "error" in message)
            ):
                return message
    raise CallError(f"no response to request {request_id} in the event stream")


class StreamableSession:
    """One initialized Streamable HTTP session; ``call`` posts a request and returns its result."""

    def __init__(self, client: HttpClient, url: str, token: str | None) -> None:
        self._client = client
        self._url = url
        self._headers = request_headers(token)
        self._next_id = 0
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    async def initialize(self) -> dict[str, Any]:
        result = await self.call("initialize", initialize_params())
        self.protocol_version = result.get("protocolVersion", PROTOCOL_VERSION)
        self._headers["mcp-protocol-version"] = str(self.protocol_version)
        await self.notify("notifications/initialized")
        return result

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        response = await self._client.post(
            self._url, content=json.dumps(message).encode(), headers=self._headers
        )
        if response.status_code not in (200, 202):
            raise CallError(f"{method}: HTTP {response.status_code}: {response.text[:200]}")

    async def call_raw(self, method: str, params: dict[str, Any]) -> tuple[int, str, bytes]:
        """Post a request; its id, the answer's content type and its body, unparsed."""
        self._next_id += 1
        request_id = self._next_id
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        response = await self._client.post(self._url, content=body.encode(), headers=self._headers)
        if response.status_code != 200:
            raise CallError(f"{method}: HTTP {response.status_code}: {response.text[:200]}")
        session_id = response.headers.get("mcp-session-id")
        if session_id and self.session_id is None:
            self.session_id = session_id
            self._headers["mcp-session-id"] = session_id
        return request_id, response.headers.get("content-type", ""), response.content

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id, content_type, content = await self.call_raw(method, params)
        return parse_result(method, request_id, content_type, content)

    async def aclose(self) -> None:
        """End the session (DELETE); errors are ignored, the server may have ended it."""
        if self.session_id is None:
            return
        with contextlib.suppress(*_CLOSE_ERRORS):
            await self._client.delete(self._url, headers=self._headers)


def parse_result(method: str, request_id: int, content_type: str, content: bytes) -> dict[str, Any]:
    """The result of a JSON-RPC answer (JSON or an event stream); CallError for an error."""
    if content_type.startswith("text/event-stream"):
        message = parse_sse_response(content.decode(), request_id)
    else:
        message = json.loads(content)
    if "error" in message:
        raise CallError(f"{method}: JSON-RPC error {message['error']}")
    result: dict[str, Any] = message["result"]
    return result
