"""What a group endpoint answers about prompts: its libraries' skills.

- ``prompts/list``: every skill of the group's libraries, named by its slug
  (qualified ``<library>.<skill>`` when two libraries have the same slug),
  with the arguments its ``SKILL.md`` declares;
- ``prompts/get``: the skill's prompt with the arguments put in (see
  :mod:`agentws.libraries.arguments`), then its assets as embedded
  resources; a required argument left out is INVALID_PARAMS naming it.
"""

from __future__ import annotations

from typing import Any

import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from agentws.domain.models import Group, Library, Skill
from agentws.libraries.arguments import missing_arguments, render_prompt
from agentws.store import Store

__all__ = ["Prompts", "named_skills"]

Context = ServerRequestContext[Any]


async def named_skills(store: Store, group: Group) -> dict[str, tuple[Library, Skill]]:
    """The group's skills by prompt name: the slug, qualified by library on a clash."""
    libraries = {library.id: library for library in await store.group_libraries(group.id)}
    named: dict[str, tuple[Library, Skill]] = {}
    for skill in await store.group_skills(group.id):
        library = libraries.get(skill.library_id)
        if library is None:
            continue
        name = skill.slug if skill.slug not in named else f"{library.slug}.{skill.slug}"
        named[name] = (library, skill)
    return named


def _prompt(name: str, skill: Skill) -> types.Prompt:
    return types.Prompt(
        name=name,
        title=skill.slug,
        description=skill.description,
        arguments=[
            types.PromptArgument(
                name=argument.name,
                description=argument.description or None,
                required=argument.required,
            )
            for argument in skill.arguments
        ],
    )


@attrs.frozen
class Prompts:
    """The prompt handlers of the group endpoint, reading ``store``."""

    store: Store

    async def list(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        named = await named_skills(self.store, ctx.lifespan_context.caller.group)
        return types.ListPromptsResult(
            prompts=[_prompt(name, skill) for name, (_, skill) in named.items()]
        )

    async def get(
        self, ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        found = (await named_skills(self.store, ctx.lifespan_context.caller.group)).get(params.name)
        if found is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Unknown prompt {params.name!r}: prompts/list shows this group's skills",
            )
        library, skill = found
        missing = missing_arguments(skill.arguments, params.arguments)
        if missing:
            raise MCPError(
                types.INVALID_PARAMS,
                f"prompt {params.name!r} needs the argument(s) {', '.join(missing)}: "
                "prompts/list shows what each one is",
                {"missing": missing},
            )
        text = render_prompt(skill.prompt, skill.arguments, params.arguments)
        messages = [
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ]
        for asset in skill.assets:
            messages.append(
                types.PromptMessage(
                    role="user",
                    content=types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri=f"agentws://{library.slug}/skills/{skill.slug}/{asset.name}",
                            mime_type=asset.mime_type,
                            text=asset.text,
                        ),
                    ),
                )
            )
        return types.GetPromptResult(description=skill.description, messages=messages)
