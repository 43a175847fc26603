"""One tool per name: connector tool names that would mean two tools are refused.

Connector tools are offered as ``<connector>_<action>``, so connector
``third`` with a tool ``party_search`` and connector ``third_party`` with a
tool ``search`` both make ``third_party_search``; a caller, an admin's label
or a permission would then reach whichever came first. So:

- attaching a connector to a group where one of its tools' names is taken is
  refused, naming both tools (:func:`check_attach`);
- a tool a remote server adds later under a name taken in one of its
  connector's groups is kept in the cache but *left out* (``CachedTool.left_out``
  says why), never listed, until the clash is gone; the tool that had the
  name keeps it (:func:`mark_clashes`, run by every refresh);
- a name that still means two listed tools (from before these checks) is
  left out of the group's listing altogether by the catalog.

Labels and workspace-wide permissions go by name across the workspace, where
two connectors in different groups may share a name; they refuse it
(:func:`ambiguity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from agentws.core.errors import ValidationError
from agentws.domain.models import CachedTool, Connector, Group, GroupConnector
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore

__all__ = ["ambiguity", "check_attach", "exposed_name", "mark_clashes"]


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


def exposed_name(connector: Connector, tool: CachedTool) -> str:
    """The name callers see for ``tool`` of ``connector``."""
    return f"{connector.name}_{tool.name}"


def _which(connector: Connector, tool: CachedTool) -> str:
    return f"tool {tool.name!r} of connector {connector.name!r}"


async def _taken(store: CatalogStore, group_id: str, connector: Connector) -> dict[str, str]:
    """Names the group lists for other connectors' tools → which tool each is."""
    return {
        exposed_name(c, t): _which(c, t)
        for c, t in await store.group_tools(group_id)
        if c.id != connector.id and t.left_out is None
    }


async def check_attach(store: _Store, group: Group, connector: Connector) -> None:
    """That attaching ``connector`` to ``group`` leaves every tool name meaning one tool.

    Error handling:
        ValidationError naming both tools of each name that would be ambiguous.
    """
    taken = await _taken(store, group.id, connector)
    clashes = [
        f"{exposed_name(connector, tool)} would be both {_which(connector, tool)} and "
        f"{taken[exposed_name(connector, tool)]}"
        for tool in sorted(
            await store.select(CachedTool, connector_id=connector.id), key=lambda t: t.name
        )
        if tool.left_out is None and exposed_name(connector, tool) in taken
    ]
    if clashes:
        raise ValidationError(
            f"connector {connector.name!r} cannot be attached to group {group.slug!r}: "
            + "; ".join(clashes)
            + ". A tool's name must say which tool it is: remove one of the connectors "
            "and add it again under another name"
        )


async def mark_clashes(store: _Store, connector: Connector) -> tuple[str, ...]:
    """Leave out ``connector``'s tools whose names another listed tool has in one of its groups.

    A tool left out earlier is listed again once its name is free. Only this
    connector's tools are marked: the tool that had the name keeps it.

    Returns:
        Why each of its tools is left out now, one line each.
    """
    groups = [
        await store.get(Group, link.group_id)
        for link in await store.select(GroupConnector, connector_id=connector.id)
    ]
    taken = [(group, await _taken(store, group.id, connector)) for group in groups]
    reasons: list[str] = []
    for tool in sorted(
        await store.select(CachedTool, connector_id=connector.id), key=lambda t: t.name
    ):
        name = exposed_name(connector, tool)
        reason = next(
            (
                f"{name}: left out, as in group {group.slug} that name is already "
                f"{names[name]} (detach or remove one of the connectors to list it)"
                for group, names in sorted(taken, key=lambda gn: gn[0].slug)
                if name in names
            ),
            None,
        )
        if reason != tool.left_out:
            await store.update(attrs.evolve(tool, left_out=reason))
        if reason is not None:
            reasons.append(reason)
    return tuple(reasons)


def ambiguity(
    name: str, matches: Sequence[tuple[Connector, CachedTool]], *, hint: str
) -> ValidationError:
    """The error for a tool name that means several tools, naming each."""
    which = " and ".join(_which(c, t) for c, t in matches)
    return ValidationError(f"tool name {name!r} is ambiguous: it is {which}; {hint}")
