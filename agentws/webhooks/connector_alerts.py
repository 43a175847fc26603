"""A connector that lost its authorization upstream, said once where the workspace's alerts go.

When an OAuth connector's grant is lost (the upstream refused a refresh:
access revoked, expired or its client removed), the instance whose store
update turned the grant *needs authorization* (one, whichever instances
noticed: :meth:`~agentws.store.sql_connector_grants.GrantStore.lose_grant`)
posts one message to each alerts channel the workspace's webhooks name
(``alerts_channel``), saying which connector, why, and where to connect it
again. A workspace whose webhooks name none gets the warning in the log
only. A post that fails is logged; the connector's page and ``connector
show`` say the same thing in any case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import trio

from agentws.chat.channels import ChannelRef, parse_channel
from agentws.chat.sinks import ChatSink, OutgoingMessage
from agentws.core.errors import AgentwsError
from agentws.domain.models import Connector, Webhook, Workspace
from agentws.store.sql_records import RecordStore

__all__ = ["ConnectorAlerts", "lost_text"]

log = logging.getLogger("agentws.connectors")

# One post's bound: an alert must not hold the link that found the loss.
_POST_S = 30.0


def lost_text(connector: Connector, workspace: str, reason: str, base_url: str) -> str:
    page = f"{base_url.rstrip('/')}/dashboard/w/{workspace}/connectors/{connector.name}"
    return (
        f":warning: Connector *{connector.name}* lost its authorization upstream: {reason}. "
        f"Its tools fail until an admin connects it again: {page} "
        f"(or `agentws connector authorize {workspace} {connector.name}`)."
    )


@attrs.frozen
class ConnectorAlerts:
    """Posts a lost authorization to the workspace's alerts channels."""

    store: RecordStore
    sinks: Callable[[ChannelRef], ChatSink]
    base_url: str

    async def lost(self, connector: Connector, reason: str) -> None:
        workspace = await self.store.get(Workspace, connector.workspace_id)
        webhooks = await self.store.select(Webhook, workspace_id=connector.workspace_id)
        channels = sorted({w.alerts_channel for w in webhooks if w.alerts_channel})
        if not channels:
            log.warning(
                "connector %s/%s needs authorization (%s); no webhook of the workspace names "
                "an alerts channel to say so",
                workspace.slug,
                connector.name,
                reason,
            )
            return
        text = lost_text(connector, workspace.slug, reason, self.base_url)
        for name in channels:
            try:
                channel = parse_channel(name)
                message = OutgoingMessage(
                    workspace_id=connector.workspace_id,
                    channel=channel,
                    text=text,
                    event_id=None,
                    allow_mentions=False,
                )
                with trio.fail_after(_POST_S):
                    await self.sinks(channel).post(message)
            except (AgentwsError, trio.TooSlowError) as exc:
                log.warning(
                    "connector %s: cannot post its lost authorization to %s: %s",
                    connector.name,
                    name,
                    exc,
                )
