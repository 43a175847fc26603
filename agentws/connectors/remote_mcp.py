"""Remote MCP connectors: fetching a third-party server's tools into the tool cache.

agentws is an MCP client of the remote (the ``mcp`` SDK's client, over an
httpx2 client whose transport is the :class:`~agentws.connectors.url_guard.GuardedTransport`).
It speaks Streamable HTTP and falls back to legacy SSE. The fetched tools
are persisted by :func:`sync_tool_cache`, so ``tools/list`` on our endpoint
never waits on a remote: each tool's full definition is kept with a SHA-256
of it; a tool whose definition changed loses its admin label (back to the
safe default, ``write``) and the change is audited; the remote's annotations
become a *suggested* label only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
import httpx2
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agentws.audit import record
from agentws.connectors.definitions import definition_hash as hash_definition
from agentws.connectors.registry import SECRET_HEADER_FIELD
from agentws.connectors.url_guard import Allowlist, GuardedTransport, Resolver, system_resolver
from agentws.domain.models import CachedTool, Capability, Connector
from agentws.domain.rules import utcnow
from agentws.errors import AgentwsError
from agentws.secret_box import SecretBox
from agentws.store import Store

__all__ = [
    "RemoteError",
    "SyncReport",
    "call_tool",
    "connector_headers",
    "definition_hash",
    "fetch_tools",
    "suggested_label",
    "sync_tool_cache",
]

log = logging.getLogger("agentws.connectors")


class RemoteError(AgentwsError):
    """The remote MCP server could not be reached or did not answer as MCP."""

    code = "remote_error"


def connector_headers(connector: Connector, box: SecretBox | None) -> dict[str, str]:
    """The headers to send: the plain ones plus the secret, opened for this use only."""
    headers = {k: v for k, v in connector.headers.items() if k != SECRET_HEADER_FIELD}
    if connector.secret is not None:
        if box is None:
            raise RemoteError("the connector has a secret but no secret key is configured")
        name = connector.headers.get(SECRET_HEADER_FIELD, "Authorization")
        value = box.open(connector.secret)
        headers[name] = f"Bearer {value}" if name.lower() == "authorization" else value
    return headers


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


async def _list_all(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


T = TypeVar("T")
Work = Callable[[ClientSession], Awaitable[T]]


async def _over_streamable(
    url: str,
    headers: dict[str, str],
    transport: httpx2.AsyncBaseTransport,
    timeout_s: float,
    work: Work[T],
) -> T:
    async with (
        httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout_s) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        return await work(session)


async def _over_sse(
    url: str,
    headers: dict[str, str],
    transport: httpx2.AsyncBaseTransport,
    timeout_s: float,
    work: Work[T],
) -> T:
    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout, auth=auth)

    async with (
        sse_client(url, headers=headers, timeout=timeout_s, httpx_client_factory=factory) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        return await work(session)


async def _with_remote(
    connector: Connector,
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    timeout_s: float,
    resolve: Resolver,
    what: str,
    work: Work[T],
) -> T:
    """Run ``work`` in an initialized session with the remote, within ``timeout_s``.

    Streamable HTTP is tried first; legacy SSE only if the first attempt
    failed before the session was initialized, so ``work`` never runs twice.
    """
    if connector.url is None:
        raise RemoteError(f"connector {connector.name!r} has no URL")
    url = connector.url
    headers = connector_headers(connector, box)
    guard = GuardedTransport(allowlist, resolve=resolve)
    initialized = False

    async def initialized_work(session: ClientSession) -> T:
        nonlocal initialized
        await session.initialize()
        initialized = True
        return await work(session)

    try:
        with trio.fail_after(timeout_s):
            try:
                return await _over_streamable(url, headers, guard, timeout_s, initialized_work)
            except Exception as streamable_error:
                leaf = _first_leaf(streamable_error)
                if isinstance(leaf, AgentwsError):
                    raise leaf from None
                if initialized:
                    raise RemoteError(
                        f"connector {connector.name!r}: cannot {what} at {url}: "
                        f"{type(leaf).__name__}: {leaf}"
                    ) from None
                log.info("%s: no Streamable HTTP (%s); trying legacy SSE", url, leaf)
            try:
                return await _over_sse(url, headers, guard, timeout_s, initialized_work)
            except Exception as sse_error:
                leaf = _first_leaf(sse_error)
                if isinstance(leaf, AgentwsError):
                    raise leaf from None
                raise RemoteError(
                    f"connector {connector.name!r}: cannot {what} at {url}: "
                    f"{type(leaf).__name__}: {leaf}"
                ) from None
    except trio.TooSlowError:
        raise RemoteError(
            f"connector {connector.name!r}: {url} did not answer within {timeout_s:g} s"
        ) from None
    finally:
        with trio.move_on_after(5, shield=True):
            await guard.aclose()


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


async def fetch_tools(
    connector: Connector,
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    timeout_s: float,
    resolve: Resolver = system_resolver,
) -> list[types.Tool]:
    """Every tool the remote lists (all pages).

    Error handling:
        :class:`RemoteError` naming the connector when the remote is down,
        refuses us, times out or does not speak MCP; UnsafeUrlError if its
        address may not be reached.
    """
    return await _with_remote(
        connector,
        box=box,
        allowlist=allowlist,
        timeout_s=timeout_s,
        resolve=resolve,
        what="list tools",
        work=_list_all,
    )


async def call_tool(
    connector: Connector,
    name: str,
    arguments: dict[str, Any],
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    timeout_s: float,
    resolve: Resolver = system_resolver,
) -> types.CallToolResult:
    """Call the remote's tool ``name`` (its own name, without our prefix).

    Error handling:
        As :func:`fetch_tools`; a tool that fails on the remote is a normal
        result with ``isError``.
    """

    async def call(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool(name, arguments)

    return await _with_remote(
        connector,
        box=box,
        allowlist=allowlist,
        timeout_s=timeout_s,
        resolve=resolve,
        what=f"call {name}",
        work=call,
    )


@attrs.frozen
class SyncReport:
    """What a refresh changed in the tool cache."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0


async def sync_tool_cache(
    store: Store, connector: Connector, tools: list[types.Tool], *, actor: str
) -> SyncReport:
    """Make the cache hold exactly ``tools`` for ``connector``.

    A tool whose definition hash changed keeps no admin label: it is
    ``write`` (so ``requires_approval``) until an admin labels it again;
    the reset is audited.
    """
    cached = {t.name: t for t in await store.select(CachedTool, connector_id=connector.id)}
    added, changed = [], []
    now = utcnow()
    for tool in tools:
        digest = definition_hash(tool)
        annotations: dict[str, Any] = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        fields: dict[str, Any] = {
            "description": tool.description or "",
            "input_schema": dict(tool.input_schema),
            "annotations": annotations,
            "definition_hash": digest,
            "suggested_label": suggested_label(tool),
            "fetched_at": now,
        }
        old = cached.pop(tool.name, None)
        if old is None:
            await store.insert(CachedTool(connector_id=connector.id, name=tool.name, **fields))
            added.append(tool.name)
        elif old.definition_hash != digest:
            await store.update(attrs.evolve(old, label=None, **fields))
            changed.append(tool.name)
            await record(
                store,
                connector.workspace_id,
                actor,
                "tool.definition_changed",
                f"{connector.name}_{tool.name}",
                previous_label=old.label.value if old.label else None,
                label="unset (write)",
            )
        else:
            await store.update(attrs.evolve(old, fetched_at=now))
    for gone in cached.values():
        await store.delete(CachedTool, gone.id)
    report = SyncReport(
        tuple(added), tuple(changed), tuple(cached), len(tools) - len(added) - len(changed)
    )
    log.info(
        "connector %s: %d tools (%d new, %d changed, %d removed)",
        connector.name,
        len(tools),
        len(added),
        len(changed),
        len(cached),
    )
    return report
