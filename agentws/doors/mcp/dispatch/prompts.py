"""What a group endpoint answers about prompts: its libraries' skills.

- ``prompts/list``: every skill of the group's libraries, named by its slug
  (qualified ``<library>.<skill>`` when two libraries have the same slug),
  with the arguments its ``SKILL.md`` declares; then the prompts of the
  group's remote MCP connectors, named ``<connector>_<prompt>``
  (:mod:`agentws.connectors.remote_content`; a skill keeps a name both have);
- ``prompts/get``: the skill's prompt with the arguments put in (see
  :mod:`agentws.libraries.arguments`), then its assets as embedded
  resources; a required argument left out is INVALID_PARAMS naming it. A
  remote prompt is got from its remote, whose answer is passed on; what the
  remote asks first reaches the client as its era takes it
  (:mod:`agentws.doors.mcp.relay.remote_rounds`).
"""

from __future__ import annotations

from typing import Any

import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from agentws.connectors.remote_content import RemoteContent, RemotePrompt
from agentws.domain.models import Group, Library, Skill
from agentws.doors.mcp.relay.passthrough import StateSeal
from agentws.doors.mcp.relay.remote_rounds import relayed
from agentws.libraries.arguments import missing_arguments, render_prompt
from agentws.store.sql_catalog import CatalogStore
from agentws.tools.caller_channel import CallerChannel

__all__ = ["Prompts", "named_skills", "remote_prompts"]

Context = ServerRequestContext[Any]


async def named_skills(store: CatalogStore, group: Group) -> dict[str, tuple[Library, Skill]]:
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


async def remote_prompts(
    store: CatalogStore, remote: RemoteContent, group: Group
) -> dict[str, RemotePrompt]:
    """The group's remote prompts by name, but for names its skills have."""
    skills = await named_skills(store, group)
    return {
        name: found for name, found in (await remote.prompts(group)).items() if name not in skills
    }


@attrs.frozen
class Prompts:
    """The prompt handlers of the group endpoint, reading ``store`` and ``remote``.

    ``seal`` seals a remote's ``requestState`` for a 2026-07-28 caller.
    """

    store: CatalogStore
    remote: RemoteContent
    seal: StateSeal

    async def list(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        group = ctx.lifespan_context.caller.group
        named = await named_skills(self.store, group)
        prompts = [_prompt(name, skill) for name, (_, skill) in named.items()]
        prompts.extend(
            found.prompt.model_copy(update={"name": name})
            for name, found in (await self.remote.prompts(group)).items()
            if name not in named
        )
        return types.ListPromptsResult(prompts=prompts)

    async def get(
        self, ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        group = ctx.lifespan_context.caller.group
        found = (await named_skills(self.store, group)).get(params.name)
        if found is None:
            remote = (await self.remote.prompts(group)).get(params.name)
            if remote is not None:
                return await self._get_remote(ctx, remote, params)
            raise MCPError(
                types.INVALID_PARAMS,
                f"Unknown prompt {params.name!r}: prompts/list shows this group's prompts",
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

    async def _get_remote(
        self, ctx: Context, found: RemotePrompt, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        arguments = params.arguments

        async def send(channel: CallerChannel) -> types.GetPromptResult | types.InputRequiredResult:
            return await self.remote.get_prompt(found, arguments, channel)

        return await relayed(
            ctx,
            self.seal,
            found.connector,
            f"prompts/get {found.prompt.name}",
            params,
            arguments or {},
            send,
        )
