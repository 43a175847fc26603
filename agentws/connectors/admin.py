"""Connectors of a workspace: adding, listing, removing, attaching them to groups.

The one place these operations live (the CLI now, the dashboard and admin
API later). A connector's URL passes
:func:`~agentws.connectors.url_guard.check_saved_url` when it is saved (the
rule of every connection: public addresses only, unless allow-listed); its
secret is sealed with the service key before it is stored and is never
returned. Non-secret headers are stored as given;
headers that usually carry credentials must come as the secret instead.
Every change goes to the audit log with the acting operator.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import attrs

from agentws.common.audit import record, record_removed
from agentws.connectors.names import check_attach
from agentws.connectors.native import cache_native_tools
from agentws.connectors.upstream_auth import UpstreamAuth
from agentws.connectors.url_guard import (
    Allowlist,
    Resolver,
    check_saved_url,
    check_secret_url,
    url_origin,
)
from agentws.core.errors import (
    ConfigError,
    ConflictError,
    UnsafeUrlError,
    ValidationError,
)
from agentws.domain.models import (
    LINK_PROTOCOLS,
    Connector,
    ConnectorKind,
    Group,
    GroupConnector,
)
from agentws.domain.rules import check_identifier, utcnow
from agentws.settings.secret_box import SecretBox
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "DEFAULT_URLS",
    "SECRET_HEADER_FIELD",
    "ConnectorSecret",
    "add_connector",
    "attach_connector",
    "connector_headers",
    "detach_connector",
    "find_connector",
    "list_connectors",
    "parse_header",
    "remove_connector",
    "set_connector_active",
    "set_connector_protocol",
]

#: Where native connectors talk to unless a URL is given (GitHub Enterprise,
#: test servers); a remote MCP connector must have one.
DEFAULT_URLS = {
    ConnectorKind.GITHUB: "https://api.github.com",
    ConnectorKind.SLACK: "https://slack.com/api",
    ConnectorKind.STRIPE: "https://api.stripe.com",
}
#: Key of ``Connector.headers`` naming the header that carries the secret (not itself secret).
SECRET_HEADER_FIELD = "x-agentws-secret-header"  # noqa: S105 - a field name
# Header names whose values are credentials: they must come as the secret.
_SENSITIVE = re.compile(r"authorization|cookie|token|secret|key|password|auth", re.IGNORECASE)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class ConnectorSecret:
    """A secret for a connector, and the header that carries it."""

    value: str = attrs.field(repr=False)
    #: ``Authorization`` sends ``Bearer <value>``; any other header sends the value.
    header: str = "Authorization"


def parse_header(text: str) -> tuple[str, str]:
    """``'Name: value'`` → ``(name, value)``; ValidationError if malformed or a credential."""
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not _HEADER_NAME.fullmatch(name) or not value or "\n" in value:
        raise ValidationError(f"a header is 'Name: value'; got {text!r}")
    if _SENSITIVE.search(name):
        raise ValidationError(
            f"header {name!r} carries a credential: pass it with --secret-env VAR or "
            f"--secret-stdin (and --secret-header {name} unless it is Authorization)"
        )
    return name, value


def connector_headers(connector: Connector, box: SecretBox | None) -> dict[str, str]:
    """The headers to send: the plain ones plus the secret, opened for this use only."""
    headers = {k: v for k, v in connector.headers.items() if k != SECRET_HEADER_FIELD}
    # An OAuth connector's secret is its client's, for the token endpoint alone.
    if connector.secret is not None and connector.auth == "static":
        if box is None:
            raise ConfigError(
                f"connector {connector.name!r} has a secret but no secret key is configured "
                "(AGENTWS_SECRET_KEY, or secret.key in the data directory)"
            )
        name = connector.headers.get(SECRET_HEADER_FIELD, "Authorization")
        value = box.open(connector.secret)
        headers[name] = f"Bearer {value}" if name.lower() == "authorization" else value
    return headers


async def find_connector(store: RecordStore, workspace_slug: str, name: str) -> Connector:
    """The workspace's connector called ``name``; NotFoundError naming it otherwise."""
    return await store.in_workspace(Connector, workspace_slug, name=name)


async def add_connector(
    store: RecordStore,
    workspace_slug: str,
    name: str,
    *,
    kind: ConnectorKind,
    url: str | None,
    headers: dict[str, str],
    secret: ConnectorSecret | None,
    box: SecretBox | None,
    allowlist: Allowlist,
    actor: str,
    resolve: Resolver | None = None,
    protocol: str = "auto",
    auth: UpstreamAuth | None = None,
) -> Connector:
    """Save a new connector.

    Args:
        resolve: the resolver that checks the URL's host (tests give their
            own); the system's by default.
        protocol: the MCP revision a remote MCP connector's link speaks
            (:data:`~agentws.domain.models.LINK_PROTOCOLS`).
        auth: how a remote MCP connector proves who it is upstream (None:
            ``static``, ``secret`` as a header); for ``oauth`` and
            ``client_credentials``, ``secret`` is the client's secret or key.

    Error handling:
        ValidationError for a bad name, a missing URL (remote MCP), a
        credential in a plain header; UnsafeUrlError for a URL connectors
        may not use (a host the allowlist does not name, or not a public
        address); ConflictError if the name is taken in the workspace.
    """
    workspace = await store.workspace_by_slug(workspace_slug)
    check_identifier(name, what="connector name")
    _check_protocol(kind, protocol)
    auth = auth or UpstreamAuth()
    if auth.mode != "static" and kind is not ConnectorKind.REMOTE_MCP:
        raise ValidationError(f"a {kind.value} connector authenticates with its secret only")
    auth.check(has_secret=secret is not None)
    if kind is ConnectorKind.INCOMING_WEBHOOK:
        if url or headers:
            raise ValidationError(
                "an incoming_webhook connector's URL is its secret: pass it with "
                "--secret-env VAR or --secret-stdin, not --url or --header"
            )
        if secret is not None and secret.header != "Authorization":
            raise ValidationError("an incoming_webhook connector's URL goes in no header")
        if secret is None or not secret.value.strip():
            raise ValidationError(
                "an incoming_webhook connector needs its URL: --secret-env VAR or --secret-stdin"
            )
        # Only the origin is kept in clear, for listings; the whole URL is sealed.
        url = url_origin(check_secret_url(secret.value, allowlist))
        secret = attrs.evolve(secret, value=secret.value.strip())
    url = url or DEFAULT_URLS.get(kind)
    if url is None:
        raise ValidationError("a remote MCP connector needs --url (its MCP endpoint)")
    try:
        await check_saved_url(url, allowlist, resolve)
    except UnsafeUrlError as exc:
        if kind is not ConnectorKind.INCOMING_WEBHOOK:
            raise
        # ``url`` is the webhook's origin here: the error names no more of it.
        raise UnsafeUrlError(f"the URL at {url} may not be used: {exc.message}") from None
    sealed: bytes | None = None
    stored_headers = dict(headers)
    if secret is not None:
        if box is None:
            raise ValidationError("no secret key is configured to store the secret with")
        if not secret.value.strip():
            raise ValidationError("the secret is empty")
        if not _HEADER_NAME.fullmatch(secret.header):
            raise ValidationError(f"{secret.header!r} is not a header name")
        sealed = box.seal(secret.value.strip())
        if kind is not ConnectorKind.INCOMING_WEBHOOK and auth.mode == "static":
            # Which header carries the secret is not itself secret.
            stored_headers[SECRET_HEADER_FIELD] = secret.header
    connector = Connector(
        workspace_id=workspace.id,
        name=name,
        kind=kind,
        url=url,
        headers=stored_headers,
        secret=sealed,
        protocol=protocol,
        auth=auth.mode,
        auth_settings=auth.settings(),
    )
    try:
        await store.insert(connector)
    except ConflictError:
        raise ConflictError(
            f"connector {name!r} already exists in workspace {workspace_slug!r}"
        ) from None
    if kind is not ConnectorKind.REMOTE_MCP:
        await cache_native_tools(store, connector)
    await record(store, workspace.id, actor, "connector.add", f"{workspace_slug}/{name}")
    return connector


async def list_connectors(store: RecordStore, workspace_slug: str) -> list[Connector]:
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.select(Connector, workspace_id=workspace.id)


async def remove_connector(
    store: RecordStore, workspace_slug: str, name: str, *, actor: str
) -> Connector:
    """Delete a connector, its cached tools and its attachments."""
    connector = await find_connector(store, workspace_slug, name)
    target = f"{workspace_slug}/{name}"
    return await record_removed(
        store, connector, connector.workspace_id, actor, "connector.remove", target
    )


async def set_connector_active(
    store: RecordStore, workspace_slug: str, name: str, *, active: bool, actor: str
) -> Connector:
    """Offer a connector's tools again (``active``), or stop offering them; audited.

    An inactive connector keeps its settings, secret, tool cache and
    attachments, but no group lists its tools and no link connects to it.
    Setting what already is changes nothing and records nothing.
    """
    connector = await find_connector(store, workspace_slug, name)
    actions = ("connector.activate", "connector.deactivate")
    return await _switched(store, connector, workspace_slug, actor, "active", active, actions)


async def set_connector_relay(
    store: RecordStore, workspace_slug: str, name: str, *, relay: bool, actor: str
) -> Connector:
    """Pass a remote MCP connector's requests (elicitation, sampling, roots) on to callers, or not.

    Off, they are refused with an error saying an admin turned them off
    (:mod:`agentws.connectors.relayed_requests`); audited as
    ``connector.relay_on`` / ``connector.relay_off``. Setting what already
    is changes nothing and records nothing.

    Error handling:
        ValidationError for a connector that is not a remote MCP server.
    """
    connector = await find_connector(store, workspace_slug, name)
    if connector.kind is not ConnectorKind.REMOTE_MCP:
        raise ValidationError(
            f"{name!r} is a {connector.kind.value} connector: only a remote MCP server asks "
            "callers questions"
        )
    actions = ("connector.relay_on", "connector.relay_off")
    switch = "relay_requests"
    return await _switched(store, connector, workspace_slug, actor, switch, relay, actions)


def _check_protocol(kind: ConnectorKind, protocol: str) -> None:
    if protocol not in LINK_PROTOCOLS:
        raise ValidationError(
            f"{protocol!r} is not a protocol a link can speak: one of {', '.join(LINK_PROTOCOLS)}"
        )
    if protocol != "auto" and kind is not ConnectorKind.REMOTE_MCP:
        raise ValidationError(f"a {kind.value} connector speaks no MCP: its protocol is 'auto'")


async def set_connector_protocol(
    store: RecordStore, workspace_slug: str, name: str, *, protocol: str, actor: str
) -> Connector:
    """Pin the MCP revision a remote MCP connector's link speaks, or leave it to ``auto``.

    ``auto`` speaks a handshake revision when the remote does, since only
    those let it ask its caller in the middle of a call; ``2026-07-28``
    suits a remote that asks with ``input_required`` results instead. The
    link connects again at once. Audited as ``connector.protocol``; setting
    what already is changes nothing and records nothing.

    Error handling:
        ValidationError for an unknown revision or a connector that is not
        a remote MCP server.
    """
    connector = await find_connector(store, workspace_slug, name)
    _check_protocol(connector.kind, protocol)
    if connector.protocol == protocol:
        return connector
    stored = await store.update(attrs.evolve(connector, protocol=protocol, updated_at=utcnow()))
    target = f"{workspace_slug}/{connector.name}"
    await record(
        store, connector.workspace_id, actor, "connector.protocol", target, protocol=protocol
    )
    return stored


async def _switched(
    store: RecordStore,
    connector: Connector,
    workspace_slug: str,
    actor: str,
    switch: str,
    on: bool,
    actions: tuple[str, str],
) -> Connector:
    """``connector`` with its ``switch`` turned ``on`` (or off), stored and audited as
    ``actions[0]`` (or ``actions[1]``); as it is, and nothing recorded, if already so."""
    if getattr(connector, switch) is on:
        return connector
    change: dict[str, Any] = {switch: on, "updated_at": utcnow()}
    stored = await store.update(attrs.evolve(connector, **change))
    action = actions[0] if on else actions[1]
    await record(store, connector.workspace_id, actor, action, f"{workspace_slug}/{connector.name}")
    return stored


async def attach_connector(
    store: _Store, workspace_slug: str, group_slug: str, name: str, *, actor: str
) -> GroupConnector:
    """Offer a connector's tools at a group's endpoint; attaching twice is a no-op.

    Error handling:
        ValidationError when one of its tools' names is another tool's in the group.
    """
    group, connector, existing = await _attachment(store, workspace_slug, group_slug, name)
    if existing is not None:
        return existing
    await check_attach(store, group, connector)
    link = await store.insert(GroupConnector(group_id=group.id, connector_id=connector.id))
    await record(
        store,
        group.workspace_id,
        actor,
        "connector.attach",
        f"{workspace_slug}/{group_slug}/{name}",
    )
    return link


async def _attachment(
    store: RecordStore, workspace_slug: str, group_slug: str, name: str
) -> tuple[Group, Connector, GroupConnector | None]:
    """The group, the connector (one with tools) and its attachment to the group, if any."""
    group = await store.group_by_slug(workspace_slug, group_slug)
    connector = await find_connector(store, workspace_slug, name)
    if connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        raise ValidationError(
            f"{name!r} is an incoming webhook: it has no tools to attach; webhooks post to it "
            f"with --channel webhook:{name}"
        )
    existing = await store.find(GroupConnector, group_id=group.id, connector_id=connector.id)
    return group, connector, existing


async def detach_connector(
    store: RecordStore, workspace_slug: str, group_slug: str, name: str, *, actor: str
) -> GroupConnector | None:
    """Stop offering a connector at a group; None if it was not attached."""
    group, _, existing = await _attachment(store, workspace_slug, group_slug, name)
    if existing is None:
        return None
    target = f"{workspace_slug}/{group_slug}/{name}"
    return await record_removed(
        store, existing, group.workspace_id, actor, "connector.detach", target
    )
