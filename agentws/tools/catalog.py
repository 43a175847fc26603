"""The tool catalog: what a group offers, from the persisted tool cache plus built-ins.

``tools/list`` is answered from here and never waits on a remote server:
connector tools come from the cache table (filled by connector refreshes),
named ``<connector>_<action>``; the context built-ins are offered when the
group has a library. Each tool states its capability twice: as MCP
annotations for clients that read them, and as a tag at the start of its
description for 2024-11-05 clients, which have no annotations.
"""

from __future__ import annotations

from agentws.domain.models import Group
from agentws.store import Store
from agentws.tools.builtins import BUILTINS
from agentws.tools.spec import ToolSpec

__all__ = ["ToolSpec", "group_tool", "group_tools"]


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
