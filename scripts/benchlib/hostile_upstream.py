"""A remote MCP server whose tools have hostile input schemas, for ``scripts/bench gateway``.

Its three tools are the red team's finding: ``unique`` (``uniqueItems`` over
an array of objects, quadratic in a naive validator), ``pattern``
(``^(a+)+$``, exponential in a backtracking engine) and ``branches``
(combinators that apply 2**40 schemas to one value). They never run: the
calls the benchmark sends are refused by agentws's argument check or its
approval queue. Served like :mod:`benchlib.gateway_upstream`; the tests of
hostile schemas (``tests/e2e/test_hostile_schemas.py``) list the same tools.

Run: ``python hostile_upstream.py``. It binds 127.0.0.1 on a free port,
prints one JSON line ``{"base_url": ..., "url": ...}`` and serves until
SIGTERM/SIGINT.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.uvicorn_loopback import serve_on_loopback

MCP_PATH = "/mcp"


def branching(depth: int) -> dict[str, Any]:
    """An object schema whose ``v`` is checked against 2**depth schemas (each level twice)."""
    defs: dict[str, Any] = {}
    for level in range(depth):
        deeper = {"$ref": f"#/$defs/l{level + 1}"} if level + 1 < depth else {"type": "string"}
        defs[f"l{level}"] = {"anyOf": [deeper, {"allOf": [deeper, {"minLength": 0}]}]}
    return {"type": "object", "properties": {"v": {"$ref": "#/$defs/l0"}}, "$defs": defs}


TOOLS = [
    types.Tool(
        name="unique",
        description="Arrays of distinct things",
        input_schema={
            "type": "object",
            "properties": {"items": {"type": "array", "uniqueItems": True}},
        },
    ),
    types.Tool(
        name="pattern",
        description="Catastrophic backtracking",
        input_schema={
            "type": "object",
            "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}},
        },
    ),
    types.Tool(name="branches", description="Branching combinators", input_schema=branching(40)),
]
#: The arguments the benchmark's client sends to each tool, in turn.
PAYLOADS: dict[str, dict[str, Any]] = {
    "unique": {"items": [{"n": n, "k": f"v{n}"} for n in range(30_000)]},
    "pattern": {"q": "a" * 40 + "!"},
    "branches": {"v": 5},
}


def make_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    return Server("agentws-bench-hostile", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    app = make_server().streamable_http_app(streamable_http_path=MCP_PATH)
    serve_on_loopback(app, lambda base: {"url": base + MCP_PATH})


if __name__ == "__main__":
    main()
