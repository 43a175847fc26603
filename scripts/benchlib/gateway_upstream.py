"""The upstream of ``scripts/bench gateway``: the ``mcp`` SDK's ``MCPServer`` with an ``echo`` tool.

One tool, ``echo(text)``, which returns ``text``: the cheapest call a
remote MCP server can serve, so what a gateway adds in front of it shows.
Served over Streamable HTTP on uvicorn the way the SDK serves by default:
stateful sessions, each POST answered with a short ``text/event-stream``
(``--json-response`` answers ``application/json`` instead). Every gateway
of the benchmark and the direct client call this same process.

Run: ``python gateway_upstream.py [--json-response]``. It binds 127.0.0.1
on a free port, prints one JSON line ``{"base_url": ..., "url": ...}`` on
stdout, and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.uvicorn_loopback import serve_on_loopback

MCP_PATH = "/mcp"


def make_server() -> MCPServer:
    """An ``MCPServer`` with one read-only tool, ``echo``."""
    server = MCPServer("agentws-bench-upstream", log_level="WARNING")

    @server.tool(
        title="Echo",
        description="Returns the text it is given.",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    def echo(text: Annotated[str, Field(max_length=10_000, description="What to echo.")]) -> str:
        return text

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="answer POSTs with application/json instead of the SDK default, an SSE stream",
    )
    args = parser.parse_args()
    app = make_server().streamable_http_app(
        streamable_http_path=MCP_PATH, json_response=args.json_response, host="127.0.0.1"
    )
    serve_on_loopback(app, lambda base: {"url": base + MCP_PATH})


if __name__ == "__main__":
    main()
