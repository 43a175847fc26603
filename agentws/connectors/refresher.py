"""The connector refresher: keeps remote MCP connectors' tool caches current.

Runs in the service's nursery. Every ``AGENTWS_CONNECTOR_REFRESH_S`` it asks
the connector links (:mod:`agentws.connectors.links`) to link any connector
added since, and every link to fetch its remote's tool list again and sync
the cache. Each link does that in its own task, within
``AGENTWS_TOOL_TIMEOUT_S``; a remote that is down is retried by its link,
and its cached tools stay as they were, so ``tools/list`` keeps answering.
Links also refresh when they connect and when a remote announces
``notifications/tools/list_changed``; ``0`` turns off only the periodic round.
"""

from __future__ import annotations

import logging

import trio

from agentws.config import Settings
from agentws.connectors.links import RemoteLinks
from agentws.errors import AgentwsError

__all__ = ["refresh_forever"]

log = logging.getLogger("agentws.connectors")


async def refresh_forever(
    links: RemoteLinks,
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
        try:
            await links.refresh_all()
        except AgentwsError as exc:
            log.warning("connector refresh: cannot read connectors: %s", exc.message)
        except Exception:
            # The next round may fare better; the service must not go down with this one.
            log.exception("connector refresh failed")
