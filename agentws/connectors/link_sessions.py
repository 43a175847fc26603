"""One link of :class:`~agentws.connectors.links.RemoteLinks`: its state and its session.

A :class:`Link` is what the pool knows of one connector: its connection
while there is one, the last error, and the events callers wait on. The
:class:`SessionKeeper` connects a link (Streamable HTTP, then legacy SSE,
the transport that worked last first; over Streamable HTTP, at the newest
protocol revision both sides speak), refreshes the connector's tool cache
over it, pings an idle remote, and returns when the session ends; the pool
decides when to connect again. What changes when the link speaks the
stateless revision is :mod:`agentws.connectors.modern_link`'s. What the
remote sends during a call reaches its caller through
:mod:`agentws.connectors.relay`. The session's stream and HTTP transport are
watched, so that a remote that ends the stream or forgets the session is
noticed (:class:`WatchedStream`, :class:`SessionWatch`).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from functools import partial
from typing import Any

import anyio
import attrs
import httpx2
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from agentws.connectors.admin import connector_headers
from agentws.connectors.answer_bounds import CappedTransport, refused_if_too_many
from agentws.connectors.direct_call import DirectCaller
from agentws.connectors.link_auth import LinkAuth
from agentws.connectors.modern_link import (
    DeclaringStream,
    check_alive,
    is_modern,
    keep_listening,
)
from agentws.connectors.relay import CallerChannel, RemoteRelay
from agentws.connectors.remote_mcp import (
    TRANSPORTS,
    RemoteError,
    SyncReport,
    describe,
    list_all_tools,
    negotiate,
    open_transport,
)
from agentws.connectors.upstream_auth import auth_transport
from agentws.connectors.url_guard import GuardedTransport, Resolver
from agentws.core.deadlines import deadline
from agentws.core.errors import AgentwsError, NotFoundError, sole_exception
from agentws.core.redaction import redact_url, redact_urls, upstream_excerpt
from agentws.domain.models import Connector
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys

__all__ = [
    "Connection",
    "ContentChanged",
    "Link",
    "LinkSession",
    "LinkState",
    "NotConnected",
    "SessionKeeper",
    "SessionWatch",
    "SyncTools",
    "WatchedStream",
]

log = logging.getLogger("agentws.connectors")

#: Told that a connector's resources or prompts may have changed.
ContentChanged = Callable[[Connector], None]
#: ``sync(connector, tools)``: make the connector's tool cache hold ``tools``.
SyncTools = Callable[[Connector, list[types.Tool]], Awaitable[SyncReport]]

# An idle link asks the remote for a ping this often: it finds dead
# connections before a caller does, and keeps proxies from dropping the stream.
_PING_S = 60.0


class NotConnected(Exception):
    """A connection attempt failed before the session was initialized."""


@attrs.define(eq=False)
class Connection:
    """One initialized session of a link, until its transport ends."""

    session: ClientSession
    transport: str
    scope: trio.CancelScope
    #: The protocol revision agreed with the remote.
    protocol_version: str | None = None
    #: Set when the remote ended the stream the session reads from.
    ended: bool = False
    #: Set when the remote answered 404 to our session id: it no longer knows
    #: the session (it restarted), so it ran nothing we sent since.
    forgotten: bool = False
    #: Sends calls as HTTP exchanges of the link's own, over a stateless revision.
    direct: DirectCaller | None = None


@attrs.define(eq=False)
class Link:
    """What the pool knows of one connector: its connection, its errors, what waits on it."""

    connector: Connector
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    connection: Connection | None = None
    #: Which transport worked last; tried first next time.
    transport: str | None = None
    last_error: str | None = None
    #: Failed connection attempts so far; callers wait for this to move.
    failures: int = 0
    #: Fires (and is replaced) whenever the link is up or an attempt failed.
    changed: trio.Event = attrs.field(factory=trio.Event)
    #: Wakes the link from its back-off or its idle wait.
    wake: trio.Event = attrs.field(factory=trio.Event)
    refresh_wanted: bool = False
    #: One sync of the cache at a time per connector in this process.
    syncing: trio.Lock = attrs.field(factory=trio.Lock)
    refreshes: int = 0
    list_changed: int = 0
    #: The channels of the callers whose calls are in flight over the link.
    in_flight: list[CallerChannel] = attrs.field(factory=list)
    #: A connector's handshake link beside its 2026-07-28 one, for the calls of
    #: callers who can be asked mid-call: it keeps no cache (the main link does).
    secondary: bool = False
    #: Its remote refused a handshake link (it speaks 2026-07-28 alone).
    no_handshake: bool = False

    def notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def poke(self) -> None:
        self.wake.set()

    def request_refresh(self) -> None:
        self.refresh_wanted = True
        self.poke()

    def drop(self, connection: Connection) -> None:
        """Give up ``connection`` (it is lost, or the remote forgot it); reconnect."""
        connection.scope.cancel()
        if self.connection is connection:
            self.connection = None


@attrs.frozen
class LinkState:
    """What a link is doing, for operators and tests."""

    connector: str
    connected: bool
    transport: str | None
    #: The protocol revision the link speaks (None while not connected).
    protocol_version: str | None
    last_error: str | None
    failures: int
    refreshes: int
    list_changed: int


@attrs.frozen
class SessionKeeper:
    """Connects links and keeps their sessions; what :class:`RemoteLinks` runs for each link.

    Args:
        settings: the URL allowlist and the per-call deadline (``tool_timeout_s``).
        keys: the service key, which opens connectors' stored credentials.
        sync: makes the tool cache hold what a connector's remote listed.
        resolve: the resolver the URL guard uses.
        content_changed: told when a remote's resources or prompts may have
            changed: it said so, or its link (re)connected.
    """

    settings: Settings
    keys: Keys
    sync: SyncTools
    resolve: Resolver
    content_changed: ContentChanged
    #: How a connection authenticates upstream (None: static secrets only).
    auth: LinkAuth | None = None

    async def connect_and_keep(self, link: Link) -> None:
        """Connect (Streamable HTTP, then legacy SSE) and serve the link until it ends."""
        connector = link.connector
        if connector.url is None:
            raise RemoteError(f"connector {connector.name!r} has no URL")
        box = self.keys.box() if connector.secret else None
        headers = connector_headers(connector, box)
        kinds = sorted(TRANSPORTS, key=lambda kind: kind != link.transport)
        problems = []
        allowlist = self.settings.connector_allowlist
        connections = self.settings.connector_connections
        for kind in kinds:
            # A guard per attempt: its connection pool closes with the attempt's client.
            guard: httpx2.AsyncBaseTransport = (
                GuardedTransport(allowlist, resolve=self.resolve, connections=connections)
                if connector.auth == "static"
                else auth_transport(allowlist, self.resolve, connections)
            )
            # Answers bounded before anything reads them (agentws.connectors.answer_bounds).
            capped = CappedTransport(guard, self.settings.tool_max_result_bytes)
            try:
                async with self._auth(connector) as auth:
                    await self._serve_over(link, kind, headers, SessionWatch(capped), auth)
                return
            except NotConnected as exc:
                problems.append(f"{kind}: {redact_urls(str(exc))}")
        raise RemoteError(
            f"connector {connector.name!r}: cannot connect to {redact_url(connector.url or '')} "
            f"({'; '.join(problems)})"
        )

    def _auth(self, connector: Connector) -> AbstractAsyncContextManager[httpx2.Auth | None]:
        if self.auth is None:
            return nullcontext(None)
        return self.auth.of(connector)

    async def _serve_over(
        self,
        link: Link,
        kind: str,
        headers: dict[str, str],
        watch: SessionWatch,
        auth: httpx2.Auth | None,
    ) -> None:
        connector = link.connector
        timeout_s = self.settings.tool_timeout_s
        url = connector.url or ""
        connection: Connection | None = None

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                log.info("connector %s: the remote's tool list changed", connector.name)
                link.list_changed += 1
                link.request_refresh()
            elif isinstance(
                message, types.ResourceListChangedNotification | types.PromptListChangedNotification
            ):
                log.info("connector %s: the remote's resources or prompts changed", connector.name)
                self.content_changed(connector)

        def missed_changes() -> None:
            # A listen stream was lost: changes meanwhile went unheard.
            link.request_refresh()
            self.content_changed(connector)

        try:
            with trio.CancelScope(deadline=trio.current_time() + timeout_s) as connecting:
                async with open_transport(
                    kind,
                    url,
                    headers,
                    watch,
                    timeout_s=timeout_s,
                    stream_read_timeout_s=None,
                    max_event_bytes=self.settings.tool_max_result_bytes,
                    auth=auth,
                ) as (read, write):
                    watched = WatchedStream(read)
                    relay = RemoteRelay(connector.name, link.in_flight, answer_s=timeout_s)
                    async with LinkSession(
                        watched,
                        DeclaringStream(write),
                        message_handler=on_message,
                        **relay.session_callbacks(),
                    ) as session:
                        await negotiate(session, kind, connector.protocol)
                        watched.complete_by_default = is_modern(session)
                        connecting.deadline = math.inf
                        version = session.protocol_version
                        with trio.CancelScope() as scope:
                            connection = watch.connection = Connection(
                                session, kind, scope, version
                            )
                            if kind == "streamable_http":
                                connection.direct = DirectCaller.for_session(
                                    session, url, headers, watch, timeout_s, auth
                                )
                            watched.on_end = on_end_of(link, connection)
                            link.connection, link.transport = connection, kind
                            link.last_error = None
                            link.notify()
                            log.info(
                                "connector %s: linked over %s (MCP %s)",
                                connector.name,
                                kind,
                                version,
                            )
                            if not link.secondary:
                                # What it offers may have changed while it was away.
                                self.content_changed(connector)
                            async with trio.open_nursery() as nursery:
                                if is_modern(session):
                                    # No GET stream: list changes come on a listen stream.
                                    listening = functools.partial(keep_listening, ack_s=timeout_s)
                                    nursery.start_soon(
                                        listening, connector.name, session, missed_changes
                                    )
                                await self._keep(link, connection)
                                nursery.cancel_scope.cancel()
        except AgentwsError:
            raise
        except BaseExceptionGroup as group:
            if isinstance(group, Exception):
                raise self._failure(link, connection, group) from None
            # Cancelled (the link closed, or shutdown) while the transport failed
            # too: the cancellation is what happened. Re-raised alone, since the
            # scope that cancelled would let the transport's error through.
            cancelled, rest = group.split(trio.Cancelled)
            if cancelled is None:
                raise
            if rest is not None:
                log.debug("connector %s: closed while failing: %r", connector.name, rest)
            raise cancelled from None
        except Exception as exc:
            raise self._failure(link, connection, exc) from None
        finally:
            if link.connection is connection:
                link.connection = None
        if connection is None:
            raise NotConnected(f"no answer within {timeout_s:g} s")

    @staticmethod
    def _failure(link: Link, connection: Connection | None, exc: BaseException) -> Exception:
        """What a failed connection is reported as: not connected, or a broken link."""
        connector = link.connector
        leaf = sole_exception(exc, first_of_several=True)
        if isinstance(leaf, AgentwsError):
            return leaf
        if connection is None:
            return NotConnected(describe(leaf))
        return RemoteError(
            f"connector {connector.name!r}: the connection to {connector.url} failed: "
            f"{describe(leaf)}"
        )

    async def _keep(self, link: Link, connection: Connection) -> None:
        """Refresh the cache now and whenever asked; ping an idle remote; end when it does."""
        link.refresh_wanted = not link.secondary
        timeout_s = self.settings.tool_timeout_s
        while not connection.ended:
            if link.refresh_wanted and not link.secondary:
                link.refresh_wanted = False
                await self._refresh_over(link, connection.session)
                continue
            link.wake = trio.Event()
            with trio.move_on_after(_PING_S) as idle:
                await link.wake.wait()
            if idle.cancelled_caught:
                silent = partial(
                    RemoteError,
                    f"connector {link.connector.name!r}: no answer to a ping "
                    f"within {timeout_s:g} s",
                )
                try:
                    with deadline(timeout_s, silent):
                        if is_modern(connection.session):
                            await check_alive(connection.session)  # no ping in that revision
                        else:
                            await connection.session.send_ping()
                except MCPError as exc:
                    raise RemoteError(
                        f"connector {link.connector.name!r}: ping failed: "
                        f"{upstream_excerpt(exc.error.message)}"
                    ) from None

    async def _refresh_over(self, link: Link, session: ClientSession) -> None:
        name = link.connector.name
        try:
            capabilities = session.server_capabilities
            if capabilities is not None and capabilities.tools is None:
                tools = []  # a remote that offers only resources or prompts
            else:
                with trio.fail_after(self.settings.tool_timeout_s):
                    tools = await list_all_tools(session)
            async with link.syncing:
                await self.sync(link.connector, tools)
        except trio.TooSlowError:
            log.warning("connector %s: tools/list took longer than the deadline", name)
        except MCPError as exc:
            log.warning("connector %s: tools/list failed: %s", name, exc.error.message)
        except NotFoundError:
            log.info("connector %s was removed", name)
        except AgentwsError as exc:
            log.warning("connector %s: cannot update the tool cache: %s", name, exc.message)
        else:
            link.refreshes += 1


def on_end_of(link: Link, connection: Connection) -> Callable[[], None]:
    def ended() -> None:
        connection.ended = True
        link.poke()

    return ended


@attrs.define(eq=False)
class SessionWatch(httpx2.AsyncBaseTransport):
    """Passes requests on; notes a 404 to a request that carried our session id.

    A Streamable HTTP server answers 404 to a session it no longer knows
    (MCP 2025-03-26, "Session Management"); the client must start a new one.
    """

    inner: httpx2.AsyncBaseTransport
    connection: Connection | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if (
            response.status_code == 404
            and "mcp-session-id" in request.headers
            and self.connection is not None
        ):
            self.connection.forgotten = True
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class LinkSession(ClientSession):
    """A link's session: a result's structured content is checked by agentws, not here.

    The SDK checks it against the tool's output schema with a validator in
    pure Python, on the event loop, whatever the remote's schema (quadratic
    ``uniqueItems``, backtracking patterns, branching combinators). agentws
    checks it against the schema the catalog cached, as it checks arguments
    (:meth:`~agentws.tools.validation.ArgumentChecker.output_problem`).
    """

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        """Nothing: the tool runner checks results (see the class docstring)."""


@attrs.define(eq=False)
class WatchedStream:
    """A read stream that reports when it ends: the remote closed the session's stream."""

    inner: Any
    on_end: Callable[[], None] | None = None
    #: Set once the session speaks 2026-07-28: a result without ``resultType``
    #: is then a complete one, as that revision says a client must assume
    #: (the SDK's session would refuse it).
    complete_by_default: bool = False

    async def receive(self) -> Any:
        try:
            item = await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._ended()
            raise
        if isinstance(item, SessionMessage):
            # Before the session validates a result: one with a list too long is refused.
            message = refused_if_too_many(item.message)
            if (
                self.complete_by_default
                and isinstance(message, types.JSONRPCResponse)
                and "resultType" not in message.result
            ):
                result = {**message.result, "resultType": "complete"}
                message = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
            if message is not item.message:
                item = SessionMessage(message, item.metadata)
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WatchedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    def _ended(self) -> None:
        if self.on_end is not None:
            self.on_end()
