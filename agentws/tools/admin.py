"""An admin's say over tools: labels (capabilities) and permissions, audited.

- A **label** is a connector tool's capability. Remote MCP tools start
  unlabeled (``write``) and an admin labels them; native actions and the
  built-ins have fixed labels. A label belongs to the connector, so to the
  workspace: every group the connector is attached to sees it.
- A **permission** says what non-system callers get for a tool: for one
  group, or for the whole workspace (a group's own wins). It is bound to
  the tool's definition: when a remote tool changes, a permission looser
  than the safe default stops applying.

The CLI (and later the dashboard and admin API) call these functions.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from agentws.common.audit import record, record_removed
from agentws.connectors.names import ambiguity
from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.models import (
    CachedTool,
    Capability,
    Connector,
    ConnectorKind,
    Group,
    Permission,
    ToolPermission,
    default_permission,
)
from agentws.domain.permissions import looser_than, permission_allowed
from agentws.domain.rules import utcnow
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore
from agentws.tools.builtins import BUILTINS, GET_APPROVAL
from agentws.tools.catalog import connector_tool, group_tool, group_tools
from agentws.tools.spec import ToolSpec

__all__ = [
    "ToolRow",
    "clear_permission",
    "find_connector_tool",
    "group_tool_list",
    "reset_loosened_permissions",
    "set_label",
    "set_permission",
]

_BUILTIN_NAMES = {*BUILTINS, GET_APPROVAL.name}


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


async def find_connector_tool(
    store: RecordStore, workspace_slug: str, tool_name: str, *, qualified: bool = True
) -> tuple[Connector, CachedTool]:
    """The connector tool a workspace offers as ``tool_name`` (``<connector>_<action>``).

    With ``qualified``, ``CONNECTOR/ACTION`` names one connector's tool too
    (the way to name a tool whose name another connector's tool shares).
    A tool left out of listings for a name clash is not what its name means.

    Error handling:
        NotFoundError naming what to list when there is no such tool;
        ValidationError when the name means tools of several connectors.
    """
    workspace = await store.workspace_by_slug(workspace_slug)
    connector_name, slash, action = tool_name.partition("/")
    matches: list[tuple[Connector, CachedTool]] = []
    for connector in await store.select(Connector, workspace_id=workspace.id):
        if slash:
            if not qualified or connector.name != connector_name:
                continue
            cached = await store.find(CachedTool, connector_id=connector.id, name=action)
            if cached is not None:
                return connector, cached
            continue
        prefix = f"{connector.name}_"
        if tool_name.startswith(prefix):
            cached = await store.find(
                CachedTool, connector_id=connector.id, name=tool_name[len(prefix) :]
            )
            if cached is not None and cached.left_out is None:
                matches.append((connector, cached))
    if len(matches) > 1:
        matches.sort(key=lambda found: found[0].name)
        hint = (
            "name one as CONNECTOR/ACTION ("
            + " or ".join(f"{c.name}/{t.name}" for c, t in matches)
            + ")"
            if qualified
            else "set it per group (--group GROUP), where the name means one tool"
        )
        raise ambiguity(tool_name, matches, hint=hint)
    if matches:
        return matches[0]
    raise NotFoundError(
        f"no tool {tool_name!r} in workspace {workspace_slug!r} "
        f"(see `agentws tool list {workspace_slug} GROUP` or "
        f"`agentws connector show {workspace_slug} CONNECTOR`)"
    )


async def set_label(
    store: RecordStore, workspace_slug: str, tool_name: str, label: Capability | None, *, actor: str
) -> tuple[Connector, CachedTool]:
    """Label a remote MCP tool (``None``: unlabeled, so ``write``); audited.

    ``tool_name`` is its listed name, or ``CONNECTOR/ACTION``.

    Error handling:
        NotFoundError for an unknown tool; ValidationError for a built-in or
        a native action, whose labels are fixed, or a name that means
        tools of several connectors.
    """
    if tool_name in _BUILTIN_NAMES:
        raise ValidationError(f"{tool_name} is a built-in; its label is fixed (read)")
    connector, cached = await find_connector_tool(store, workspace_slug, tool_name)
    tool_name = f"{connector.name}_{cached.name}"  # CONNECTOR/ACTION: its listed name
    if connector.kind is not ConnectorKind.REMOTE_MCP:
        raise ValidationError(
            f"{tool_name} is a native {connector.kind.value} action; its label is fixed "
            f"({cached.capability.value}). Change what callers get with `agentws tool permission`"
        )
    previous = cached.label
    updated = await store.update(attrs.evolve(cached, label=label))
    await record(
        store,
        connector.workspace_id,
        actor,
        "tool.label",
        tool_name,
        previous_label=previous.value if previous else None,
        label=label.value if label else None,
        definition_hash=cached.definition_hash,
    )
    if updated.capability is not cached.capability:
        await reset_loosened_permissions(
            store,
            connector.workspace_id,
            tool_name,
            updated.capability,
            actor=actor,
            why=f"the tool is now labeled {updated.capability.value}",
        )
    return connector, updated


async def reset_loosened_permissions(
    store: RecordStore,
    workspace_id: str,
    tool_name: str,
    capability: Capability,
    *,
    actor: str,
    why: str,
) -> None:
    """Remove a tool's permissions that are looser than its capability's default; audited.

    A permission was decided for what the tool was then: an ``allow`` given
    to a read tool must not let it run freely once it is labeled write, or
    once a remote server has changed what it does.
    """
    safe = default_permission(capability)
    rows = await store.select(ToolPermission, workspace_id=workspace_id, tool_name=tool_name)
    for row in rows:
        if looser_than(row.permission, safe) or not permission_allowed(capability, row.permission):
            await record_removed(
                store,
                row,
                workspace_id,
                actor,
                "tool.permission_reset",
                tool_name,
                group_id=row.group_id,
                previous_permission=row.permission.value,
                permission=f"default ({safe.value})",
                why=why,
            )


async def _workspace_tool(store: RecordStore, workspace_slug: str, tool_name: str) -> ToolSpec:
    """The tool as it would be in any group of the workspace (built-in or connector tool)."""
    if tool_name in BUILTINS:
        return BUILTINS[tool_name].spec
    if tool_name == GET_APPROVAL.name:
        return GET_APPROVAL
    # Permissions go by name: a workspace's applies wherever the name is listed.
    found = await find_connector_tool(store, workspace_slug, tool_name, qualified=False)
    return connector_tool(*found)


async def _target(
    store: _Store, workspace_slug: str, group_slug: str | None, tool_name: str
) -> tuple[str, Group | None, ToolSpec]:
    workspace = await store.workspace_by_slug(workspace_slug)
    if group_slug is None:
        return workspace.id, None, await _workspace_tool(store, workspace_slug, tool_name)
    group = await store.group_by_slug(workspace_slug, group_slug)
    tool = await group_tool(store, group, tool_name)
    if tool is None:
        raise NotFoundError(
            f"group {workspace_slug}/{group_slug} has no tool {tool_name!r} "
            f"(see `agentws tool list {workspace_slug} {group_slug}`)"
        )
    return workspace.id, group, tool


async def set_permission(
    store: _Store,
    workspace_slug: str,
    tool_name: str,
    permission: Permission,
    *,
    group_slug: str | None,
    actor: str,
) -> ToolPermission:
    """Set what non-system callers get for a tool, in one group or (no group) the workspace.

    Error handling:
        NotFoundError for an unknown workspace, group or tool;
        ValidationError for ``allow`` on a destructive tool.
    """
    workspace_id, group, tool = await _target(store, workspace_slug, group_slug, tool_name)
    if not permission_allowed(tool.capability, permission):
        raise ValidationError(
            f"{tool_name} is destructive: it always needs the caller's confirmation "
            "(requires_confirmation) or an admin's approval (requires_approval); it cannot be "
            "allowed outright"
        )
    group_id = group.id if group else None
    existing = await store.find(
        ToolPermission, workspace_id=workspace_id, group_id=group_id, tool_name=tool_name
    )
    now = utcnow()
    if existing is None:
        saved = await store.insert(
            ToolPermission(
                workspace_id=workspace_id,
                group_id=group_id,
                tool_name=tool_name,
                permission=permission,
                definition_hash=tool.definition_hash,
                set_by=actor,
                created_at=now,
                updated_at=now,
            )
        )
    else:
        saved = await store.update(
            attrs.evolve(
                existing,
                permission=permission,
                definition_hash=tool.definition_hash,
                set_by=actor,
                updated_at=now,
            )
        )
    await record(
        store,
        workspace_id,
        actor,
        "tool.permission",
        tool_name,
        group=group_slug,
        group_id=group_id,
        previous_permission=existing.permission.value if existing else None,
        permission=permission.value,
        capability=tool.capability.value,
        definition_hash=tool.definition_hash,
    )
    return saved


async def clear_permission(
    store: _Store, workspace_slug: str, tool_name: str, *, group_slug: str | None, actor: str
) -> ToolPermission | None:
    """Remove an admin's permission (the workspace's, or the capability's default, applies)."""
    workspace = await store.workspace_by_slug(workspace_slug)
    group = await store.group_by_slug(workspace_slug, group_slug) if group_slug else None
    group_id = group.id if group else None
    existing = await store.find(
        ToolPermission, workspace_id=workspace.id, group_id=group_id, tool_name=tool_name
    )
    if existing is None:
        await _target(store, workspace_slug, group_slug, tool_name)  # an unknown tool is an error
        return None
    return await record_removed(
        store,
        existing,
        workspace.id,
        actor,
        "tool.permission",
        tool_name,
        group=group_slug,
        group_id=group_id,
        previous_permission=existing.permission.value,
        permission=None,
    )


@attrs.frozen
class ToolRow:
    """One line of ``agentws tool list``."""

    tool: ToolSpec
    #: ``fixed`` (built-ins, native actions), ``admin`` or ``unlabeled``.
    label_source: str
    suggested: Capability | None


async def group_tool_list(store: _Store, workspace_slug: str, group_slug: str) -> list[ToolRow]:
    """Every tool of a group with its capability, permission and where each comes from."""
    group = await store.group_by_slug(workspace_slug, group_slug)
    cached: dict[str, tuple[Connector, CachedTool]] = {
        f"{connector.name}_{tool.name}": (connector, tool)
        for connector, tool in await store.group_tools(group.id)
    }
    rows: list[ToolRow] = []
    for tool in await group_tools(store, group):
        found = cached.get(tool.name)
        if found is None or found[0].kind is not ConnectorKind.REMOTE_MCP:
            rows.append(ToolRow(tool, "fixed", None))
        else:
            label = "admin" if found[1].label is not None else "unlabeled"
            rows.append(ToolRow(tool, label, found[1].suggested_label))
    return rows
