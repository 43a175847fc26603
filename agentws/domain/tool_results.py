"""The tool results agentws makes itself: a text, or a tool error the caller can act on.

A tool error (``isError``) is an answer, not a failure of the call: the
model (and the person) reads why the tool did not do what was asked. Every
door and runner that refuses or reports a call makes it here, so each
reads the same way: one text block, and ``structuredContent`` when there
is data to give too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports modules that import this one; mcp_types is heavy to load
    import mcp_types as types

__all__ = ["tool_error", "tool_text"]


def tool_text(
    text: str, structured: dict[str, Any] | None = None, *, is_error: bool = False
) -> types.CallToolResult:
    """A result of one text block (and ``structured`` as its ``structuredContent``)."""
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


def tool_error(text: str, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    """A tool error saying ``text``: why the tool did not do what was asked."""
    return tool_text(text, structured, is_error=True)
