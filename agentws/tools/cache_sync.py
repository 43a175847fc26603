"""The tool cache of a remote MCP connector, made to hold what the remote lists.

Called with the tools a connector's remote listed (by its link, by
``agentws connector refresh``): each tool's whole definition is kept
(callers see its title, output schema, icons and ``_meta``); new tools are
cached, changed ones lose their admin label (and permissions looser than
the default), gone ones are removed, and a name another tool has in the
connector's groups is left out of listings. A new or changed tool whose
schema (input or output) is costly to check (:mod:`agentws.tools.schema_cost`) is flagged:
logged and audited as ``tool.schema_flagged`` with what makes it so. The links
(:mod:`agentws.connectors.links`) take this as a callback: the catalog's
permission policy lives here, above the transport.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import attrs
import mcp_types as types

from agentws.common.audit import record
from agentws.connectors.names import mark_clashes
from agentws.connectors.remote_mcp import SyncReport, definition_hash, suggested_label
from agentws.core.errors import ConflictError
from agentws.domain.models import CachedTool, Capability, Connector
from agentws.domain.rules import utcnow
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore
from agentws.tools.admin import reset_loosened_permissions
from agentws.tools.schema_cost import assess

__all__ = ["sync_tool_cache"]

log = logging.getLogger("agentws.connectors")


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


async def _flag_hostile_schema(
    store: RecordStore, connector: Connector, tool: types.Tool, actor: str
) -> None:
    """Tell the admin (log and audit) when a new or changed tool's schema is costly to check.

    Its input schema (callers' arguments are checked against it) or its
    output schema (its results are).
    """
    hazards = list(assess(tool.input_schema).hazards)
    if tool.output_schema is not None:
        hazards += [f"output schema: {h}" for h in assess(dict(tool.output_schema)).hazards]
    if not hazards:
        return
    name = f"{connector.name}_{tool.name}"
    log.warning(
        "connector %s: tool %s has a schema costly to check (its calls or results are "
        "checked in a worker process): %s",
        connector.name,
        name,
        "; ".join(hazards),
    )
    await record(store, connector.workspace_id, actor, "tool.schema_flagged", name, hazards=hazards)


async def sync_tool_cache(
    store: _Store, connector: Connector, tools: list[types.Tool], *, actor: str
) -> SyncReport:
    """Make the cache hold exactly ``tools`` for ``connector``.

    A tool whose definition hash changed keeps no admin label: it is
    ``write`` (so ``requires_approval``) until an admin labels it again,
    and permissions looser than that default are removed; the resets are
    audited.
    """
    cached = {t.name: t for t in await store.select(CachedTool, connector_id=connector.id)}
    added, changed = [], []
    seen: set[str] = set()
    now = utcnow()
    for tool in tools:
        if tool.name in seen:
            log.warning("connector %s lists %r twice; the first is kept", connector.name, tool.name)
            continue
        seen.add(tool.name)
        digest = definition_hash(tool)
        annotations: dict[str, Any] = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        fields: dict[str, Any] = {
            "description": tool.description or "",
            "input_schema": dict(tool.input_schema),
            "annotations": annotations,
            "definition_hash": digest,
            "remote_definition": tool.model_dump(by_alias=True, mode="json", exclude_none=True),
            "suggested_label": suggested_label(tool),
            "fetched_at": now,
        }
        old = cached.pop(tool.name, None)
        if old is None or old.definition_hash != digest:
            await _flag_hostile_schema(store, connector, tool, actor)
        if old is None:
            try:
                await store.insert(CachedTool(connector_id=connector.id, name=tool.name, **fields))
            except ConflictError:
                # Another refresh (the CLI, another instance) cached it meanwhile.
                continue
            added.append(tool.name)
        elif old.definition_hash != digest:
            await store.update(attrs.evolve(old, label=None, **fields))
            changed.append(tool.name)
            await record(
                store,
                connector.workspace_id,
                actor,
                "tool.definition_changed",
                f"{connector.name}_{tool.name}",
                previous_label=old.label.value if old.label else None,
                label="unset (write)",
            )
            await reset_loosened_permissions(
                store,
                connector.workspace_id,
                f"{connector.name}_{tool.name}",
                Capability.WRITE,
                actor=actor,
                why="the tool's definition changed",
            )
        elif old.remote_definition != fields["remote_definition"]:
            # Only what the remote shows (title, output schema, icons...) changed:
            # the label stands, but the suggestion follows the annotations (it is
            # never applied by itself). Read again just before writing, so that a
            # label an admin set meanwhile is kept.
            current = await store.find(CachedTool, connector_id=connector.id, name=tool.name)
            if current is not None:
                await store.update(
                    attrs.evolve(
                        current,
                        remote_definition=fields["remote_definition"],
                        annotations=annotations,
                        suggested_label=fields["suggested_label"],
                    )
                )
    for gone in cached.values():
        await store.delete(CachedTool, gone.id)
    # Unchanged tools only get the time: writing their rows back whole would
    # undo a label an admin set while this refresh ran.
    await store.mark_tools_fetched(connector.id, now)
    # A new tool must not take a name another tool has in the connector's groups.
    left_out = await mark_clashes(store, connector)
    for reason in left_out:
        log.warning("connector %s: %s", connector.name, reason)
    report = SyncReport(
        tuple(added),
        tuple(changed),
        tuple(cached),
        len(seen) - len(added) - len(changed),
        left_out,
    )
    log.info(
        "connector %s: %d tools (%d new, %d changed, %d removed)",
        connector.name,
        len(tools),
        len(added),
        len(changed),
        len(cached),
    )
    return report
