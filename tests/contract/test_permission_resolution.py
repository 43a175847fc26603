"""Which permission a group's tool gets, on both stores: the group's, the workspace's, the default.

The first permission that applies wins; one that does not apply (looser
than the default and set for an earlier definition of the tool, or
``allow`` on a destructive tool) gives way to the next, never straight to
the default: a workspace's ``deny`` is not undone by a group's stale or
forbidden ``allow``.
"""

from __future__ import annotations

import attrs

from agentws.domain.models import (
    CachedTool,
    Capability,
    Connector,
    ConnectorKind,
    Group,
    GroupConnector,
    Permission,
    ToolPermission,
    Workspace,
)
from agentws.store.union import Store
from agentws.tools.catalog import group_tools
from agentws.tools.spec import ToolSpec


async def _setup(store: Store, label: Capability) -> tuple[Workspace, Group, CachedTool]:
    workspace = await store.insert(Workspace(slug="acme", name="Acme"))
    group = await store.insert(Group(workspace_id=workspace.id, slug="ops", name="Ops"))
    connector = await store.insert(
        Connector(workspace_id=workspace.id, name="gh", kind=ConnectorKind.GITHUB)
    )
    await store.insert(GroupConnector(group_id=group.id, connector_id=connector.id))
    cached = await store.insert(
        CachedTool(connector_id=connector.id, name="drop", definition_hash="v1", label=label)
    )
    return workspace, group, cached


def _row(
    workspace: Workspace, group: Group | None, permission: Permission, definition: str = "v1"
) -> ToolPermission:
    return ToolPermission(
        workspace_id=workspace.id,
        group_id=group.id if group else None,
        tool_name="gh_drop",
        permission=permission,
        definition_hash=definition,
        set_by="t",
    )


async def _tool(store: Store, group: Group) -> ToolSpec:
    (tool,) = [t for t in await group_tools(store, group) if t.name == "gh_drop"]
    return tool


async def test_the_groups_permission_wins_over_the_workspaces(store: Store) -> None:
    workspace, group, _ = await _setup(store, Capability.WRITE)
    assert (await _tool(store, group)).permission is Permission.REQUIRES_APPROVAL
    await store.insert(_row(workspace, None, Permission.DENY))
    tool = await _tool(store, group)
    assert (tool.permission, tool.permission_source) == (Permission.DENY, "workspace")
    await store.insert(_row(workspace, group, Permission.ALLOW))
    tool = await _tool(store, group)
    assert (tool.permission, tool.permission_source) == (Permission.ALLOW, "group")
    assert tool.permission_note is None


async def test_a_forbidden_allow_gives_way_to_the_workspaces_deny(store: Store) -> None:
    workspace, group, _ = await _setup(store, Capability.DESTRUCTIVE)
    await store.insert(_row(workspace, None, Permission.DENY))
    await store.insert(_row(workspace, group, Permission.ALLOW))
    tool = await _tool(store, group)
    assert (tool.permission, tool.permission_source) == (Permission.DENY, "workspace")
    assert tool.permission_note is not None
    assert "destructive" in tool.permission_note


async def test_a_stale_loosening_gives_way_to_the_next_permission(store: Store) -> None:
    workspace, group, cached = await _setup(store, Capability.WRITE)
    await store.insert(_row(workspace, None, Permission.DENY))
    await store.insert(_row(workspace, group, Permission.ALLOW))
    # The tool changes: the group's allow was for v1.
    await store.update(attrs.evolve(cached, definition_hash="v2"))
    tool = await _tool(store, group)
    assert (tool.permission, tool.permission_source) == (Permission.DENY, "workspace")
    assert "earlier definition" in (tool.permission_note or "")


async def test_a_stale_tightening_still_applies(store: Store) -> None:
    workspace, group, cached = await _setup(store, Capability.WRITE)
    await store.insert(_row(workspace, group, Permission.DENY))
    await store.update(attrs.evolve(cached, definition_hash="v2"))
    tool = await _tool(store, group)
    assert (tool.permission, tool.permission_source) == (Permission.DENY, "group")


async def test_with_nothing_applicable_the_default_applies(store: Store) -> None:
    workspace, group, _ = await _setup(store, Capability.DESTRUCTIVE)
    await store.insert(_row(workspace, group, Permission.ALLOW))
    tool = await _tool(store, group)
    assert (tool.permission, tool.permission_source) == (
        Permission.REQUIRES_CONFIRMATION,
        "default",
    )
