"""The connector refresher: keeps remote MCP connectors' tool caches current.

Runs in the service's nursery. Every ``AGENTWS_CONNECTOR_REFRESH_S`` it
fetches the tool list of each active remote MCP connector and syncs the
cache, one connector at a time, each within ``AGENTWS_TOOL_TIMEOUT_S``; a
remote that is down is logged and tried again next round, and its cached
tools stay as they were, so ``tools/list`` keeps answering.
"""

from __future__ import annotations

import logging

import trio

from agentws.config import Settings
from agentws.connectors.remote_mcp import RemoteError, fetch_tools, sync_tool_cache
from agentws.domain.models import Connector, ConnectorKind
from agentws.errors import AgentwsError
from agentws.secret_box import SecretBox
from agentws.store import Store

__all__ = ["refresh_all", "refresh_forever"]

log = logging.getLogger("agentws.connectors")

ACTOR = "system:refresher"


async def refresh_all(store: Store, settings: Settings) -> int:
    """Refresh every active remote MCP connector once; how many succeeded."""
    connectors = await store.select(Connector, kind=ConnectorKind.REMOTE_MCP, active=True)
    done = 0
    for connector in connectors:
        try:
            box = SecretBox.from_settings(settings) if connector.secret else None
            tools = await fetch_tools(
                connector,
                box=box,
                allowlist=settings.connector_allowlist,
                timeout_s=settings.tool_timeout_s,
            )
            await sync_tool_cache(store, connector, tools, actor=ACTOR)
        except RemoteError as exc:
            log.warning("refresh: %s", exc.message)
        except AgentwsError as exc:
            log.warning("refresh of connector %s failed: %s", connector.name, exc.message)
        except Exception:
            # One broken remote must not stop the others or the refresher.
            log.exception("refresh of connector %s failed", connector.name)
        else:
            done += 1
    return done


async def refresh_forever(
    store: Store,
    settings: Settings,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Refresh all remote connectors every ``connector_refresh_s``, until cancelled."""
    task_status.started()
    if settings.connector_refresh_s <= 0:
        return
    while True:
        await trio.sleep(settings.connector_refresh_s)
        await refresh_all(store, settings)
