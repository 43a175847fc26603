"""The reference for ``scripts/bench mcp``: the ``mcp`` SDK's ``MCPServer`` on uvicorn.

It serves one tool, ``search_context(query, limit)``, equivalent to
agentws's built-in: it searches a copy of the benchmark's agentws database
(the same documents, the same FTS5 index) with agentws's search SQL less
the group-visibility joins (see :mod:`benchlib.search`), and returns the
same result (a text listing plus ``structuredContent.results``). What it
does not do is what agentws adds on top: bearer-token authentication,
resolving the group and its libraries, the permission check, the audit
record, the session supervisor.

The SQL runs in the SDK's worker threads (``MCPServer`` runs a sync tool
function with ``anyio.to_thread.run_sync``), one read-only connection per
thread: what a careful hand-written server would do.

With ``--stateless`` the app is made with ``stateless_http=True``: the
SDK's own stateless mode, whose session manager serves a request naming a
stateless revision (2026-07-28) with its single-exchange handler.

Run: ``python reference_server.py --database PATH [--library SLUG] [--json-response]
[--stateless]``.
It binds 127.0.0.1 on a free port, prints one JSON line
``{"base_url": ..., "url": ...}`` on stdout, and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import Field

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.search import format_results, search
from benchlib.uvicorn_loopback import serve_on_loopback

MCP_PATH = "/mcp"


def make_server(database: Path, library: str) -> MCPServer:
    """An ``MCPServer`` with ``search_context`` over the documents in ``database``."""
    local = threading.local()
    uri = f"file:{database}?mode=ro"

    def connection() -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            local.conn = conn
        return conn

    server = MCPServer("agentws-bench-reference", log_level="WARNING")

    @server.tool(
        title="Search context documents",
        description=(
            "Full-text search over this group's context documents. Returns the best "
            "matches, each with its URI, title and a snippet; read one in full with "
            "read_context_document."
        ),
    )
    def search_context(
        query: Annotated[
            str, Field(min_length=1, max_length=1000, description="Words to look for.")
        ],
        limit: Annotated[int, Field(ge=1, le=20, description="How many results to return.")] = 5,
    ) -> CallToolResult:
        hits = search(connection(), query, limit)
        text, structured = format_results(query, hits, library)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured
        )

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database", type=Path, required=True, help="a copy of the benchmark's agentws database"
    )
    parser.add_argument("--library", default="handbook", help="library slug used in URIs")
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="answer POSTs with application/json instead of the SDK default, an SSE stream",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="the SDK's stateless mode (stateless_http=True), for the 2026-07-28 revision",
    )
    args = parser.parse_args()
    server = make_server(args.database, args.library)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=args.json_response,
        stateless_http=args.stateless,
        host="127.0.0.1",
    )
    serve_on_loopback(app, lambda base: {"url": base + MCP_PATH})


if __name__ == "__main__":
    main()
