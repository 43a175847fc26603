"""The tool catalog: what a group offers, from the persisted tool cache plus built-ins.

``tools/list`` is answered from here and never waits on a remote server:
connector tools come from the cache table (filled by connector refreshes),
named ``<connector>_<action>``; the context built-ins are offered when the
group has a library. Each tool states its capability twice: as MCP
annotations for clients that read them, and as a tag at the start of its
description for 2024-11-05 clients, which have no annotations.

:class:`Catalog` keeps each group's built list in memory and reuses it while
the store's catalog version (a counter its triggers move with every change
to connectors, their tools and attachments, and library attachments) stands
still: a listing then costs one small read instead of a join and a rebuild,
and a change made by any process is seen on the next listing.
"""

from __future__ import annotations

from typing import Any

import attrs

from agentws.domain.models import Group
from agentws.store import Store
from agentws.tools.builtins import BUILTINS
from agentws.tools.spec import ToolSpec

__all__ = ["Catalog", "GroupTools", "ToolSpec", "group_tool", "group_tools"]

# Groups whose lists are kept; beyond it the least recently built is dropped.
_MAX_GROUPS = 1000


@attrs.frozen(eq=False)
class GroupTools:
    """A group's tools as of one catalog version. Replaced, never changed."""

    tools: tuple[ToolSpec, ...]
    by_name: dict[str, ToolSpec]
    version: int
    #: Renderings of the list made by doors (the MCP listing), built once per list.
    renderings: dict[str, Any] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Catalog:
    """Every group's tools, rebuilt only when the catalog version moves.

    Args:
        store: where the cache and the version live.
    """

    store: Store
    _groups: dict[str, GroupTools] = attrs.field(factory=dict, init=False)
    # The last catalog version read, and the store's data version just before.
    _version_seen: int = attrs.field(default=-1, init=False)
    _version_seen_at: int | None = attrs.field(default=None, init=False)

    async def tools(self, group: Group) -> GroupTools:
        """The group's tools as of now.

        Error handling:
            StoreError from the store, as for any read.
        """
        # Read before the list: a change committed in between makes the entry
        # stale at the next call, never wrongly fresh.
        version = await self._version()
        cached = self._groups.get(group.id)
        if cached is not None and cached.version == version:
            return cached
        tools = await group_tools(self.store, group)
        built = GroupTools(tuple(tools), {tool.name: tool for tool in tools}, version)
        self._groups.pop(group.id, None)
        if len(self._groups) >= _MAX_GROUPS:
            del self._groups[next(iter(self._groups))]
        self._groups[group.id] = built
        return built

    async def _version(self) -> int:
        # Where the store has a cheap "anything committed?" counter (SQLite),
        # the catalog version cannot have moved while that one stood still.
        committed = self.store.data_version()
        if committed is not None and committed == self._version_seen_at:
            return self._version_seen
        version = await self.store.catalog_version()
        self._version_seen, self._version_seen_at = version, committed
        return version

    async def tool(self, group: Group, name: str) -> ToolSpec | None:
        """The group's tool called ``name``, or None."""
        return (await self.tools(group)).by_name.get(name)


async def group_tools(store: Store, group: Group) -> list[ToolSpec]:
    """Every tool the group offers, built-ins first, then connector tools by name."""
    tools: list[ToolSpec] = []
    if await store.group_libraries(group.id):
        tools += [builtin.spec for builtin in BUILTINS.values()]
    for connector, cached in await store.group_tools(group.id):
        if f"{connector.name}_{cached.name}" in BUILTINS:
            continue  # a connector "search" with an action "context" must not shadow a built-in
        tools.append(
            ToolSpec(
                name=f"{connector.name}_{cached.name}",
                description=cached.description,
                input_schema=cached.input_schema,
                capability=cached.capability,
                title=cached.annotations.get("title"),
                source=connector.name,
                connector_id=connector.id,
                remote_name=cached.name,
            )
        )
    return tools


async def group_tool(store: Store, group: Group, name: str) -> ToolSpec | None:
    """The group's tool called ``name``, or None."""
    builtin = BUILTINS.get(name)
    if builtin is not None:
        # Built-ins win a clash; group_tools never offers a connector tool under their names.
        return builtin.spec if await store.group_libraries(group.id) else None
    for tool in await group_tools(store, group):
        if tool.name == name:
            return tool
    return None
