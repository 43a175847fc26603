"""The audit log: one append-only record per change an operator makes and per tool call.

Two ways in:

- :func:`record` appends one entry now, in its own transaction. Changes
  (tokens, labels, permissions, approvals and their decisions) use it, so
  the entry is stored before the change is reported done.
  :func:`record_created` and :func:`record_renamed` are the create and
  rename of a named record (a workspace, a group, a library) with their
  entry; :func:`record_removed` the delete of any record with its entry;
  :func:`record_webhook_action` an entry on a webhook, named as every
  webhook's entries name it.
- :class:`AuditWriter` batches the entries of tool calls, which can come
  hundreds a second: callers hand entries over a bounded channel (a full
  channel makes them wait, it never drops or grows) and one task writes
  whatever has gathered in one transaction, at least every
  ``_FLUSH_S`` (half a second). Writing each call's entry on its own would cost a commit
  per call and, on SQLite, make every cache keyed on the data version
  (tokens, tool catalog) miss on every call. The writer does not wake for
  each entry: once a batch has begun, the others wait in the channel until
  the flush interval ends or a whole batch is there. At shutdown it writes
  what is left before it stops.

Reading it: :func:`audit_page` gives a page of entries under the filters an
operator asks about (workspace and group by slug, token, OAuth client, tool,
decision, action, time); :func:`audit_entries` every entry under them, a
page at a time (an export). The CLI, the admin API and the dashboard use both.

Entries never hold secrets: arguments are represented by their hash and,
where kept, with values the tool's schema marks secret redacted.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from datetime import datetime
from typing import Any, Protocol, TypeVar

import attrs
import trio

from agentws.core.errors import ConflictError, StoreError, ValidationError
from agentws.domain.approval_lists import Cursor
from agentws.domain.audit_lists import MAX_PAGE, AuditPage, AuditQuery
from agentws.domain.event_lists import parse_time
from agentws.domain.models import AuditEntry, McpToken, Webhook, Workspace
from agentws.domain.permissions import Decision
from agentws.domain.rules import check_slug
from agentws.store.sql_audit import AuditStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "FILTER_NAMES",
    "AuditFilters",
    "AuditSink",
    "AuditWriter",
    "DirectAudit",
    "audit_entries",
    "audit_page",
    "create_in_workspace",
    "record",
    "record_created",
    "record_removed",
    "record_renamed",
    "record_webhook_action",
]

log = logging.getLogger("agentws.audit")


class _Named(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def name(self) -> str: ...


Named = TypeVar("Named", bound=_Named)


class _Stored(Protocol):
    @property
    def id(self) -> str: ...


Stored = TypeVar("Stored", bound=_Stored)

# Entries waiting to be written; a caller waits when this many are.
_BUFFER = 1024
# A batch is written at least this often while entries arrive. Each commit
# makes the caches keyed on the store's data version (tokens, the tool
# catalog) check the store again, so commits are kept few.
_FLUSH_S = 0.5
# Entries written in one transaction at most.
_BATCH = 500
# Writing what is left at shutdown may take this long at most.
_CLOSE_S = 5.0


class _Store(RecordStore, AuditStore, Protocol):
    """The areas of the store this module uses."""


async def record(
    store: RecordStore,
    workspace_id: str | None,
    actor: str,
    action: str,
    target: str,
    **detail: Any,
) -> AuditEntry:
    """Append ``actor`` did ``action`` to ``target`` (``detail`` is extra, non-secret context)."""
    return await store.insert(
        AuditEntry(
            workspace_id=workspace_id, actor=actor, action=action, target=target, detail=detail
        )
    )


async def record_created(
    store: RecordStore, item: Named, what: str, *, workspace: Workspace | None, actor: str
) -> Named:
    """Insert ``item``, a ``what`` of ``workspace`` (None: a workspace), and record it.

    The entry is ``<what>.create`` on ``<workspace>/<slug>`` (a workspace's
    own slug for a workspace).

    Error handling:
        ConflictError naming the slug as the operator typed it when it is
        taken (the store's own conflict names a constraint).
    """
    where = f" in workspace {workspace.slug!r}" if workspace else ""
    try:
        await store.insert(item)
    except ConflictError:
        raise ConflictError(f"{what} {item.slug!r} already exists{where}") from None
    target = f"{workspace.slug}/{item.slug}" if workspace else item.slug
    await record(store, workspace.id if workspace else item.id, actor, f"{what}.create", target)
    return item


async def create_in_workspace(
    store: RecordStore,
    kind: Callable[..., Named],
    what: str,
    workspace_slug: str,
    slug: str,
    name: str | None,
    check_name: Callable[[str], str],
    *,
    actor: str,
) -> Named:
    """A new ``kind`` (a ``what``: group, library) in workspace ``workspace_slug``.

    Its name is ``name`` (the slug when None) as ``check_name`` passes it;
    it is created and recorded by :func:`record_created`.

    Error handling:
        NotFoundError for an unknown workspace; ValidationError for a bad slug
        or name; ConflictError when the slug is taken in the workspace.
    """
    workspace = await store.workspace_by_slug(workspace_slug)
    item = kind(
        workspace_id=workspace.id,
        slug=check_slug(slug, what=f"{what} slug"),
        name=check_name(name or slug),
    )
    return await record_created(store, item, what, workspace=workspace, actor=actor)


async def record_renamed(
    store: RecordStore, item: Named, what: str, name: str, within: str | None, actor: str
) -> Named:
    """``item``, a ``what`` of workspace ``within`` (None: a workspace), named ``name``.

    The entry is ``<what>.rename`` on ``<within>/<slug>`` (a workspace's own
    slug for a workspace), with the name it had. Renaming to the name it has
    changes nothing and records nothing.
    """
    if name == item.name:
        return item
    # Records with a display name are attrs classes; the bound says only what is read here.
    renamed: Named = await store.update(attrs.evolve(item, name=name))  # type: ignore[misc]
    workspace_id = getattr(item, "workspace_id", item.id)
    target = f"{within}/{item.slug}" if within else item.slug
    await record(store, workspace_id, actor, f"{what}.rename", target, was=item.name, name=name)
    return renamed


async def record_removed(
    store: RecordStore,
    item: Stored,
    workspace_id: str | None,
    actor: str,
    action: str,
    target: str,
    **detail: Any,
) -> Stored:
    """Delete ``item`` (and what belongs to it), then record ``actor`` did
    ``action`` to ``target``, as :func:`record`; ``item`` as it was.

    Error handling:
        NotFoundError when ``item`` is gone already (nothing is recorded).
    """
    await store.delete(type(item), item.id)
    await record(store, workspace_id, actor, action, target, **detail)
    return item


async def record_webhook_action(
    store: RecordStore,
    webhook: Webhook,
    actor: str,
    action: str,
    *,
    workspace_slug: str | None = None,
    **detail: Any,
) -> AuditEntry:
    """Record ``actor`` did ``action`` to ``webhook``, as :func:`record`.

    The target is ``<workspace>/<webhook name>`` and the detail holds the
    webhook's id, so its entries are found by either. ``workspace_slug``
    saves reading the workspace where the caller has it.
    """
    if workspace_slug is None:
        workspace_slug = (await store.get(Workspace, webhook.workspace_id)).slug
    target = f"{workspace_slug}/{webhook.name}"
    return await record(
        store, webhook.workspace_id, actor, action, target, webhook_id=webhook.id, **detail
    )


@attrs.frozen(kw_only=True)
class AuditFilters:
    """What an operator filters the audit log by, as they name things (slugs, not ids).

    ``token`` is an MCP token's id (``tok_…``), or its name within ``group``;
    ``actor`` is an actor as entries name it (``admin:alice``, ``webhook:wh_…``).
    """

    workspace: str | None = None
    group: str | None = None
    token: str | None = None
    oauth_client: str | None = None
    actor: str | None = None
    tool: str | None = None
    decision: Decision | None = None
    action: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def from_text(cls, values: Mapping[str, str], *, now: datetime) -> AuditFilters:
        """The filters a query string or a form names (``FILTER_NAMES``); empty ones are unset.

        ``since`` and ``until`` are ISO 8601 (UTC unless they say otherwise) or a
        span before ``now`` (``30m``, ``24h``, ``7d``).

        Error handling:
            :class:`~agentws.core.errors.ValidationError` for a bad decision or time.
        """
        given = {name: values.get(name, "").strip() or None for name in FILTER_NAMES}
        for name, value in given.items():
            # No stored text holds a NUL, and PostgreSQL refuses one in a parameter.
            if value is not None and "\x00" in value:
                raise ValidationError(f"{name} must not hold a NUL character")
        decision = given.pop("decision")
        if decision is not None and decision not in {d.value for d in Decision}:
            allowed = ", ".join(d.value for d in Decision)
            raise ValidationError(f"decision must be one of {allowed}")
        since, until = given.pop("since"), given.pop("until")
        return cls(
            **given,
            decision=Decision(decision) if decision else None,
            since=parse_time(since, now=now, name="since") if since else None,
            until=parse_time(until, now=now, name="until") if until else None,
        )

    def as_text(self) -> dict[str, str]:
        """The filters that are set, as :meth:`from_text` reads them (links keep them)."""
        values = {name: getattr(self, name) for name in FILTER_NAMES}
        return {
            name: value.isoformat() if isinstance(value, datetime) else str(value)
            for name, value in values.items()
            if value is not None
        }


#: The filters' names in a query string, a form or :class:`AuditFilters`.
FILTER_NAMES = (
    "workspace",
    "group",
    "token",
    "oauth_client",
    "actor",
    "tool",
    "decision",
    "action",
    "since",
    "until",
)


async def _query(
    store: RecordStore, filters: AuditFilters, *, limit: int, cursor: str | None
) -> AuditQuery:
    workspace_id = group_id = None
    if filters.workspace:
        workspace_id = (await store.workspace_by_slug(filters.workspace)).id
    if filters.group:
        if not filters.workspace:
            raise ValidationError("a group is named within its workspace: give the workspace too")
        group_id = (await store.group_by_slug(filters.workspace, filters.group)).id
    actor = filters.actor or None
    if filters.token:
        token = await store.find(McpToken, id=filters.token)
        if token is None and group_id is not None:
            token = await store.find(McpToken, group_id=group_id, name=filters.token)
        # A token deleted since is still named by its id in the entries it left.
        token_actor = f"mcp:{token.id if token is not None else filters.token}"
        if actor is not None and actor != token_actor:
            raise ValidationError("give a token or an actor, not both")
        actor = token_actor
    return AuditQuery(
        workspace_id=workspace_id,
        group_id=group_id,
        actor=actor,
        oauth_client=filters.oauth_client or None,
        tool=filters.tool or None,
        decision=filters.decision,
        action=filters.action or None,
        since=filters.since,
        until=filters.until,
        limit=limit,
        cursor=Cursor.decode(cursor) if cursor else None,
    )


async def audit_page(
    store: _Store, filters: AuditFilters, *, limit: int = 50, cursor: str | None = None
) -> AuditPage:
    """A page of the audit log, newest first, under ``filters``.

    Args:
        limit: entries on the page, 1 to :data:`~agentws.domain.audit_lists.MAX_PAGE`.
        cursor: a ``next_cursor`` (older) or ``previous_cursor`` (newer) of the same list.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for a bad limit, cursor or
        range; NotFoundError for an unknown workspace or group.
    """
    return await store.audit_page(await _query(store, filters, limit=limit, cursor=cursor))


async def audit_entries(store: _Store, filters: AuditFilters) -> AsyncGenerator[AuditEntry, None]:
    """Every entry under ``filters``, newest first, read a page at a time (an export).

    The filters are checked here, before anything is read: an answer can
    refuse them before it starts streaming the entries.

    Error handling:
        As :func:`audit_page`.
    """
    return _pages(store, await _query(store, filters, limit=MAX_PAGE, cursor=None))


async def _pages(store: AuditStore, query: AuditQuery) -> AsyncGenerator[AuditEntry, None]:
    while True:
        page = await store.audit_page(query)
        for entry in page.items:
            yield entry
        if page.next_cursor is None:
            return
        query = attrs.evolve(query, cursor=Cursor.decode(page.next_cursor))


class AuditSink(Protocol):
    """Where tool-call entries go."""

    async def append(self, entry: AuditEntry) -> None: ...


@attrs.define(eq=False)
class DirectAudit:
    """Writes each entry at once (one-off processes such as the CLI)."""

    store: RecordStore

    async def append(self, entry: AuditEntry) -> None:
        await self.store.insert(entry)


@attrs.define(eq=False)
class AuditWriter:
    """Writes tool-call entries in batches; :meth:`serve` runs in the service's nursery."""

    store: RecordStore
    _send: trio.MemorySendChannel[AuditEntry] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[AuditEntry] = attrs.field(init=False)
    # Entries in the channel, and the event that ends a batch's wait early:
    # set when a whole batch is there, or at close().
    _queued: int = attrs.field(default=0, init=False)
    _full: trio.Event = attrs.field(factory=trio.Event, init=False)
    written: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[AuditEntry](_BUFFER)

    async def append(self, entry: AuditEntry) -> None:
        """Queue ``entry``; waits while the writer is ``_BUFFER`` entries behind."""
        try:
            try:
                # No checkpoint while there is room: handing an entry over
                # costs the call no trip through the scheduler.
                self._send.send_nowait(entry)
            except trio.WouldBlock:
                await self._send.send(entry)
        except trio.ClosedResourceError:
            # Closed for shutdown while this call was finishing: write it now.
            await self.store.insert(entry)
            return
        self._queued += 1
        if self._queued >= _BATCH:
            self._full.set()

    def close(self) -> None:
        """No more entries: :meth:`serve` writes what is queued and returns."""
        self._send.close()
        self._full.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write batches until :meth:`close` (or cancelled); what is left is written at the end.

        Resource handling:
            The final write is shielded and bounded by ``_CLOSE_S``.
        """
        task_status.started()
        batch: list[AuditEntry] = []
        try:
            while True:
                try:
                    batch.append(await self._receive.receive())
                except trio.EndOfChannel:
                    return
                self._queued -= 1
                # Whatever else arrives within the flush interval joins the batch.
                with trio.move_on_after(_FLUSH_S):
                    await self._full.wait()
                self._full = trio.Event()
                self._take(batch)
                await self._write(batch)
                batch = []
        finally:
            with trio.move_on_after(_CLOSE_S, shield=True) as scope:
                self._take(batch, limit=None)
                if batch:
                    await self._write(batch)
            if scope.cancelled_caught:
                log.error("audit: %d entries could not be written before shutdown", len(batch))

    def _take(self, batch: list[AuditEntry], limit: int | None = _BATCH) -> None:
        """Add the entries waiting in the channel to ``batch``, up to ``limit`` in all."""
        while limit is None or len(batch) < limit:
            try:
                batch.append(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return
            self._queued -= 1

    async def _write(self, batch: list[AuditEntry]) -> None:
        try:
            await self.store.insert_many(batch)
        except StoreError as exc:
            # The calls have happened; losing their record is bad, crashing the
            # service over it is worse. Operators see this in the log.
            log.error("audit: cannot write %d entries: %s", len(batch), exc.message)
            return
        self.written += len(batch)
