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
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import attrs
import httpx2
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from agentws.config import Settings
from agentws.connectors.registry import connector_headers
from agentws.connectors.remote_mcp import (
    TRANSPORTS,
    RemoteError,
    SyncReport,
    describe,
    list_all_tools,
    open_transport,
)
from agentws.connectors.url_guard import GuardedTransport, Resolver, system_resolver
from agentws.domain.models import Connector, ConnectorKind
from agentws.errors import AgentwsError, NotFoundError, sole_exception
from agentws.redaction import redact_url, redact_urls, upstream_excerpt
from agentws.secret_box import Keys
from agentws.store import Store

__all__ = ["ACTOR", "RemoteLinks", "SyncTools"]

log = logging.getLogger("agentws.connectors")

#: Who the audit log says refreshed a cache over a link.
ACTOR = "system:connector-link"

#: ``sync(connector, tools)``: make the connector's tool cache hold ``tools``.
SyncTools = Callable[[Connector, list[types.Tool]], Awaitable[SyncReport]]

# An idle link asks the remote for a ping this often: it finds dead
# connections before a caller does, and keeps proxies from dropping the stream.
_PING_S = 60.0
# Back-off between connection attempts of a link whose remote is down.
_BACKOFF_MIN_S = 1.0
_BACKOFF_MAX_S = 60.0
# How often the pool looks for connectors added or removed by another process.
_DISCOVER_S = 30.0


def _fingerprint(connector: Connector) -> tuple[Any, ...]:
    # A connector saved again with another address or credential needs a new link.
    return (connector.id, connector.url, tuple(sorted(connector.headers.items())), connector.secret)


class _NotConnected(Exception):
    """A connection attempt failed before the session was initialized."""


@attrs.define(eq=False)
class _Connection:
    """One initialized session of a link, until its transport ends."""

    session: ClientSession
    transport: str
    scope: trio.CancelScope
    #: Set when the remote ended the stream the session reads from.
    ended: bool = False
    #: Set when the remote answered 404 to our session id: it no longer knows
    #: the session (it restarted), so it ran nothing we sent since.
    forgotten: bool = False


@attrs.define(eq=False)
class _Link:
    connector: Connector
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    connection: _Connection | None = None
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

    def notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def poke(self) -> None:
        self.wake.set()

    def request_refresh(self) -> None:
        self.refresh_wanted = True
        self.poke()

    def drop(self, connection: _Connection) -> None:
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
    last_error: str | None
    failures: int
    refreshes: int
    list_changed: int


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

    store: Store
    settings: Settings
    keys: Keys
    sync: SyncTools
    resolve: Resolver = system_resolver
    _links: dict[str, _Link] = attrs.field(factory=dict, init=False)
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
                last_error=link.last_error,
                failures=link.failures,
                refreshes=link.refreshes,
                list_changed=link.list_changed,
            )
            for link in sorted(self._links.values(), key=lambda link: link.connector.name)
        ]

    async def reconcile(self) -> None:
        """Link every active remote MCP connector in the store; unlink the others."""
        connectors = await self.store.select(Connector, kind=ConnectorKind.REMOTE_MCP, active=True)
        wanted = {c.id: c for c in connectors}
        for connector_id, link in list(self._links.items()):
            if connector_id not in wanted:
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
        self, connector: Connector, name: str, arguments: dict[str, Any], *, retry_safe: bool
    ) -> types.CallToolResult:
        """Call the remote's tool ``name`` over the connector's link.

        Args:
            retry_safe: whether the call may run twice (a read tool): such a
                call whose connection is lost in flight is sent once more
                over a new connection.

        Returns:
            The remote's result; a JSON-RPC error from the remote (unknown
            tool, invalid arguments) becomes a result with ``isError``.

        Error handling:
            :class:`RemoteError` naming the connector when the remote cannot
            be reached, drops the connection or does not answer within
            ``tool_timeout_s``; UnsafeUrlError if its address may not be reached.
        """
        link = self._link(connector)
        with self._deadline(connector):
            for attempt in (1, 2):
                connection = await self._connection(link)
                try:
                    return await connection.session.call_tool(name, arguments)
                except MCPError as exc:
                    failure = self._mcp_failure(link, connection, exc, f"call {name}")
                    if failure is None:
                        return _error_result(
                            f"{connector.name} answered: {upstream_excerpt(exc.error.message)}"
                        )
                    if attempt == 2 or not (retry_safe or connection.forgotten):
                        raise failure from None
                    log.info("%s; calling again over a new connection", failure.message)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- internals ---------------------------------------------------------

    @contextmanager
    def _deadline(self, connector: Connector) -> Iterator[None]:
        timeout_s = self.settings.tool_timeout_s
        with trio.move_on_after(timeout_s) as scope:
            yield
        if scope.cancelled_caught:
            raise RemoteError(
                f"connector {connector.name!r}: {connector.url} did not answer "
                f"within {timeout_s:g} s"
            )

    def _link(self, connector: Connector) -> _Link:
        if self._nursery is None:
            raise RemoteError("connector links are not running (the service is shutting down)")
        link = self._links.get(connector.id)
        if link is not None and _fingerprint(link.connector) == _fingerprint(connector):
            return link
        if link is not None:
            self._unlink(link)
        link = _Link(connector)
        self._links[connector.id] = link
        self._nursery.start_soon(self._run, link)
        return link

    def _unlink(self, link: _Link) -> None:
        link.scope.cancel()
        if self._links.get(link.connector.id) is link:
            del self._links[link.connector.id]

    async def _connection(self, link: _Link) -> _Connection:
        """The link's connection; if it is down, one connection attempt right now."""
        failures = link.failures
        while link.connection is None:
            if link.failures > failures:
                raise RemoteError(link.last_error or f"connector {link.connector.name!r} is down")
            link.poke()
            await link.changed.wait()
        return link.connection

    def _mcp_failure(
        self, link: _Link, connection: _Connection, exc: MCPError, what: str
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

    async def _run(self, link: _Link) -> None:
        """Keep ``link`` connected until it is unlinked or the pool closes."""
        name = link.connector.name
        backoff = _BACKOFF_MIN_S
        try:
            with link.scope:
                while True:
                    link.wake = trio.Event()
                    try:
                        await self._connect_and_serve(link)
                    except RemoteError as exc:
                        self._failed(link, exc.message)
                    except AgentwsError as exc:  # UnsafeUrlError, a missing secret key
                        self._failed(link, f"connector {name!r}: {exc.message}")
                    except Exception as exc:
                        # A transport failure we did not foresee must not end the link.
                        log.exception("connector link %s failed", name)
                        leaf = sole_exception(exc, first_of_several=True)
                        self._failed(link, f"connector {name!r}: {describe(leaf)}")
                    else:
                        log.info("connector %s: the connection ended; connecting again", name)
                        backoff = _BACKOFF_MIN_S
                        link.last_error = f"connector {name!r}: the connection ended"
                    with trio.move_on_after(backoff):
                        await link.wake.wait()
                    backoff = min(backoff * 2, _BACKOFF_MAX_S)
        finally:
            # Callers still waiting for this link learn at once that it is gone.
            link.connection = None
            link.last_error = f"connector {name!r}: its link was closed"
            link.failures += 1
            link.notify()

    def _failed(self, link: _Link, message: str) -> None:
        # One warning when a remote goes down (or fails differently); retries are quieter.
        level = logging.INFO if message == link.last_error else logging.WARNING
        log.log(level, "connector link: %s", message)
        link.last_error = message
        link.failures += 1
        link.notify()

    async def _connect_and_serve(self, link: _Link) -> None:
        """Connect (Streamable HTTP, then legacy SSE) and serve the link until it ends."""
        connector = link.connector
        if connector.url is None:
            raise RemoteError(f"connector {connector.name!r} has no URL")
        box = self.keys.box() if connector.secret else None
        headers = connector_headers(connector, box)
        kinds = sorted(TRANSPORTS, key=lambda kind: kind != link.transport)
        problems = []
        for kind in kinds:
            # A guard per attempt: its connection pool closes with the attempt's client.
            guard = GuardedTransport(self.settings.connector_allowlist, resolve=self.resolve)
            try:
                await self._serve_over(link, kind, headers, _SessionWatch(guard))
                return
            except _NotConnected as exc:
                problems.append(f"{kind}: {redact_urls(str(exc))}")
        raise RemoteError(
            f"connector {connector.name!r}: cannot connect to {redact_url(connector.url or '')} "
            f"({'; '.join(problems)})"
        )

    async def _serve_over(
        self, link: _Link, kind: str, headers: dict[str, str], watch: _SessionWatch
    ) -> None:
        connector = link.connector
        timeout_s = self.settings.tool_timeout_s
        url = connector.url or ""
        connection: _Connection | None = None

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                log.info("connector %s: the remote's tool list changed", connector.name)
                link.list_changed += 1
                link.request_refresh()

        try:
            with trio.CancelScope(deadline=trio.current_time() + timeout_s) as connecting:
                async with open_transport(
                    kind, url, headers, watch, timeout_s=timeout_s, stream_read_timeout_s=None
                ) as (read, write):
                    watched = _WatchedStream(read)
                    async with ClientSession(watched, write, message_handler=on_message) as session:
                        await session.initialize()
                        connecting.deadline = math.inf
                        with trio.CancelScope() as scope:
                            connection = watch.connection = _Connection(session, kind, scope)
                            watched.on_end = _on_end(link, connection)
                            link.connection, link.transport = connection, kind
                            link.last_error = None
                            link.notify()
                            log.info("connector %s: linked over %s", connector.name, kind)
                            await self._keep(link, connection)
        except AgentwsError:
            raise
        except Exception as exc:
            leaf = sole_exception(exc, first_of_several=True)
            if isinstance(leaf, AgentwsError):
                raise leaf from None
            if connection is None:
                raise _NotConnected(describe(leaf)) from None
            raise RemoteError(
                f"connector {connector.name!r}: the connection to {url} failed: {describe(leaf)}"
            ) from None
        finally:
            if link.connection is connection:
                link.connection = None
        if connection is None:
            raise _NotConnected(f"no answer within {timeout_s:g} s")

    async def _keep(self, link: _Link, connection: _Connection) -> None:
        """Refresh the cache now and whenever asked; ping an idle remote; end when it does."""
        link.refresh_wanted = True
        timeout_s = self.settings.tool_timeout_s
        while not connection.ended:
            if link.refresh_wanted:
                link.refresh_wanted = False
                await self._refresh_over(link, connection.session)
                continue
            link.wake = trio.Event()
            with trio.move_on_after(_PING_S) as idle:
                await link.wake.wait()
            if idle.cancelled_caught:
                try:
                    with trio.fail_after(timeout_s):
                        await connection.session.send_ping()
                except trio.TooSlowError:
                    raise RemoteError(
                        f"connector {link.connector.name!r}: no answer to a ping "
                        f"within {timeout_s:g} s"
                    ) from None
                except MCPError as exc:
                    raise RemoteError(
                        f"connector {link.connector.name!r}: ping failed: "
                        f"{upstream_excerpt(exc.error.message)}"
                    ) from None

    async def _refresh_over(self, link: _Link, session: ClientSession) -> None:
        name = link.connector.name
        try:
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


def _on_end(link: _Link, connection: _Connection) -> Callable[[], None]:
    def ended() -> None:
        connection.ended = True
        link.poke()

    return ended


@attrs.define(eq=False)
class _SessionWatch(httpx2.AsyncBaseTransport):
    """Passes requests on; notes a 404 to a request that carried our session id.

    A Streamable HTTP server answers 404 to a session it no longer knows
    (MCP 2025-03-26, "Session Management"); the client must start a new one.
    """

    inner: httpx2.AsyncBaseTransport
    connection: _Connection | None = None

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


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


@attrs.define(eq=False)
class _WatchedStream:
    """A read stream that reports when it ends: the remote closed the session's stream."""

    inner: Any
    on_end: Callable[[], None] | None = None

    async def receive(self) -> Any:
        try:
            return await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._ended()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    def _ended(self) -> None:
        if self.on_end is not None:
            self.on_end()
