"""The base URL the CLI prints in endpoint and webhook URLs.

The CLI is not the server, so it cannot know the address by itself. In
order: ``AGENTWS_BASE_URL`` where the command runs; else the public base URL
a running instance on the same database recorded with its heartbeat (its own
``AGENTWS_BASE_URL``, else the address it is bound to); else the address
``AGENTWS_BIND`` (or the default) names, with a note saying how to set it.
"""

from __future__ import annotations

from datetime import timedelta

import attrs

from agentws.common.instances import STALE_S
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.store.sql_health import HealthStore

__all__ = ["PrintedBase", "printed_base_url"]


@attrs.frozen
class PrintedBase:
    url: str
    #: Said under a printed URL that is only a guess; None when it is known.
    note: str | None = None


async def printed_base_url(settings: Settings, store: HealthStore) -> PrintedBase:
    """The base URL for the URLs a command prints (see the module's docstring).

    Error handling:
        :class:`~agentws.core.errors.StoreError` from reading the instances.
    """
    if settings.base_url:
        return PrintedBase(settings.base_url)
    live = await store.live_instances(utcnow() - timedelta(seconds=STALE_S))
    # One that is staying (not draining), then the newest: several instances
    # behind one load balancer share AGENTWS_BASE_URL anyway.
    ranked = sorted(
        (i for i in live if i.public_url),
        key=lambda i: (not i.draining, i.started_at),
        reverse=True,
    )
    if ranked and ranked[0].public_url:
        return PrintedBase(ranked[0].public_url)
    url = settings.public_base_url
    return PrintedBase(
        url,
        f"Note: no running agentws on this database says where it is, and AGENTWS_BASE_URL "
        f"is not set, so this URL uses {url} (from AGENTWS_BIND or the default). Start "
        "`agentws serve` first, or set AGENTWS_BASE_URL to the address clients reach it at.",
    )
