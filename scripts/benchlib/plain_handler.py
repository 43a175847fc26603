"""The floor for ``scripts/bench mcp``: a plain ASGI handler on Hypercorn (trio), no MCP SDK.

It answers ``search_context`` the way the reference does (the same SQL on
a copy of the same database, :mod:`benchlib.search`, run in a worker thread
with ``trio.to_thread.run_sync``, one read-only connection per thread; the
same result), and speaks just enough MCP JSON-RPC over HTTP POST for the
bench's load client (:mod:`benchlib.mcp_load`) to drive it unchanged, with
JSON answers:

- ``initialize`` → ``protocolVersion``, ``capabilities``, ``serverInfo``
  and a new ``Mcp-Session-Id``; a notification → 202; ``tools/call`` of
  ``search_context`` → the tool's result; ``ping`` → ``{}``; ``DELETE``
  ends the session. A request naming a session it did not open → 404.
- with ``--stateless`` (the 2026-07-28 revision): every POST on its own, no
  session; the result tagged ``resultType: "complete"`` and carrying the
  server's info in its ``_meta``, as the SDK's stateless mode answers.

What it leaves out is everything a server adds to the query and the
protocol's framing: no framework (no Quart, no Starlette), no token, no
permission check, no schema validation beyond the arguments' types, no
audit, no session supervisor. It is the floor an MCP server on agentws's
stack (Hypercorn's trio worker, trio) can approach: the bench holds
agentws's server CPU per call to a share above it. Hypercorn is configured
as ``agentws serve`` configures it, and the objects made at start are
frozen out of the collector's reach as agentws does once it serves.

Run: ``python plain_handler.py --database PATH [--library SLUG] [--stateless]``.
It binds 127.0.0.1 on a free port, prints one JSON line ``{"base_url": ...}``
on stdout (the MCP endpoint is ``base_url + MCP_PATH``: :func:`start` adds
it), and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import secrets
import sqlite3
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.hypercorn_loopback import loopback_config, serve_on_loopback
from benchlib.mcp_client import PROTOCOL_VERSION
from benchlib.procs import Child, Processes, start_server
from benchlib.search import format_results, search

__all__ = ["MCP_PATH", "PlainHandler", "start"]

MCP_PATH = "/mcp"
_TOOL = "search_context"
# The revisions an initialize may name and get back; any other gets the newest.
_VERSIONS = frozenset({PROTOCOL_VERSION, "2025-06-18", "2025-03-26", "2024-11-05"})
# The bounds the reference's tool schema sets on its arguments.
_MAX_QUERY_CHARS = 1000
_MAX_LIMIT = 20
# A search_context request is a few hundred bytes; anything past this is not one.
_MAX_BODY_BYTES = 1 << 20
# Sessions held at once; the load opens one per client worker. Beyond: 503.
_MAX_SESSIONS = 10_000
_START_TIMEOUT_S = 30.0
_SERVER_INFO = {"name": "agentws-bench-plain-handler", "version": "1"}
# What a 2026-07-28 result carries beside the tool's (the revision has no initialize
# to tell it once); the key is mcp_types.SERVER_INFO_META_KEY, not imported: no SDK here.
_STATELESS_TAGS = {
    "resultType": "complete",
    "_meta": {"io.modelcontextprotocol/serverInfo": _SERVER_INFO},
}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class _BadRequest(Exception):
    """A request the handler answers with a JSON-RPC error (HTTP ``status``)."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@attrs.define(eq=False)
class PlainHandler:
    """The ASGI app: ``search_context`` over ``database``, stateful or stateless."""

    database: Path
    library: str
    stateless: bool
    _sessions: set[str] = attrs.field(factory=set, init=False)
    _local: threading.local = attrs.field(factory=threading.local, init=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] != MCP_PATH:
            await _respond(send, 404)
            return
        session = _header(scope, b"mcp-session-id")
        if scope["method"] == "DELETE" and not self.stateless:
            known = session in self._sessions
            self._sessions.discard(session or "")
            await _respond(send, 200 if known else 404)
            return
        if scope["method"] != "POST":
            await _respond(send, 405)
            return
        body = await _read_body(receive)
        message: Any = None
        try:
            if body is None:
                raise _BadRequest(413, -32600, "body too large")
            message = _parse(body)
            status, answer, headers = await self._answer(message, session)
        except _BadRequest as exc:
            request_id = message.get("id") if isinstance(message, dict) else None
            error = {"code": exc.code, "message": str(exc)}
            status, headers = exc.status, []
            answer = {"jsonrpc": "2.0", "id": request_id, "error": error}
        await _respond(send, status, _encode(answer) if answer is not None else b"", headers)

    async def _answer(
        self, message: dict[str, Any], session: str | None
    ) -> tuple[int, dict[str, Any] | None, list[tuple[bytes, bytes]]]:
        """The HTTP status, JSON-RPC answer (None: a notification's 202) and extra headers."""
        method = message.get("method")
        if "id" not in message:
            return 202, None, []
        headers: list[tuple[bytes, bytes]] = []
        if method == "initialize" and not self.stateless:
            if len(self._sessions) >= _MAX_SESSIONS:
                raise _BadRequest(503, -32603, "too many sessions")
            session = secrets.token_hex(16)
            self._sessions.add(session)
            headers.append((b"mcp-session-id", session.encode()))
            result = _initialize_result(message.get("params"))
        elif not self.stateless and session not in self._sessions:
            # As the SDK answers: no session named is 400, an unknown one 404.
            raise _BadRequest(404 if session else 400, -32600, "no such session")
        elif method == "tools/call":
            result = await self._call_tool(message.get("params"))
        elif method == "ping":
            result = {}
        else:
            raise _BadRequest(200, -32601, f"method not found: {method!r}")
        if self.stateless:
            result.update(_STATELESS_TAGS)
        return 200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, headers

    async def _call_tool(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or params.get("name") != _TOOL:
            raise _BadRequest(200, -32602, f"unknown tool; this server has {_TOOL!r}")
        arguments = params.get("arguments")
        query = arguments.get("query") if isinstance(arguments, dict) else None
        limit = arguments.get("limit", 5) if isinstance(arguments, dict) else None
        if not isinstance(query, str) or not 1 <= len(query) <= _MAX_QUERY_CHARS:
            raise _BadRequest(200, -32602, "'query' must be a string of 1 to 1000 characters")
        if type(limit) is not int or not 1 <= limit <= _MAX_LIMIT:
            raise _BadRequest(200, -32602, "'limit' must be an integer from 1 to 20")
        return await trio.to_thread.run_sync(self._search, query, limit)

    def _search(self, query: str, limit: int) -> dict[str, Any]:
        """In a worker thread: the query on this thread's connection, and its result."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)
            self._local.conn = conn
        text, structured = format_results(query, search(conn, query, limit), self.library)
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }


def _initialize_result(params: Any) -> dict[str, Any]:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    return {
        "protocolVersion": asked if asked in _VERSIONS else PROTOCOL_VERSION,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": _SERVER_INFO,
    }


def _parse(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _BadRequest(400, -32700, "not JSON") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise _BadRequest(400, -32600, "not a JSON-RPC 2.0 message")
    return message


def _encode(answer: dict[str, Any]) -> bytes:
    # Compact, as the SDK's pydantic dump is: the same bytes on the wire for the client.
    return json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body; None when it runs past ``_MAX_BODY_BYTES``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] != "http.request":  # http.disconnect: nothing more is coming
            break
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > _MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not event.get("more_body"):
            break
    return b"".join(chunks)


async def _respond(
    send: Send, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    fields = [(b"content-length", str(len(body)).encode())]
    if body:
        fields.append((b"content-type", b"application/json"))
    fields += headers or []
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    # Answered, so Hypercorn does not log the app as one without lifespan support.
    while True:
        event = await receive()
        if event["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def start(
    procs: Processes, name: str, database: Path, library: str, *, stateless: bool
) -> tuple[Child, str]:
    """Start the floor on ``database`` as a child of ``procs``; the child and its MCP URL.

    :raises benchlib.procs.BenchError: it did not start or does not answer.
    """
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--database",
        str(database),
        "--library",
        library,
    ]
    if stateless:
        argv.append("--stateless")
    # Polled at its root, which answers 404.
    child, line = start_server(procs, name, argv, timeout_s=_START_TIMEOUT_S)
    return child, str(line["base_url"]) + MCP_PATH


async def _serve(handler: PlainHandler) -> None:
    # As agentws.server.hypercorn_config sets it (75 s keep-alive), on a free loopback port.
    config = loopback_config(keep_alive_timeout=75, graceful_timeout=2)
    await serve_on_loopback(handler, config, on_bound=gc.freeze)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--database", type=Path, required=True, help="a copy of the benchmark's agentws database"
    )
    parser.add_argument("--library", default="handbook", help="library slug used in URIs")
    parser.add_argument(
        "--stateless", action="store_true", help="the 2026-07-28 revision: no session"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    trio.run(_serve, PlainHandler(args.database, args.library, args.stateless))


if __name__ == "__main__":
    main()
