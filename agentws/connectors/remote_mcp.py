"""Remote MCP connectors: fetching a third-party server's tools into the tool cache.

agentws is an MCP client of the remote (the ``mcp`` SDK's client, over an
httpx2 client whose transport is the :class:`~agentws.connectors.url_guard.GuardedTransport`).
It speaks Streamable HTTP and falls back to legacy SSE. The fetched tools
are persisted by :func:`sync_tool_cache`, so ``tools/list`` on our endpoint
never waits on a remote: each tool's full definition is kept with a SHA-256
of it; a tool whose definition changed loses its admin label (back to the
safe default, ``write``) and the change is audited; the remote's annotations
become a *suggested* label only.

This module also opens the transports (:func:`open_transport`), agrees on
a protocol revision with the remote (:func:`negotiate`) and runs
one-off sessions (:func:`fetch_tools`, :func:`probe`: the CLI); the running
service keeps long-lived ones in :mod:`agentws.connectors.links`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any, TypeVar

import attrs
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE, streamable_http_client
from mcp_types.version import (
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from agentws.bridges.mcp_sdk_bridge import TransportStreams, negotiate_auto
from agentws.connectors.admin import connector_headers
from agentws.connectors.definitions import definition_hash as hash_definition
from agentws.connectors.relay import RemoteRelay
from agentws.connectors.upstream_auth import HttpsOnly
from agentws.connectors.url_guard import GuardedTransport, Resolver, system_resolver
from agentws.core.deadlines import deadline, time_left_s
from agentws.core.errors import AgentwsError, UpstreamError, sole_exception
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import Capability, Connector
from agentws.settings.secret_box import SecretBox

__all__ = [
    "TRANSPORTS",
    "Probe",
    "RemoteError",
    "SyncReport",
    "all_pages",
    "definition_hash",
    "describe",
    "fetch_tools",
    "list_all_tools",
    "negotiate",
    "open_transport",
    "probe",
    "remote_deadline",
    "suggested_label",
    "with_remote",
]

log = logging.getLogger("agentws.connectors")

# A remote whose list keeps handing out cursors is broken or hostile.
_MAX_PAGES = 100


class RemoteError(UpstreamError):
    """The remote MCP server could not be reached or did not answer as MCP."""

    code = "remote_error"


def definition_hash(tool: types.Tool) -> str:
    """SHA-256 of what a caller relies on: name, description and input schema."""
    return hash_definition(tool.name, tool.description, dict(tool.input_schema))


def suggested_label(tool: types.Tool) -> Capability:
    """What the remote's annotations claim; shown to admins, never applied by itself."""
    hints = tool.annotations
    if hints is not None and hints.destructive_hint:
        return Capability.DESTRUCTIVE
    if hints is not None and hints.read_only_hint:
        return Capability.READ
    return Capability.WRITE


async def all_pages(
    ask: Callable[[types.PaginatedRequestParams | None], Awaitable[Any]], items: str
) -> list[Any]:
    """Every item of a list the remote pages: ``ask(params)`` per page, its field ``items``.

    Error handling:
        :class:`RemoteError` past ``_MAX_PAGES`` pages.
    """
    found: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await ask(types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(getattr(page, items))
        cursor = page.next_cursor
        if not cursor:
            return found
    raise RemoteError(f"the remote's {items} list goes on for more than {_MAX_PAGES} pages")


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool the remote lists, following ``nextCursor`` through all pages."""
    tools: list[types.Tool] = await all_pages(lambda p: session.list_tools(params=p), "tools")
    return tools


T = TypeVar("T")
#: What runs in a one-off session: given the session and the transport it uses.
Work = Callable[[ClientSession, str], Awaitable[T]]

#: The transports a remote may speak, in the order they are tried.
TRANSPORTS = ("streamable_http", "sse")


@asynccontextmanager
async def open_transport(
    kind: str,
    url: str,
    headers: dict[str, str],
    transport: httpx2.AsyncBaseTransport,
    *,
    timeout_s: float,
    stream_read_timeout_s: float | None,
    max_event_bytes: int = DEFAULT_MAX_SSE_EVENT_SIZE,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[TransportStreams]:
    """The read and write streams of an MCP client connection to ``url``.

    Args:
        kind: ``streamable_http`` or ``sse`` (legacy HTTP+SSE).
        transport: the httpx2 transport every request goes through (the URL guard).
        timeout_s: connect, write and read timeout of each request.
        stream_read_timeout_s: how long a server-sent event stream may stay
            silent; None for streams kept open for notifications.
        max_event_bytes: the SDK's bound on one event of a Streamable HTTP
            stream (a link's transport bounds answers itself, to the same size).
        auth: how requests are authenticated upstream (an OAuth connector's
            flow, :mod:`agentws.connectors.upstream_auth`); its own requests
            go through ``transport`` too.

    Resource handling:
        The HTTP client and its connections are closed when the block ends.
    """
    if kind == "streamable_http":
        timeout = httpx2.Timeout(timeout_s, read=stream_read_timeout_s)
        async with (
            httpx2.AsyncClient(
                transport=transport, headers=headers, timeout=timeout, auth=auth
            ) as http,
            streamable_http_client(
                url, http_client=http, max_sse_event_size=max_event_bytes
            ) as streams,
        ):
            yield streams
        return

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout, auth=auth)

    async with sse_client(
        url,
        headers=headers,
        timeout=timeout_s,
        sse_read_timeout=stream_read_timeout_s or _FOREVER_S,
        httpx_client_factory=factory,
        auth=auth,
    ) as streams:
        yield streams


async def negotiate(session: ClientSession, kind: str, protocol: str = "auto") -> None:
    """Agree with the remote on a protocol revision, as the connector's ``protocol`` says.

    - ``auto``: the newest revision both speak. Over Streamable HTTP this is
      the SDK's own connect-time policy (what its ``Client(mode="auto")``
      does): ``server/discover`` at the stateless revision (2026-07-28),
      falling back to the ``initialize`` handshake when the remote does not
      answer it as one. (Calls whose caller can be asked mid-call go over a
      handshake link of their own: :mod:`agentws.connectors.links`.)
    - ``2026-07-28``: the stateless revision only; RemoteError if the remote
      does not speak it.
    - ``2025-11-25``: the handshake only.

    Legacy SSE has only the handshake. ``session.protocol_version`` says what
    was agreed.
    """
    if kind != "streamable_http" or protocol == LATEST_HANDSHAKE_VERSION:
        await session.initialize()
        return
    await negotiate_auto(session)
    if (
        protocol == LATEST_MODERN_VERSION
        and session.protocol_version not in MODERN_PROTOCOL_VERSIONS
    ):
        raise RemoteError(
            f"the remote does not speak MCP {protocol}, which the connector is pinned at "
            f"(it answered {session.protocol_version}): pin another revision or 'auto'"
        )


# A one-off session's relay: no call is ever in flight, so nothing is relayed.
_NO_CALLER = RemoteRelay("", [], answer_s=0.0)

# httpx2 wants a number for the SSE read timeout; a link's stream may idle this long.
_FOREVER_S = 365 * 24 * 3600.0


async def with_remote(
    connector: Connector,
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    resolve: Resolver,
    what: str,
    work: Work[T],
    auth: httpx2.Auth | None = None,
) -> T:
    """Run ``work`` in an initialized session with the remote, within the caller's deadline.

    Streamable HTTP is tried first; legacy SSE only if the first attempt
    failed before the session was initialized, so ``work`` never runs twice.
    Each request waits no longer than what is left of the deadline.
    """
    if connector.url is None:
        raise RemoteError(f"connector {connector.name!r} has no URL")
    url = connector.url
    headers = connector_headers(connector, box)
    initialized = False

    async def attempt(kind: str) -> T:
        nonlocal initialized
        # A guard per attempt: its connection pool closes with the attempt's client.
        guard: httpx2.AsyncBaseTransport = GuardedTransport(allowlist, resolve=resolve)
        if auth is not None:  # an OAuth connector: plain HTTP only where allow-listed
            guard = HttpsOnly(guard, allowlist)
        left_s = time_left_s()
        if left_s is None:  # no deadline: the transport's own limits must not end the work
            left_s = _FOREVER_S
        async with (
            open_transport(
                kind,
                url,
                headers,
                guard,
                timeout_s=left_s,
                stream_read_timeout_s=left_s,
                auth=auth,
            ) as (read, write),
            # The capabilities a link declares, so that the remote lists the same
            # tools; with no caller here, its requests are refused.
            ClientSession(read, write, **_NO_CALLER.session_callbacks()) as session,
        ):
            await negotiate(session, kind, connector.protocol)
            initialized = True
            return await work(session, kind)

    for kind in TRANSPORTS:
        try:
            return await attempt(kind)
        except Exception as error:
            # Transports raise groups; one cause is enough to say what failed.
            leaf = sole_exception(error, first_of_several=True)
            if isinstance(leaf, AgentwsError):
                raise leaf from None
            if initialized or kind == TRANSPORTS[-1]:
                raise RemoteError(
                    f"connector {connector.name!r}: cannot {what} at {url}: {describe(leaf)}"
                ) from None
            log.info("%s: no %s (%s); trying the next transport", url, kind, describe(leaf))
    raise AssertionError("unreachable")  # pragma: no cover


def remote_deadline(connector: Connector, seconds: float) -> AbstractContextManager[None]:
    """A deadline for the remote to answer within the block.

    Error handling:
        :class:`RemoteError` naming the connector and its URL when ``seconds`` pass.
    """
    return deadline(
        seconds,
        lambda: RemoteError(
            f"connector {connector.name!r}: {connector.url} did not answer within {seconds:g} s"
        ),
    )


def describe(error: BaseException) -> str:
    """A one-line description of a transport failure, for operators and callers."""
    if isinstance(error, httpx2.HTTPStatusError):
        return f"HTTP {error.response.status_code} from {error.request.url}"
    text = str(error) or "(no detail)"
    return f"{type(error).__name__}: {text}"


async def fetch_tools(
    connector: Connector,
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    resolve: Resolver = system_resolver,
    auth: httpx2.Auth | None = None,
) -> list[types.Tool]:
    """Every tool the remote lists (all pages), within the caller's deadline
    (:func:`remote_deadline` names the remote when it passes).

    Error handling:
        :class:`RemoteError` naming the connector when the remote is down,
        refuses us, times out or does not speak MCP; UnsafeUrlError if its
        address may not be reached.
    """
    return await with_remote(
        connector,
        box=box,
        allowlist=allowlist,
        resolve=resolve,
        what="list tools",
        work=lambda session, _: list_all_tools(session),
        auth=auth,
    )


@attrs.frozen
class Probe:
    """What a remote MCP server said when asked: who it is and what it offers."""

    transport: str
    server_name: str
    server_version: str
    protocol_version: str
    tools: int
    #: Whether it announces changes of its tool list (``tools.listChanged``).
    announces_changes: bool


async def probe(
    connector: Connector,
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    resolve: Resolver = system_resolver,
    auth: httpx2.Auth | None = None,
) -> Probe:
    """Connect, shake hands and list the tools, changing nothing (``agentws connector test``),
    within the caller's deadline (see :func:`fetch_tools`).

    Error handling:
        As :func:`fetch_tools`.
    """

    async def ask(session: ClientSession, kind: str) -> Probe:
        tools = await list_all_tools(session)
        info = session.server_info
        capabilities = session.server_capabilities
        return Probe(
            transport=kind,
            server_name=info.name if info else "?",
            server_version=info.version if info else "?",
            protocol_version=session.protocol_version or "?",
            tools=len(tools),
            announces_changes=bool(
                capabilities and capabilities.tools and capabilities.tools.list_changed
            ),
        )

    return await with_remote(
        connector,
        box=box,
        allowlist=allowlist,
        resolve=resolve,
        what="connect",
        work=ask,
        auth=auth,
    )


@attrs.frozen
class SyncReport:
    """What a refresh changed in the tool cache."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0
    #: Why each tool left out of listings (its name is another tool's in a group) is.
    left_out: tuple[str, ...] = ()
