"""Skills with arguments, as MCP prompts: listed with their arguments, filled in on get.

The arguments come from SKILL.md's front matter and are kept in the store
(both stores: migration 0016 adds the column).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPError

from agentws import libraries
from agentws.store.union import Store
from tests.e2e.mcp_support import ACTOR, REQUEST_S, running, sdk_session
from tests.support import migrated_schema_sync

REVIEW = """---
name: review
description: Review a change
arguments:
  - name: language
    description: The language the change is written in
    required: true
    enum: [python, go, typescript]
  - name: focus
    description: What to look at most
    examples: [security, performance]
---
Review this {{language}} change.{{ focus }} Keep {{unknown}} as it is.
"""


async def add_review_skill(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "review"
    folder.mkdir()
    (folder / "SKILL.md").write_text(REVIEW)
    await libraries.add_skill(store, "acme", "handbook", folder, actor=ACTOR)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'skills.db'}"
    else:
        with migrated_schema_sync() as url:
            yield url


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_prompt_arguments_are_listed_required_and_filled_in(
    tmp_path: Path, transport: str, database_url: str
) -> None:
    async with running(tmp_path, database_url=database_url) as server:
        await add_review_skill(server.store, tmp_path)
        async with sdk_session(server, transport) as session:
            with trio.fail_after(REQUEST_S):
                prompts = {p.name: p for p in (await session.list_prompts()).prompts}
                assert prompts["triage"].arguments == []
                assert prompts["review"].arguments == [
                    types.PromptArgument(
                        name="language",
                        description="The language the change is written in",
                        required=True,
                    ),
                    types.PromptArgument(
                        name="focus", description="What to look at most", required=False
                    ),
                ]

                got = await session.get_prompt("review", {"language": "go"})
                (message,) = got.messages
                assert isinstance(message.content, types.TextContent)
                assert message.content.text == ("Review this go change. Keep {{unknown}} as it is.")
                both = await session.get_prompt("review", {"language": "go", "focus": " Fast?"})
                assert isinstance(both.messages[0].content, types.TextContent)
                assert "go change. Fast? Keep" in both.messages[0].content.text

                for arguments in (None, {"focus": "security"}, {"language": ""}):
                    with pytest.raises(MCPError) as missing:
                        await session.get_prompt("review", arguments)
                    assert missing.value.code == types.INVALID_PARAMS
                    assert "language" in missing.value.message
