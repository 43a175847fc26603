"""Resource templates: documents by library and slug, whole or some of their lines.

``resources/templates/list`` answers (the MCP Inspector asks whenever
resources are advertised) with the two templates, and ``resources/read``
resolves URIs made from them, over both transports.
"""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPError

from tests.e2e.mcp_support import HANDBOOK_DOCS, REQUEST_S, running, sdk_session

REFUNDS_BODY = HANDBOOK_DOCS["refunds"][1]


async def _read(session: object, uri: str) -> types.TextResourceContents:
    read = await session.read_resource(uri)  # type: ignore[attr-defined]
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    return contents


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_templates_are_listed_and_read(tmp_path: Path, transport: str) -> None:
    async with running(tmp_path) as server, sdk_session(server, transport) as session:
        with trio.fail_after(REQUEST_S):
            listed = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in listed] == [
                "agentws://{library}/{document}",
                "agentws://{library}/{document}{?lines}",
            ]
            assert all(t.title and t.description for t in listed)

            whole = await _read(session, "agentws://handbook/refunds")
            assert whole.text == REFUNDS_BODY
            lines = REFUNDS_BODY.splitlines(keepends=True)
            for query, expected in (
                ("1", lines[0]),
                ("1-2", "".join(lines[:2])),
                ("3-", "".join(lines[2:])),
                ("2-1000", "".join(lines[1:])),
            ):
                uri = f"agentws://handbook/refunds?lines={query}"
                part = await _read(session, uri)
                assert part.text == expected, query
                assert str(part.uri) == uri
                assert part.mime_type == "text/markdown"

            for uri in ("agentws://handbook/refunds?lines=0", "agentws://handbook/refunds?x=1"):
                with pytest.raises(MCPError) as bad:
                    await session.read_resource(uri)
                assert bad.value.code == types.INVALID_PARAMS
                assert "lines" in bad.value.message
            with pytest.raises(MCPError) as missing:
                await session.read_resource("agentws://handbook/salaries?lines=1-2")
            assert missing.value.code == -32002


async def test_search_results_link_to_resources(tmp_path: Path) -> None:
    async with running(tmp_path) as server, sdk_session(server, "streamable") as session:
        with trio.fail_after(REQUEST_S):
            found = await session.call_tool("search_context", {"query": "refund"})
            text, *links = found.content
            assert isinstance(text, types.TextContent)
            assert "agentws://handbook/refunds" in text.text
            assert links == [
                types.ResourceLink(
                    type="resource_link",
                    uri="agentws://handbook/refunds",
                    name="refunds",
                    title="Refund policy",
                    mime_type="text/markdown",
                )
            ]
            # A link is read as a resource.
            assert (await _read(session, str(links[0].uri))).text == REFUNDS_BODY
            nothing = await session.call_tool("search_context", {"query": "xylophone"})
            assert [c.type for c in nothing.content] == ["text"]
