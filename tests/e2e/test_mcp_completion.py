"""``completion/complete``: prompt arguments from SKILL.md, template variables from the group."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
import trio

from agentws import libraries
from tests.e2e.mcp_support import ACTOR, REQUEST_S, running, sdk_session
from tests.e2e.test_skill_arguments import add_review_skill

DOCUMENT = types.ResourceTemplateReference(
    type="ref/resource", uri="agentws://{library}/{document}"
)
LINES = types.ResourceTemplateReference(
    type="ref/resource", uri="agentws://{library}/{document}{?lines}"
)


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_prompt_arguments_and_template_variables_complete(
    tmp_path: Path, transport: str
) -> None:
    async with running(tmp_path) as server:
        await add_review_skill(server.store, tmp_path)
        await libraries.create_library(server.store, "acme", "howtos", name="How-tos", actor=ACTOR)
        await libraries.attach_library(server.store, "acme", "ops", "howtos", actor=ACTOR)
        await libraries.add_document(
            server.store,
            "acme",
            "howtos",
            slug="release",
            title="Release",
            body="# Release\n",
            mime_type="text/markdown",
            policy="spine",
            actor=ACTOR,
        )
        async with sdk_session(server, transport) as session:
            assert session.server_capabilities is not None
            assert session.server_capabilities.completions is not None

            async def complete(
                ref: types.PromptReference | types.ResourceTemplateReference,
                name: str,
                value: str,
                context: dict[str, str] | None = None,
            ) -> list[str]:
                with trio.fail_after(REQUEST_S):
                    done = await session.complete(ref, {"name": name, "value": value}, context)
                return done.completion.values

            review = types.PromptReference(type="ref/prompt", name="review")
            assert await complete(review, "language", "") == ["python", "go", "typescript"]
            assert await complete(review, "language", "G") == ["go"]
            assert await complete(review, "language", "script") == ["typescript"]
            assert await complete(review, "focus", "sec") == ["security"]
            # Nothing declared, an unknown argument or prompt: no values, no error.
            triage = types.PromptReference(type="ref/prompt", name="triage")
            assert await complete(triage, "anything", "") == []
            assert await complete(review, "nope", "") == []
            unknown = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
            assert await complete(unknown, "arg1", "test") == []

            for template in (DOCUMENT, LINES):
                assert await complete(template, "library", "") == ["handbook", "howtos"]
                assert await complete(template, "library", "how") == ["howtos"]
                # The `never` document is no resource, so no value either.
                assert await complete(template, "document", "") == [
                    "refunds",
                    "onboarding",
                    "release",
                ]
                assert await complete(template, "document", "", {"library": "howtos"}) == [
                    "release"
                ]
                assert await complete(template, "lines", "1") == []
            other = types.ResourceTemplateReference(type="ref/resource", uri="file:///{path}")
            assert await complete(other, "path", "") == []
