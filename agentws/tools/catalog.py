"""The tool catalog: what a group offers, from the persisted tool cache plus built-ins.

``tools/list`` is answered from here and never waits on a remote server:
connector tools come from the cache table (filled by connector refreshes),
named ``<connector>_<action>``, each name one tool (a tool left out for a
name clash is not listed, see :mod:`agentws.connectors.names`); the context
built-ins are offered when the group has a library, and ``get_approval``
(the outcome of a queued call) when it has connector tools. Each tool
states its capability twice: as MCP annotations for clients that read them,
and as a tag at the start of its description for 2024-11-05 clients, which
have no annotations. Each carries
its permission: an admin's for the group, else the workspace's, else the
capability's default (see :mod:`agentws.domain.permissions`); a looser one
set for an older definition of the tool no longer applies.

:class:`Catalog` keeps each group's built list in memory and reuses it while
the store's catalog version (a counter its triggers move with every change
to connectors, their tools and attachments, library attachments and tool
permissions) stands
still: a listing then costs one small read instead of a join and a rebuild,
and a change made by any process is seen on the next listing. On
PostgreSQL the version is not even read while the change feed listens and
announces no catalog change.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import attrs
import trio

from agentws.common.changes import ChangeFeed, Topic
from agentws.domain.models import CachedTool, Connector, Group, Library, ToolPermission
from agentws.domain.permissions import effective_permission, permission_allowed
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_changes import ChangeStore
from agentws.store.sql_records import RecordStore
from agentws.tools.builtins import BUILTINS, GET_APPROVAL
from agentws.tools.spec import ToolSpec

__all__ = ["Catalog", "GroupTools", "ToolSpec", "connector_tool", "group_tool", "group_tools"]

# Groups whose lists are kept; beyond it the least recently built is dropped.
_MAX_GROUPS = 1000


class _Store(RecordStore, CatalogStore, ChangeStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen(eq=False)
class GroupTools:
    """A group's tools as of one catalog version. Replaced, never changed."""

    tools: tuple[ToolSpec, ...]
    by_name: dict[str, ToolSpec]
    version: int
    #: The group's libraries by id, in the order they were attached (read only):
    #: what the context built-ins search and read.
    libraries: dict[str, Library] = attrs.field(factory=dict)
    #: Renderings of the list made by doors (the MCP listing), built once per list.
    renderings: dict[str, Any] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Catalog:
    """Every group's tools, rebuilt only when the catalog version moves.

    Args:
        store: where the cache and the version live.
    """

    store: _Store
    #: Announces catalog changes made anywhere (PostgreSQL); None: only the store's data version.
    changes: ChangeFeed | None = None
    _groups: dict[str, GroupTools] = attrs.field(factory=dict, init=False)
    # Connector records read for calls, with the catalog version they were read at.
    _connectors: dict[str, tuple[int, Connector]] = attrs.field(factory=dict, init=False)
    # The last catalog version read, and the store's data version just before.
    _version_seen: int = attrs.field(default=-1, init=False)
    _version_seen_at: int | None = attrs.field(default=None, init=False)
    # The version read in flight, if any: concurrent listings wait for it
    # instead of each asking the store after every commit.
    _reading: trio.Event | None = attrs.field(default=None, init=False)

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
        libraries = await self.store.group_libraries(group.id)
        tools = await _group_tools(self.store, group, bool(libraries))
        built = GroupTools(
            tuple(tools),
            {tool.name: tool for tool in tools},
            version,
            {library.id: library for library in libraries},
        )
        self._groups.pop(group.id, None)
        if len(self._groups) >= _MAX_GROUPS:
            del self._groups[next(iter(self._groups))]
        self._groups[group.id] = built
        return built

    async def _version(self) -> int:
        # Where the store has a cheap "anything committed?" counter (SQLite),
        # or announces catalog changes (PostgreSQL, while the feed listens),
        # the catalog version cannot have moved while that one stood still.
        committed = self.store.data_version()
        if committed is None and self.changes is not None:
            committed = self.changes.version(Topic.CATALOG)
        if committed is not None and committed == self._version_seen_at:
            return self._version_seen
        if committed is not None and self._reading is not None:
            reading = self._reading
            await reading.wait()
            if self._version_seen_at == committed:
                return self._version_seen
        self._reading = reading = trio.Event()
        try:
            version = await self.store.catalog_version()
            self._version_seen, self._version_seen_at = version, committed
        finally:
            reading.set()
            if self._reading is reading:
                self._reading = None
        return version

    async def connector(self, connector_id: str) -> Connector:
        """The connector ``connector_id`` as of now, read again only when the catalog moved.

        Every change to a connector moves the catalog version, so a call to a
        connector's tool costs no store read while nothing changed.

        Error handling:
            NotFoundError when there is no such connector; StoreError from the store.
        """
        version = await self._version()
        cached = self._connectors.get(connector_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        connector = await self.store.get(Connector, connector_id)
        self._connectors.pop(connector_id, None)
        if len(self._connectors) >= _MAX_GROUPS:
            del self._connectors[next(iter(self._connectors))]
        self._connectors[connector_id] = (version, connector)
        return connector

    def last(self, group_id: str) -> GroupTools | None:
        """The group's tools as last listed here, without asking whether they still are."""
        return self._groups.get(group_id)

    async def tool(self, group: Group, name: str) -> ToolSpec | None:
        """The group's tool called ``name``, or None."""
        return (await self.tools(group)).by_name.get(name)

    async def libraries(self, group: Group) -> dict[str, Library]:
        """The group's libraries by id, in the order they were attached, as of now (read only).

        Library attachments move the catalog version, so while nothing
        changed this costs no store read.
        """
        return (await self.tools(group)).libraries


def _with_permission(tool: ToolSpec, rows: list[ToolPermission]) -> ToolSpec:
    """``tool`` with the first admin's permission that applies to it (group's, then workspace's).

    A permission does not apply when it is looser than the default and was
    set for an earlier definition of the tool, or when it is ``allow`` on a
    destructive tool; the next one (or the default) does, and the tool says
    why in ``permission_note``.
    """
    notes: list[str] = []
    for row in rows:
        source = "group" if row.group_id else "workspace"
        current = row.definition_hash == tool.definition_hash
        permission = effective_permission(
            tool.capability, row.permission, configured_for_this_definition=current
        )
        if not permission_allowed(tool.capability, permission):
            notes.append(
                f"the {source}'s {permission.value} does not apply to a destructive tool, "
                "which always needs confirmation or approval"
            )
        elif permission is not row.permission:
            notes.append(
                f"the {source}'s {row.permission.value} was set for an earlier definition of "
                "this tool; an admin must set it again"
            )
        else:
            return attrs.evolve(
                tool,
                permission=permission,
                permission_source=source,
                permission_note="; ".join(notes) or None,
            )
    return attrs.evolve(tool, permission_note="; ".join(notes) or None)


async def _permissions(store: CatalogStore, group: Group) -> dict[str, list[ToolPermission]]:
    """Permissions that may apply in ``group`` by tool name: its own first, then the workspace's."""
    found: dict[str, list[ToolPermission]] = {}
    for row in await store.tool_permissions(group.workspace_id, group.id):
        found.setdefault(row.tool_name, []).append(row)
    for rows in found.values():
        rows.sort(key=lambda row: row.group_id is None)
    return found


def connector_tool(connector: Connector, cached: CachedTool) -> ToolSpec:
    """A cached tool of a connector as callers see it, ``<connector>_<action>`` (no permission)."""
    remote = cached.remote_definition
    return ToolSpec(
        name=f"{connector.name}_{cached.name}",
        description=cached.description,
        input_schema=cached.input_schema,
        capability=cached.capability,
        title=remote.get("title") or cached.annotations.get("title"),
        output_schema=remote.get("outputSchema"),
        icons=remote.get("icons"),
        meta=remote.get("_meta"),
        remote_annotations=cached.annotations,
        source=connector.name,
        connector_id=connector.id,
        remote_name=cached.name,
        connector_kind=connector.kind,
        definition_hash=cached.definition_hash,
    )


async def group_tools(store: CatalogStore, group: Group) -> list[ToolSpec]:
    """Every tool the group offers, built-ins first, then connector tools by name."""
    return await _group_tools(store, group, bool(await store.group_libraries(group.id)))


async def _group_tools(store: CatalogStore, group: Group, has_library: bool) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    if has_library:
        tools += [builtin.spec for builtin in BUILTINS.values()]
    connector_tools: list[ToolSpec] = []
    for connector, cached in await store.group_tools(group.id):
        name = f"{connector.name}_{cached.name}"
        if name in BUILTINS or name == GET_APPROVAL.name:
            continue  # a connector "search" with an action "context" must not shadow a built-in
        if cached.left_out is None:
            connector_tools.append(connector_tool(connector, cached))
    # A name that means two tools (cached before names were checked) means neither:
    # a call must never reach the wrong one. `agentws doctor` names them.
    counts = Counter(tool.name for tool in connector_tools)
    connector_tools = [tool for tool in connector_tools if counts[tool.name] == 1]
    if connector_tools:
        tools.append(GET_APPROVAL)
    tools += connector_tools
    permissions = await _permissions(store, group)
    return [_with_permission(tool, permissions.get(tool.name, [])) for tool in tools]


async def group_tool(store: CatalogStore, group: Group, name: str) -> ToolSpec | None:
    """The group's tool called ``name``, or None."""
    for tool in await group_tools(store, group):
        if tool.name == name:
            return tool
    return None
