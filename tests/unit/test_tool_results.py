"""Tool results agentws makes itself: one text block, a tool error flagged ``isError``."""

from __future__ import annotations

from agentws.domain.tool_results import tool_error, tool_text


def test_a_tool_error_is_one_text_block_flagged_as_an_error() -> None:
    result = tool_error("github_get_issue: HTTP 404 from the upstream")
    assert result.model_dump(by_alias=True, mode="json", exclude_none=True) == {
        "content": [{"type": "text", "text": "github_get_issue: HTTP 404 from the upstream"}],
        "isError": True,
        "resultType": "complete",
    }


def test_a_tool_error_may_carry_data() -> None:
    result = tool_error("busy did not run: full.", {"status": "over_capacity"})
    assert result.is_error and result.structured_content == {"status": "over_capacity"}


def test_a_text_result_is_no_error() -> None:
    result = tool_text("3 documents", {"results": [1, 2, 3]})
    assert not result.is_error
    assert result.structured_content == {"results": [1, 2, 3]}
    assert [block.text for block in result.content if block.type == "text"] == ["3 documents"]
