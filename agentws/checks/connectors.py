"""A connector's calls to its upstream, made the same way from every door: a test, a refresh.

``agentws connector test|refresh``, the dashboard's connector pages and the
admin API's ``POST .../connectors/<name>/test|refresh`` all call these, so
they connect, time out, audit and say what happened alike.

:func:`check_connector_now` connects once and changes nothing: a remote MCP
server is asked for the handshake and its tool list
(:func:`~agentws.connectors.remote_mcp.probe`); a native connector makes
one harmless authenticated read
(:func:`~agentws.connectors.native.check_connector`); an incoming
webhook's URL is asked without posting
(:func:`~agentws.chat.incoming_webhook.probe_hook`). Nothing is recorded.

:func:`refresh_connector` fetches a remote MCP server's tools
(:func:`~agentws.connectors.remote_mcp.fetch_tools`) into the cache
(:func:`~agentws.tools.cache_sync.sync_tool_cache`) and is audited
(``connector.refresh``, with what changed or why it failed), which the
dashboard's health reads back.

It needs ``connectors/``, ``chat/`` (incoming webhooks) and ``tools/``
(the cache), so it sits in the layer above them. The remote MCP client,
the chat sinks and the cache are imported when a call is made: the CLI
imports this module, and the MCP client takes most of a second to load.
A secret is opened for the request only (the key's box), never kept.
Each door hands over what it holds (:class:`UpstreamAccess`: the CLI's
context, the admin doors' services), so the key and the allowlist are
taken from it in one place.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

import attrs

from agentws.common.audit import record
from agentws.connectors.admin import connector_headers
from agentws.core.errors import AgentwsError, ValidationError
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import Connector, ConnectorKind
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore

if TYPE_CHECKING:
    from agentws.connectors.grants import GrantsStore
    from agentws.connectors.link_auth import LinkAuth
    from agentws.connectors.remote_mcp import Probe, SyncReport

__all__ = [
    "UPSTREAM_S",
    "ConnectorCheck",
    "UpstreamAccess",
    "check_connector_now",
    "refresh_connector",
    "refresh_text",
]

#: How long a test or a refresh waits for the upstream unless the caller says otherwise
#: (long enough for a remote behind a cold start, short enough for a person waiting).
UPSTREAM_S = 20.0


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


class UpstreamAccess(Protocol):
    """What a door holds that a call to an upstream needs (the CLI's context, the
    admin doors' services): the service key, whose box opens the connector's
    secret for the request, and the settings, whose ``AGENTWS_CONNECTOR_ALLOWLIST``
    the URL guard checks."""

    @property
    def keys(self) -> Keys: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> GrantsStore: ...


@attrs.frozen
class ConnectorCheck:
    """What a test of a connector proved; nothing was changed."""

    connector: Connector
    #: What the connection proved, in words ("authenticated as ada", "… 40 tools; …").
    detail: str
    elapsed_ms: int
    #: What a remote MCP server said about itself; None for the other kinds.
    probe: Probe | None = None

    def text(self) -> str:
        """The sentence every door says when the test worked."""
        # An incoming webhook's URL is its secret: it is not repeated here.
        where = (
            ""
            if self.connector.kind is ConnectorKind.INCOMING_WEBHOOK or not self.connector.url
            else f", at {self.connector.url}"
        )
        return (
            f"Connector {self.connector.name!r} works: {self.detail} "
            f"({self.elapsed_ms} ms{where}). Nothing was changed."
        )


async def check_connector_now(
    connector: Connector, door: UpstreamAccess, *, timeout_s: float = UPSTREAM_S
) -> ConnectorCheck:
    """Connect to a connector's upstream once, with its credential, and change nothing.

    Args:
        connector: The connector, as stored.
        door: The key and the allowlist of the door asking.
        timeout_s: How long the upstream has to answer.

    Returns:
        What the connection proved, and how long it took.

    Error handling:
        :class:`~agentws.core.errors.UpstreamError` (unreachable, refused, too slow;
        :class:`~agentws.connectors.remote_mcp.RemoteError` for a remote MCP
        server), :class:`~agentws.core.errors.UnsafeUrlError` from the URL guard,
        :class:`~agentws.core.errors.ConfigError` when a secret needs a key there is not.
    """
    keys, allowlist = _reach(door)
    started = time.monotonic()
    found: Probe | None = None
    if connector.kind is ConnectorKind.REMOTE_MCP:
        from agentws.connectors.remote_mcp import probe, remote_deadline

        box = keys.box() if connector.secret else None
        with remote_deadline(connector, timeout_s):
            async with _link_auth(door, keys).of(connector) as auth:
                found = await probe(connector, box=box, allowlist=allowlist, auth=auth)
        changes = "announces" if found.announces_changes else "does not announce"
        # A server may give an empty name or version (the SDK's default version is "").
        named = (found.server_name.strip(), found.server_version.strip())
        who = " ".join(part for part in named if part) or "a server with no name"
        detail = (
            f"{who} over {found.transport} "
            f"(protocol {found.protocol_version}), {found.tools} tools; it {changes} "
            "changes to its tool list"
        )
    elif connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        from agentws.chat.incoming_webhook import hook_deadline, probe_hook

        # The URL itself is the sealed secret: there is no test without the key.
        hook_box = keys.box()
        with hook_deadline(connector, hook_box, timeout_s):
            detail = await probe_hook(connector, hook_box, allowlist)
    else:
        from agentws.connectors.native import check_connector, upstream_deadline

        box = keys.box() if connector.secret else None
        with upstream_deadline(connector, timeout_s, named=True):
            detail = await check_connector(
                connector, headers=connector_headers(connector, box), allowlist=allowlist
            )
    elapsed_ms = round((time.monotonic() - started) * 1000)
    return ConnectorCheck(connector, detail, elapsed_ms, found)


async def refresh_connector(
    store: _Store,
    workspace_slug: str,
    connector: Connector,
    door: UpstreamAccess,
    *,
    actor: str,
    timeout_s: float = UPSTREAM_S,
) -> SyncReport:
    """Fetch a remote MCP connector's tools into the tool cache now; audited either way.

    A tool whose definition changed loses its admin label (back to write),
    as :func:`~agentws.tools.cache_sync.sync_tool_cache` says. The refresh
    is recorded as ``connector.refresh`` on ``<workspace>/<name>``: the
    counts of what changed, or the ``error``.

    Returns:
        What changed in the cache.

    Error handling:
        ValidationError for a connector of another kind (a native one's tools
        are fixed; an incoming webhook has none), recorded nowhere;
        :class:`~agentws.connectors.remote_mcp.RemoteError` or
        :class:`~agentws.core.errors.UnsafeUrlError` when the remote cannot be used,
        and ConfigError when its secret needs a key there is not (each
        recorded as a failed refresh, then raised).
    """
    if connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        raise ValidationError(f"{connector.name!r} is an incoming webhook: it has no tools")
    if connector.kind is not ConnectorKind.REMOTE_MCP:
        raise ValidationError(f"{connector.name!r} is a native connector: its tools are fixed")
    from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
    from agentws.tools.cache_sync import sync_tool_cache

    target = f"{workspace_slug}/{connector.name}"
    keys, allowlist = _reach(door)
    try:
        box = keys.box() if connector.secret else None
        with remote_deadline(connector, timeout_s):
            async with _link_auth(door, keys).of(connector) as auth:
                tools = await fetch_tools(connector, box=box, allowlist=allowlist, auth=auth)
    except AgentwsError as exc:
        await record(
            store, connector.workspace_id, actor, "connector.refresh", target, error=exc.message
        )
        raise
    report = await sync_tool_cache(store, connector, tools, actor=actor)
    await record(
        store,
        connector.workspace_id,
        actor,
        "connector.refresh",
        target,
        added=len(report.added),
        changed=len(report.changed),
        removed=len(report.removed),
        unchanged=report.unchanged,
    )
    return report


def _link_auth(door: UpstreamAccess, keys: Keys) -> LinkAuth:
    """How a one-off session authenticates upstream, as the service's link would."""
    from agentws.connectors.link_auth import LinkAuth
    from agentws.connectors.url_guard import system_resolver

    return LinkAuth(door.store, door.settings, keys, system_resolver)


def _reach(door: UpstreamAccess) -> tuple[Keys, Allowlist]:
    """The service key and the URL guard's allowlist, as the door holds them."""
    return door.keys, door.settings.connector_allowlist


def refresh_text(name: str, report: SyncReport, *, sep: str = " ") -> str:
    """What a refresh changed, in a sentence or two joined by ``sep``."""
    parts = [f"{len(report.added)} new", f"{len(report.changed)} changed"]
    parts += [f"{len(report.removed)} removed", f"{report.unchanged} unchanged"]
    lines = [f"Tools of {name!r}: {', '.join(parts)}."]
    if report.changed:
        lines.append(
            f"Changed definitions lost their labels (now write): {', '.join(report.changed)}."
        )
    lines += [f"Not listed: {reason}" for reason in report.left_out]
    return sep.join(lines)
