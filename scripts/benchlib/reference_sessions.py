"""The reference of ``scripts/bench sessions``: the ``mcp`` SDK's ``MCPServer``, both transports.

The same server ``scripts/bench mcp`` measures (:func:`benchlib.reference_server.make_server`:
``MCPServer`` with one tool, ``search_context``), on uvicorn, serving both
transports agentws serves, each as the SDK builds it:

- Streamable HTTP at ``/mcp``: ``streamable_http_app(json_response=True)``
  (the format agentws answers POSTs in; the ``mcp`` mode's default), its
  session manager with the SDK's defaults (10,000 sessions at most, 30 min
  idle timeout); a ``GET`` with ``Mcp-Session-Id`` opens the session's stream;
- legacy HTTP+SSE (2024-11-05) at ``/sse`` (``GET``, the stream) and
  ``/messages/`` (the POSTs): ``sse_app()``.

No authentication, no audit, no per-token accounting: the SDK has none.

Run: ``python reference_sessions.py --database PATH [--library SLUG]``. It
binds 127.0.0.1 on a free port, prints one JSON line ``{"base_url": ...,
"url": ..., "sse_url": ...}`` on stdout, and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path

import uvicorn

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.reference_server import MCP_PATH, make_server

SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database", type=Path, required=True, help="a copy of the benchmark's agentws database"
    )
    parser.add_argument("--library", default="handbook", help="library slug used in URIs")
    args = parser.parse_args()
    server = make_server(args.database, args.library)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, json_response=True, host="127.0.0.1"
    )
    # The legacy routes on the same app (and so under its lifespan, which runs
    # the Streamable HTTP session manager; the SSE transport needs none).
    legacy = server.sse_app(sse_path=SSE_PATH, message_path=MESSAGES_PATH, host="127.0.0.1")
    app.router.routes.extend(legacy.routes)
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only when
    # their proto says TCP. Without it, uvicorn's response headers and body go out
    # as two segments and the body waits for the client's delayed ACK: about 40 ms
    # on every request that follows another on the same connection.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
    )
    base_url = f"http://127.0.0.1:{port}"
    document = {"base_url": base_url, "url": base_url + MCP_PATH, "sse_url": base_url + SSE_PATH}
    print(json.dumps(document), flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
