"""The connectors page's calls to a connector's upstream: a test, and a refresh of its tools.

The same service functions as ``agentws connector test`` and ``refresh``,
in the same order: a remote MCP server is asked for the handshake and its
tool list (:func:`~agentws.connectors.remote_mcp.probe`); a native
connector makes one harmless authenticated read
(:func:`~agentws.connectors.native.check_connector`); an incoming webhook's
URL is asked without posting (:func:`~agentws.chat.incoming_webhook.probe_hook`).
A refresh fetches the remote's tools
(:func:`~agentws.connectors.remote_mcp.fetch_tools`) into the cache
(:func:`~agentws.tools.cache_sync.sync_tool_cache`) and is audited
(``connector.refresh``, with what changed or why it failed), which the
health shown on the page reads back. Nothing here ever holds a secret
longer than a call: the box opens it for the request.
"""

from __future__ import annotations

import time

from agentws.admin_access import AdminServices
from agentws.audit import record
from agentws.connectors.registry import connector_headers
from agentws.connectors.remote_mcp import SyncReport
from agentws.domain.models import Connector, ConnectorKind
from agentws.errors import AgentwsError, ValidationError

__all__ = ["REMOTE_S", "check_connector_now", "refresh_now", "report_text"]

#: How long a test or a refresh waits for the upstream (the CLI's default).
REMOTE_S = 20.0


async def check_connector_now(admin: AdminServices, connector: Connector) -> str:
    """Connect once, change nothing: what the connection proved (a notice's text).

    Error handling:
        :class:`~agentws.errors.UpstreamError` (unreachable, refused, too slow),
        :class:`~agentws.errors.UnsafeUrlError` (the URL guard), ConfigError (no key).
    """
    allowlist = admin.settings.connector_allowlist
    started = time.monotonic()
    if connector.kind is ConnectorKind.REMOTE_MCP:
        # Imported when used, as the CLI does: the MCP client is slow to load.
        from agentws.connectors.remote_mcp import probe, remote_deadline

        box = admin.keys.box() if connector.secret else None
        with remote_deadline(connector, REMOTE_S):
            found = await probe(connector, box=box, allowlist=allowlist)
        changes = "announces" if found.announces_changes else "does not announce"
        detail = (
            f"{found.server_name} {found.server_version} over {found.transport} "
            f"(protocol {found.protocol_version}), {found.tools} tools; it {changes} "
            "changes to its tool list"
        )
    elif connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        from agentws.chat.incoming_webhook import hook_deadline, probe_hook

        hook_box = admin.keys.box()
        with hook_deadline(connector, hook_box, REMOTE_S):
            detail = await probe_hook(connector, hook_box, allowlist)
    else:
        from agentws.connectors.native import check_connector, upstream_deadline

        box = admin.keys.box() if connector.secret else None
        with upstream_deadline(connector, REMOTE_S, named=True):
            detail = await check_connector(
                connector, headers=connector_headers(connector, box), allowlist=allowlist
            )
    elapsed_ms = round((time.monotonic() - started) * 1000)
    return f"Connector {connector.name!r} works: {detail} ({elapsed_ms} ms). Nothing was changed."


async def refresh_now(
    admin: AdminServices, workspace_slug: str, connector: Connector, *, actor: str
) -> SyncReport:
    """Fetch a remote MCP connector's tools into the cache now; audited either way.

    Error handling:
        ValidationError for a native connector (its tools are fixed);
        :class:`~agentws.connectors.remote_mcp.RemoteError` or
        :class:`~agentws.errors.UnsafeUrlError` when the remote cannot be used
        (recorded as a failed refresh, then raised).
    """
    if connector.kind is not ConnectorKind.REMOTE_MCP:
        raise ValidationError(f"{connector.name!r} is a native connector: its tools are fixed")
    from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
    from agentws.tools.cache_sync import sync_tool_cache

    target = f"{workspace_slug}/{connector.name}"
    try:
        box = admin.keys.box() if connector.secret else None
        with remote_deadline(connector, REMOTE_S):
            tools = await fetch_tools(
                connector, box=box, allowlist=admin.settings.connector_allowlist
            )
    except AgentwsError as exc:
        await record(
            admin.store,
            connector.workspace_id,
            actor,
            "connector.refresh",
            target,
            error=exc.message,
        )
        raise
    report = await sync_tool_cache(admin.store, connector, tools, actor=actor)
    await record(
        admin.store,
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


def report_text(name: str, report: SyncReport) -> str:
    """What a refresh changed, in a sentence or two (as the CLI says it)."""
    parts = [f"{len(report.added)} new", f"{len(report.changed)} changed"]
    parts += [f"{len(report.removed)} removed", f"{report.unchanged} unchanged"]
    text = f"Tools of {name!r}: {', '.join(parts)}."
    if report.changed:
        text += f" Changed definitions lost their labels (now write): {', '.join(report.changed)}."
    text += "".join(f" Not listed: {reason}" for reason in report.left_out)
    return text
