"""Which connector a Slack or incoming-webhook channel posts through.

``slack:C…`` uses the workspace's Slack connector (``slack:<name>/C…`` names
one when there are several); ``webhook:<name>`` uses the workspace's
``incoming_webhook`` connector of that name. Checked when a webhook is
saved (:func:`check_channel`, a clear error for the admin; the connector's
URL passes the save-time URL rule again, as the allowlist may have narrowed
since it was saved) and again at each post (the connector may have gone
since: the event fails, terminally).
"""

from __future__ import annotations

from agentws.chat.channels import ChannelRef
from agentws.connectors.url_guard import check_saved_url
from agentws.core.errors import UnsafeUrlError, ValidationError
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import Connector, ConnectorKind
from agentws.store.sql_records import RecordStore

__all__ = ["chat_connector", "check_channel"]


async def chat_connector(store: RecordStore, workspace_id: str, channel: ChannelRef) -> Connector:
    """The active connector ``channel`` posts through.

    Error handling:
        ValidationError saying what is missing and how to add it.
    """
    if channel.sink == "slack":
        kind = ConnectorKind.SLACK
        if channel.connector is None:
            found = await store.select(Connector, workspace_id=workspace_id, kind=kind)
            active = [c for c in found if c.active]
            if len(active) == 1:
                return active[0]
            if not active:
                raise ValidationError(
                    f"channel {channel}: the workspace has no active Slack connector to post "
                    "with; add one with `agentws connector add WORKSPACE slack --kind slack "
                    "--secret-env SLACK_BOT_TOKEN`"
                )
            names = ", ".join(sorted(c.name for c in active))
            raise ValidationError(
                f"channel {channel}: the workspace has several Slack connectors ({names}); "
                f"name one, as slack:<connector>/{channel.name}"
            )
        name = channel.connector
    elif channel.sink == "webhook":
        kind, name = ConnectorKind.INCOMING_WEBHOOK, channel.name
    else:
        raise ValidationError(f"channel {channel} does not post through a connector")
    connector = await store.find(Connector, workspace_id=workspace_id, name=name)
    if connector is None:
        hint = (
            f"agentws connector add WORKSPACE {name} --kind incoming_webhook --secret-env URL_VAR"
            if kind is ConnectorKind.INCOMING_WEBHOOK
            else f"agentws connector add WORKSPACE {name} --kind slack --secret-env TOKEN_VAR"
        )
        raise ValidationError(f"channel {channel}: there is no connector {name!r}; add it: {hint}")
    if connector.kind is not kind:
        raise ValidationError(
            f"channel {channel}: connector {name!r} is a {connector.kind.value} connector, "
            f"not {kind.value}"
        )
    if not connector.active:
        raise ValidationError(f"channel {channel}: connector {name!r} is not active")
    if connector.secret is None:
        what = "bot token" if kind is ConnectorKind.SLACK else "URL"
        raise ValidationError(f"channel {channel}: connector {name!r} has no {what} (its secret)")
    return connector


async def check_channel(
    store: RecordStore, workspace_id: str, channel: ChannelRef, allowlist: Allowlist | None = None
) -> None:
    """That messages to ``channel`` have a connector to go through (local ones need none).

    Args:
        allowlist: when a webhook's channel is saved, the connector's URL
            must pass :func:`~agentws.connectors.url_guard.check_saved_url`
            with it (a DNS lookup, bounded); each post is checked by the
            outbound guard anyway, so runs do not pass it.

    Error handling:
        ValidationError, as :func:`chat_connector`; UnsafeUrlError naming
        the connector and its URL's origin (never more of it).
    """
    if channel.sink == "local":
        return
    connector = await chat_connector(store, workspace_id, channel)
    if allowlist is not None and connector.url:
        try:
            # An incoming webhook's ``url`` is its origin only; the whole URL is sealed.
            await check_saved_url(connector.url, allowlist)
        except UnsafeUrlError as exc:
            raise UnsafeUrlError(
                f"channel {channel}: connector {connector.name!r} at {connector.url} "
                f"may not be used: {exc.message}"
            ) from None
