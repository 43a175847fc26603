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
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.reference_server import MCP_PATH, make_server
from benchlib.uvicorn_loopback import serve_on_loopback

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
    serve_on_loopback(app, lambda base: {"url": base + MCP_PATH, "sse_url": base + SSE_PATH})


if __name__ == "__main__":
    main()
