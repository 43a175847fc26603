"""Live sessions with remote MCP connectors: one per connector, shared, owned by one nursery.

``tools/list`` never waits on a remote, but two things want a live session
with it: forwarding calls without a new handshake each time, and hearing
the remote's ``notifications/tools/list_changed``. :class:`RemoteLinks`
keeps one MCP client session per active remote MCP connector, shared by
every caller in the process:

- a link connects when the service starts (or when its connector first
  appears), refreshes the connector's tool cache, then stays open; an idle
  link pings the remote so a dead connection is noticed;
- ``notifications/tools/list_changed`` from the remote, the periodic
  round (every ``AGENTWS_CONNECTOR_REFRESH_S``; ``0`` turns only it off) or
  :meth:`RemoteLinks.refresh` fetch the tool list again over the link and
  sync the cache;
- connectors added or removed by another process (the CLI) are found
  every 30 s, or when a call first needs one;
- a lost connection is re-established with capped exponential back-off; a
  call that arrives meanwhile asks for an attempt at once and fails with a
  clear :class:`~agentws.connectors.remote_mcp.RemoteError` if it fails,
  rather than waiting out the back-off;
- every link runs in the pool's nursery and every connection goes through
  the URL guard; :meth:`RemoteLinks.close` cancels them all, which closes
  their HTTP connections.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import attrs
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from agentws.connectors.answer_bounds import ANSWER_REFUSED
from agentws.connectors.grants import GrantsStore
from agentws.connectors.link_auth import LinkAuth, Lost
from agentws.connectors.link_sessions import (
    Connection,
    ContentChanged,
    Link,
    LinkState,
    SessionKeeper,
    SyncTools,
)
from agentws.connectors.modern_link import is_modern
from agentws.connectors.relay import (
    CallerChannel,
    calling,
    remote_round_of,
)
from agentws.connectors.relayed_requests import ConnectorChannel
from agentws.connectors.remote_calls import call_remote_tool
from agentws.connectors.remote_mcp import (
    RemoteError,
    SyncReport,
    describe,
    list_all_tools,
    remote_deadline,
)
from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.core.backoff import Backoff
from agentws.core.errors import AgentwsError, sole_exception
from agentws.core.redaction import upstream_excerpt
from agentws.domain.models import Connector, ConnectorKind
from agentws.domain.tool_results import tool_error
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys

__all__ = ["ACTOR", "ContentChanged", "RemoteLinks", "SyncTools"]

log = logging.getLogger("agentws.connectors")

T = TypeVar("T")

#: Who the audit log says refreshed a cache over a link.
ACTOR = "system:connector-link"

# Back-off between connection attempts of a link whose remote is down.
_RECONNECT = Backoff(first_s=1.0, cap_s=60.0)
# How often the pool looks for connectors added or removed by another process.
_DISCOVER_S = 30.0


def _fingerprint(connector: Connector) -> tuple[Any, ...]:
    # A connector saved again with another address or credential needs a new link.
    return (
        connector.id,
        connector.url,
        tuple(sorted(connector.headers.items())),
        connector.secret,
        connector.protocol,
    )


def _key(connector_id: str, handshake: bool) -> str:
    return f"{connector_id}/handshake" if handshake else connector_id


def _for_connector(connector: Connector, channel: CallerChannel | None) -> CallerChannel | None:
    """The caller's channel as ``connector``'s remote may use it: its requests marked as its own."""
    if channel is None:
        return None
    return ConnectorChannel(connector.name, connector.relay_requests, channel)


@attrs.define(eq=False)
class RemoteLinks:
    """The process's live sessions with remote MCP connectors.

    Args:
        store: where connectors are read and the tool cache is written.
        settings: the URL allowlist, the per-call deadline
            (``tool_timeout_s``) and the secret key.
        keys: the service key, which opens connectors' stored credentials.
        sync: makes the tool cache hold what a connector's remote listed
            (:func:`agentws.tools.cache_sync.sync_tool_cache` with its store and actor).
        resolve: the resolver the URL guard uses (tests give their own).

    Start it with ``await nursery.start(links.serve)``; :meth:`close` ends it.
    """

    store: GrantsStore
    settings: Settings
    keys: Keys
    sync: SyncTools
    resolve: Resolver = system_resolver
    #: Told which connector's resources or prompts may have changed (:meth:`on_content_changed`).
    _content_watchers: list[ContentChanged] = attrs.field(factory=list, init=False)
    #: Told once per loss that an OAuth connector needs authorization (:meth:`on_lost`).
    _lost_watchers: list[Lost] = attrs.field(factory=list, init=False)
    _keeper: SessionKeeper = attrs.field(
        default=attrs.Factory(
            lambda self: SessionKeeper(
                self.settings,
                self.keys,
                self.sync,
                self.resolve,
                self._content_changed,
                LinkAuth(self.store, self.settings, self.keys, self.resolve, self._lost),
            ),
            takes_self=True,
        ),
        init=False,
    )
    _links: dict[str, Link] = attrs.field(factory=dict, init=False)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    _closing: trio.Event = attrs.field(factory=trio.Event, init=False)

    async def serve(
        self, *, task_status: trio.TaskStatus[RemoteLinks] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Keep a link to every active remote MCP connector until :meth:`close`.

        Resource handling:
            Every link is a task of the nursery opened here; when it ends,
            every remote connection is closed.
        """
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._maintain)
                task_status.started(self)
                await self._closing.wait()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            self._links.clear()

    def close(self) -> None:
        """Close every link and stop serving. Idempotent."""
        self._closing.set()

    def states(self) -> list[LinkState]:
        """The state of each link, by connector name."""
        return [
            LinkState(
                connector=link.connector.name,
                connected=link.connection is not None,
                transport=link.connection.transport if link.connection else None,
                protocol_version=link.connection.protocol_version if link.connection else None,
                last_error=link.last_error,
                failures=link.failures,
                refreshes=link.refreshes,
                list_changed=link.list_changed,
            )
            for link in sorted(self._links.values(), key=lambda link: link.connector.name)
            if not link.secondary
        ]

    async def reconcile(self) -> None:
        """Link every active remote MCP connector in the store; unlink the others."""
        connectors = await self.store.select(Connector, kind=ConnectorKind.REMOTE_MCP, active=True)
        wanted = {c.id: c for c in connectors}
        for link in list(self._links.values()):
            if link.connector.id not in wanted:
                self._unlink(link)
        for connector in connectors:
            self._link(connector)

    async def refresh_all(self) -> None:
        """Reconcile, then ask every link to fetch its tool list again (done in the background)."""
        await self.reconcile()
        for link in self._links.values():
            link.request_refresh()

    async def refresh(self, connector: Connector) -> SyncReport:
        """Fetch ``connector``'s tools over its link now and sync the cache.

        Error handling:
            :class:`RemoteError` if the remote cannot be reached or does not
            answer within ``tool_timeout_s``.
        """
        link = self._link(connector)
        with self._deadline(connector):
            connection = await self._connection(link)
            try:
                tools = await list_all_tools(connection.session)
            except MCPError as exc:
                lost = self._mcp_failure(link, connection, exc, "list tools")
                raise lost or RemoteError(
                    f"connector {connector.name!r}: tools/list failed: "
                    f"{upstream_excerpt(exc.error.message)}"
                ) from None
        async with link.syncing:
            report = await self.sync(connector, tools)
        link.refreshes += 1
        return report

    async def call_tool(
        self,
        connector: Connector,
        name: str,
        arguments: dict[str, Any],
        *,
        retry_safe: bool,
        channel: CallerChannel | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call the remote's tool ``name`` over the connector's link.

        Args:
            retry_safe: whether the call may run twice (a read tool): such a
                call whose connection is lost in flight is sent once more
                over a new connection.
            channel: where the remote's progress, log messages, elicitation
                and sampling requests during the call go (see
                :mod:`agentws.connectors.relay`); None: nowhere. Cancelling
                the call cancels the remote request.

        Returns:
            The remote's result; a JSON-RPC error from the remote (unknown
            tool, invalid arguments) or a result that breaks the tool's output
            schema becomes a result with ``isError``. Over a link of the
            stateless revision, for a channel with a
            :class:`~agentws.connectors.relay.RemoteRound`, the remote's
            ``input_required`` answer made the caller's
            (:mod:`agentws.connectors.modern_link`).

        Error handling:
            :class:`RemoteError` naming the connector when the remote cannot
            be reached, drops the connection or does not answer within
            ``tool_timeout_s``; UnsafeUrlError if its address may not be reached.
        """
        link = self._link(connector)
        channel = _for_connector(connector, channel)
        with self._deadline(connector):
            main = link
            for attempt in (1, 2):
                link, connection = await self._for_caller(
                    connector, main, await self._connection(main), channel
                )
                progress = channel.progress if channel is not None else None
                try:
                    with calling(link.in_flight, channel):
                        return await call_remote_tool(
                            connection.session,
                            name,
                            arguments,
                            channel=channel,
                            progress=progress,
                            direct=connection.direct,
                        )
                except MCPError as exc:
                    if exc.error.code == ANSWER_REFUSED:
                        # An answer over agentws's bounds (answer_bounds): not the remote's words.
                        return tool_error(f"{connector.name} {exc.error.message}")
                    failure = self._mcp_failure(link, connection, exc, f"call {name}")
                    passed = remote_round_of(channel)
                    if (
                        failure is None
                        and passed is not None
                        and exc.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
                    ):
                        # The remote was told what the caller declared, and
                        # needs more: the caller's error, as if agentws had asked.
                        passed.refused(exc.error.data)
                    if failure is None:
                        return tool_error(
                            f"{connector.name} answered: {upstream_excerpt(exc.error.message)}"
                        )
                    if attempt == 2 or not (retry_safe or connection.forgotten):
                        raise failure from None
                    log.info("%s; calling again over a new connection", failure.message)
                except RuntimeError as exc:
                    # The SDK's checks of the result: structured content that does
                    # not match the tool's output schema, a result of another era.
                    return tool_error(
                        f"{connector.name} answered what cannot be passed on: "
                        f"{upstream_excerpt(str(exc))}"
                    )
        raise AssertionError("unreachable")  # pragma: no cover

    async def request(
        self,
        connector: Connector,
        what: str,
        send: Callable[[ClientSession], Awaitable[T]],
        *,
        channel: CallerChannel | None = None,
    ) -> T:
        """Send one request to the remote over the connector's link: ``send(session)``.

        Args:
            what: what the request does, for errors ("read test://a").
            channel: where what the remote sends during the request goes
                (see :meth:`call_tool`); None: nowhere.

        Error handling:
            :class:`RemoteError` naming the connector when the remote cannot
            be reached, drops the connection or does not answer within
            ``tool_timeout_s``; the remote's own JSON-RPC errors are
            MCPError, passed on.
        """
        link = self._link(connector)
        channel = _for_connector(connector, channel)
        with self._deadline(connector):
            link, connection = await self._for_caller(
                connector, link, await self._connection(link), channel
            )
            try:
                with calling(link.in_flight, channel):
                    return await send(connection.session)
            except MCPError as exc:
                if exc.error.code == ANSWER_REFUSED:
                    message = f"{connector.name} {exc.error.message}"
                    raise MCPError(ANSWER_REFUSED, message) from None
                failure = self._mcp_failure(link, connection, exc, what)
                if failure is not None:
                    raise failure from None
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def on_content_changed(self, watcher: ContentChanged) -> None:
        """Call ``watcher(connector)`` when a connector's resources or prompts may have changed.

        That is: its remote said so (``notifications/resources/list_changed``,
        ``notifications/prompts/list_changed``), or its link connected again.
        """
        self._content_watchers.append(watcher)

    def on_lost(self, watcher: Lost) -> None:
        """Call ``await watcher(connector, reason)`` when a connector's grant is lost:
        once per loss, on the instance that found it."""
        self._lost_watchers.append(watcher)

    # -- internals ---------------------------------------------------------

    async def _lost(self, connector: Connector, reason: str) -> None:
        # Told in the pool's nursery: a post to a chat must not hold the call that
        # found the loss (or the link) for as long as the chat takes.
        if self._nursery is None:
            return
        for watcher in self._lost_watchers:
            self._nursery.start_soon(self._tell_lost, watcher, connector, reason)

    @staticmethod
    async def _tell_lost(watcher: Lost, connector: Connector, reason: str) -> None:
        try:
            await watcher(connector, reason)
        except Exception:
            # Telling of a loss must not turn it into the pool's failure.
            log.exception("connector %s: telling of its lost authorization failed", connector.name)

    def _content_changed(self, connector: Connector) -> None:
        for watcher in self._content_watchers:
            watcher(connector)

    def _deadline(self, connector: Connector) -> AbstractContextManager[None]:
        return remote_deadline(connector, self.settings.tool_timeout_s)

    def _link(self, connector: Connector, *, handshake: bool = False) -> Link:
        """The connector's link (``handshake``: its handshake link, see :meth:`_for_caller`)."""
        if self._nursery is None:
            raise RemoteError("connector links are not running (the service is shutting down)")
        key = _key(connector.id, handshake)
        if handshake:
            connector = attrs.evolve(connector, protocol=LATEST_HANDSHAKE_VERSION)
        link = self._links.get(key)
        if link is not None and _fingerprint(link.connector) == _fingerprint(connector):
            return link
        if link is not None:
            self._unlink(link)
        link = Link(connector, secondary=handshake)
        self._links[key] = link
        self._nursery.start_soon(self._run, link)
        return link

    def _unlink(self, link: Link) -> None:
        link.scope.cancel()
        key = _key(link.connector.id, link.secondary)
        if self._links.get(key) is link:
            del self._links[key]

    async def _for_caller(
        self,
        connector: Connector,
        link: Link,
        connection: Connection,
        channel: CallerChannel | None,
    ) -> tuple[Link, Connection]:
        """The link and connection a caller's request goes over.

        A remote linked at 2026-07-28 cannot ask its caller anything in the
        middle of a call, but one that speaks a handshake revision too may
        ask over that one (servers written for those revisions do, and SDK
        servers speak both whatever their discovery lists). So when the
        caller declared what it could be asked (and the connector's revision
        is left to ``auto``), the request goes over the connector's handshake
        link, opened on first need and kept; a remote that refuses the
        handshake is not asked again while the link lives. Every other
        request takes the stateless link's quicker path.
        """
        if (
            channel is None
            or connector.protocol != "auto"
            or link.no_handshake
            or not is_modern(connection.session)
            or not channel.asks_back
        ):
            return link, connection
        handshake = self._link(connector, handshake=True)
        try:
            return handshake, await self._connection(handshake)
        except RemoteError as exc:
            # A remote of 2026-07-28 alone (its discovery does not say): the
            # stateless link it is, for as long as this link lives.
            log.info("connector %s: no handshake link (%s)", connector.name, exc.message)
            link.no_handshake = True
            self._unlink(handshake)
            return link, connection

    async def _connection(self, link: Link) -> Connection:
        """The link's connection; if it is down, one connection attempt right now."""
        failures = link.failures
        while link.connection is None:
            if link.failures > failures:
                raise RemoteError(link.last_error or f"connector {link.connector.name!r} is down")
            link.poke()
            await link.changed.wait()
        return link.connection

    def _mcp_failure(
        self, link: Link, connection: Connection, exc: MCPError, what: str
    ) -> RemoteError | None:
        """A RemoteError if ``exc`` means the connection is gone (and drop it); None otherwise."""
        if connection.forgotten:
            reason = "the remote no longer knows our session"
        elif exc.error.code == types.CONNECTION_CLOSED:
            reason = "the connection was lost"
        else:
            return None
        link.drop(connection)
        return RemoteError(
            f"connector {link.connector.name!r}: cannot {what} at {link.connector.url}: {reason}"
        )

    async def _maintain(self) -> None:
        """Reconcile every ``_DISCOVER_S``; every ``connector_refresh_s``, refresh every link."""
        refresh_s = self.settings.connector_refresh_s
        next_refresh = trio.current_time() + refresh_s if refresh_s > 0 else math.inf
        while True:
            refresh = trio.current_time() >= next_refresh
            if refresh:
                next_refresh = trio.current_time() + refresh_s
            try:
                await (self.refresh_all() if refresh else self.reconcile())
            except AgentwsError as exc:
                log.warning("connector links: cannot read connectors: %s", exc.message)
            except Exception:
                # Looking again later beats taking the service down with us.
                log.exception("connector links: cannot read connectors")
            await trio.sleep_until(min(trio.current_time() + _DISCOVER_S, next_refresh))

    async def _run(self, link: Link) -> None:
        """Keep ``link`` connected until it is unlinked or the pool closes."""
        name = link.connector.name
        failures = 0  # attempts since the link last connected and then ended
        try:
            with link.scope:
                while True:
                    link.wake = trio.Event()
                    try:
                        await self._keeper.connect_and_keep(link)
                    except RemoteError as exc:
                        self._failed(link, exc.message)
                    except AgentwsError as exc:  # UnsafeUrlError, a missing secret key
                        named = exc.message.startswith(f"connector {name!r}")
                        self._failed(
                            link, exc.message if named else f"connector {name!r}: {exc.message}"
                        )
                    except Exception as exc:
                        # A transport failure we did not foresee must not end the link.
                        log.exception("connector link %s failed", name)
                        leaf = sole_exception(exc, first_of_several=True)
                        self._failed(link, f"connector {name!r}: {describe(leaf)}")
                    else:
                        log.info("connector %s: the connection ended; connecting again", name)
                        failures = 0
                        link.last_error = f"connector {name!r}: the connection ended"
                    failures += 1
                    with trio.move_on_after(_RECONNECT.delay_s(failures)):
                        await link.wake.wait()
        finally:
            # Callers still waiting for this link learn at once that it is gone.
            link.connection = None
            link.last_error = f"connector {name!r}: its link was closed"
            link.failures += 1
            link.notify()

    def _failed(self, link: Link, message: str) -> None:
        # One warning when a remote goes down (or fails differently); retries are quieter.
        level = logging.INFO if message == link.last_error else logging.WARNING
        log.log(level, "connector link: %s", message)
        link.last_error = message
        link.failures += 1
        link.notify()
