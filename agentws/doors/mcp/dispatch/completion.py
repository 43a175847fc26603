"""What a group endpoint answers to ``completion/complete``.

Two kinds of reference are completed:

- a prompt's argument (``ref/prompt``): the values its skill declares
  (``enum`` or ``examples`` in ``SKILL.md``), or none;
- a resource template's variable (``ref/resource`` with one of
  :mod:`agentws.doors.mcp.dispatch.resources`' templates): ``library`` from the group's
  library slugs, ``document`` from its document slugs (of the library
  already chosen, when the client says which in ``context.arguments``).

A prompt or template of a remote MCP connector
(:mod:`agentws.connectors.remote_content`) is completed by its remote, whose
answer is passed on.

Values that start with what the client typed come first, then those that
contain it; at most :data:`MAX_VALUES` are sent, with ``total`` and
``hasMore``. A reference the group does not have gets no values rather than
an error: completion is a hint, and an empty answer tells nothing away.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from agentws.connectors.remote_content import RemoteContent
from agentws.connectors.remote_mcp import RemoteError
from agentws.doors.mcp.dispatch.prompts import named_skills, remote_prompts
from agentws.doors.mcp.dispatch.resources import DOCUMENT_TEMPLATE, LINES_TEMPLATE
from agentws.doors.mcp.relay.remote_rounds import remote_failure
from agentws.store.sql_catalog import CatalogStore

__all__ = ["MAX_VALUES", "Completions", "rank"]

#: The most values one completion may carry (the MCP specification's limit).
MAX_VALUES = 100

Context = ServerRequestContext[Any]


def rank(values: Iterable[str], typed: str) -> list[str]:
    """``values`` that match ``typed`` (case-insensitively): prefixes first, then the rest."""
    needle = typed.casefold()
    starts: list[str] = []
    contains: list[str] = []
    seen: set[str] = set()
    for value in values:
        if value in seen:
            continue
        seen.add(value)
        folded = value.casefold()
        if folded.startswith(needle):
            starts.append(value)
        elif needle in folded:
            contains.append(value)
    return starts + contains


def _completion(values: list[str]) -> types.CompleteResult:
    return types.CompleteResult(
        completion=types.Completion(
            values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES
        )
    )


@attrs.frozen
class Completions:
    """The completion handler of the group endpoint, reading ``store`` and ``remote``."""

    store: CatalogStore
    remote: RemoteContent

    async def complete(
        self, ctx: Context, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref, argument = params.ref, params.argument
        relayed = await self._remote(ctx, params)
        if relayed is not None:
            return relayed
        if isinstance(ref, types.PromptReference):
            candidates = await self._prompt_values(ctx, ref.name, argument.name)
        else:
            context = params.context.arguments if params.context else None
            candidates = await self._template_values(ctx, ref.uri, argument.name, context or {})
        return _completion(rank(candidates, argument.value))

    async def _remote(
        self, ctx: Context, params: types.CompleteRequestParams
    ) -> types.CompleteResult | None:
        """The remote's completion, when ``params.ref`` is a remote connector's; else None."""
        group = ctx.lifespan_context.caller.group
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            found = (await remote_prompts(self.store, self.remote, group)).get(ref.name)
            if found is None:
                return None
            connector = found.connector
            ref = ref.model_copy(update={"name": found.prompt.name})
        elif ref.uri in (DOCUMENT_TEMPLATE, LINES_TEMPLATE):
            return None
        else:
            owner = await self.remote.owner_of_template(group, ref.uri)
            if owner is None:
                return None
            connector = owner
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context else None
        try:
            return await self.remote.complete(connector, ref, argument, context)
        except (RemoteError, MCPError) as exc:
            raise remote_failure(exc) from None

    async def _prompt_values(self, ctx: Context, prompt: str, name: str) -> list[str]:
        found = (await named_skills(self.store, ctx.lifespan_context.caller.group)).get(prompt)
        if found is None:
            return []
        _, skill = found
        for declared in skill.arguments:
            if declared.name == name:
                return list(declared.values)
        return []

    async def _template_values(
        self, ctx: Context, template: str, name: str, context: dict[str, str]
    ) -> list[str]:
        if template not in (DOCUMENT_TEMPLATE, LINES_TEMPLATE):
            return []
        group = ctx.lifespan_context.caller.group
        libraries = {lib.id: lib for lib in await self.store.group_libraries(group.id)}
        if name == "library":
            return [lib.slug for lib in libraries.values()]
        if name != "document":
            return []
        chosen = context.get("library")
        return [
            doc.slug
            for doc in await self.store.group_documents(group.id)
            if doc.library_id in libraries
            and (chosen is None or libraries[doc.library_id].slug == chosen)
        ]
