"""Telling open sessions that their group's lists, or documents they follow, changed.

A group's tools, resources (documents) and prompts (skills) change when an
admin changes connectors, permissions, libraries, documents or skills, in
any process. :class:`ListChanges` runs beside the session supervisor and,
whenever something may have changed, compares each group that has open
sessions with what it saw last:

- the tool list changed: ``notifications/tools/list_changed`` to every
  session of the group; likewise ``resources/list_changed`` and
  ``prompts/list_changed``;
- a document changed, appeared or went: ``notifications/resources/updated``
  to every session that subscribed to its URI.

"May have changed" is the change feed moving ``catalog`` or ``libraries``
(PostgreSQL), or SQLite's data version moving, or a remote MCP connector
saying its resources or prompts changed (:class:`RemoteContent`'s
generation); without any (a feed that does not listen) it looks every
:data:`POLL_S`. A group seen for the first
time is only recorded; its sessions listed it at about the same moment.

Clients of the 2026-07-28 revision have no session: those listening
(``subscriptions/listen``) hear the same events on their streams, when they
asked for them (:class:`~agentws.doors.mcp.sessions.listen.ListenStreams`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

import attrs
import trio
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from agentws.common.changes import ChangeFeed, Topic
from agentws.connectors.remote_content import (
    RemoteContent,
    listed_resources,
    listed_templates,
    named_prompts,
)
from agentws.domain.models import Group
from agentws.doors.mcp.dispatch.prompts import named_skills
from agentws.doors.mcp.sessions.supervisor import McpSession, SessionSupervisor
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_changes import ChangeStore
from agentws.tools.builtins import document_uri
from agentws.tools.catalog import Catalog

__all__ = ["POLL_S", "ListChanges", "Snapshot"]

log = logging.getLogger("agentws.mcp")

#: Without a change announcement, how often to look (SQLite: only its cheap
#: data version is read, unless it moved).
POLL_S = 0.5
# Sending one notification to one session may take this long at most; a
# client that does not read is closed by its session's stall guard anyway.
_NOTIFY_S = 5.0

_Fingerprint = tuple[tuple[str, ...], ...]
# What a listen stream hears when a list changed.
_LIST_CHANGED: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
}


class _Store(CatalogStore, ChangeStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class Snapshot:
    """What a group's sessions were last told about, reduced to what can be compared."""

    tools: _Fingerprint
    resources: _Fingerprint
    prompts: _Fingerprint
    #: Each exposed document's URI and the moment it last changed.
    documents: dict[str, datetime] = attrs.field(eq=False)

    def updated(self, later: Snapshot) -> set[str]:
        """URIs of documents that changed, appeared or went between ``self`` and ``later``."""
        uris = self.documents.keys() | later.documents.keys()
        return {u for u in uris if self.documents.get(u) != later.documents.get(u)}


async def snapshot(
    store: CatalogStore, catalog: Catalog, group: Group, remote: RemoteContent | None = None
) -> Snapshot:
    """The group's lists as of now (with its remote connectors' resources and prompts)."""
    listing = await catalog.tools(group)
    tools = tuple(
        (t.name, t.title or "", t.tagged_description, t.definition_hash, str(t.asks_confirmation))
        for t in listing.tools
    )
    libraries = {library.id: library for library in await store.group_libraries(group.id)}
    documents = [
        (libraries[doc.library_id], doc)
        for doc in await store.group_documents(group.id)
        if doc.library_id in libraries
    ]
    resources: tuple[tuple[str, ...], ...] = tuple(
        sorted(
            (document_uri(lib, doc), doc.title, doc.mime_type, lib.name, str(doc.policy))
            for lib, doc in documents
        )
    )
    prompts: tuple[tuple[str, ...], ...] = tuple(
        (
            name,
            skill.description,
            skill.updated_at.isoformat(),
            *(f"{a.name}:{a.required}:{a.description}" for a in skill.arguments),
        )
        for name, (_, skill) in (await named_skills(store, group)).items()
    )
    if remote is not None:
        by_connector = await remote.of_group(group)
        resources += tuple(
            (str(r.uri), r.model_dump_json(exclude_none=True))
            for r in listed_resources(by_connector)
        ) + tuple((t.model_dump_json(exclude_none=True),) for t in listed_templates(by_connector))
        prompts += tuple(
            (name, found.prompt.model_dump_json(exclude_none=True))
            for name, found in named_prompts(by_connector).items()
        )
    return Snapshot(
        tools,
        resources,
        prompts,
        {document_uri(lib, doc): doc.updated_at for lib, doc in documents},
    )


async def _send(session: McpSession, what: str, uri: str | None = None) -> None:
    handle = session.server_session
    if handle is None or session.ended.is_set():
        return
    with trio.move_on_after(_NOTIFY_S):
        try:
            if what == "tools":
                await handle.send_tool_list_changed()
            elif what == "resources":
                await handle.send_resource_list_changed()
            elif what == "prompts":
                await handle.send_prompt_list_changed()
            elif uri is not None:
                await handle.send_resource_updated(uri)
        except Exception as exc:  # the session ended while we sent
            log.debug("session %s: %s notification not sent: %r", session.id, what, exc)


@attrs.define(eq=False)
class ListChanges:
    """Sends list-changed and resource-updated notifications to this process's sessions.

    Resource handling:
        :meth:`serve` runs in the service's nursery until :meth:`close`;
        sends run in a nursery of their own, each bounded by ``_NOTIFY_S``.
    """

    store: _Store
    sessions: SessionSupervisor
    catalog: Catalog
    changes: ChangeFeed
    remote: RemoteContent | None = None
    poll_s: float = POLL_S
    _seen: dict[str, Snapshot] = attrs.field(factory=dict, init=False)
    _scope: trio.CancelScope = attrs.field(factory=trio.CancelScope, init=False)

    def close(self) -> None:
        self._scope.cancel()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Compare and notify whenever something may have changed, until :meth:`close`."""
        with self._scope:
            task_status.started()
            marker: object = None
            while True:
                now = self._marker()
                # Read before comparing: a change committed meanwhile moves it again.
                if now is None or now != marker or self._new_groups():
                    marker = now
                    try:
                        await self.check()
                    except Exception:
                        # A store outage must not end the notifications for good.
                        log.exception("cannot compare the groups' lists; retrying")
                        marker = None
                await self._wait()

    def _marker(self) -> object:
        """Something that moves whenever a group's lists may have; None: unknown."""
        remote = self.remote.generation if self.remote is not None else 0
        committed = self.store.data_version()
        if committed is not None:
            return (committed, remote)
        if self.changes.listening:
            return (
                self.changes.generation(Topic.CATALOG),
                self.changes.generation(Topic.LIBRARIES),
                remote,
            )
        return None

    def _new_groups(self) -> bool:
        listened = self.sessions.listens.groups()
        return any(group_id not in self._seen for group_id in self.sessions.groups()) or any(
            group_id not in self._seen for group_id in listened
        )

    async def _wait(self) -> None:
        # Woken by the feed at once; else, or for sessions of a group not
        # seen yet (cheap to tell: no store read), after poll_s.
        topics = (Topic.CATALOG, Topic.LIBRARIES)
        seen = {topic: self.changes.generation(topic) for topic in topics}
        remote = self.remote
        with trio.move_on_after(self.poll_s):
            async with trio.open_nursery() as nursery:

                async def wait_for(topic: Topic) -> None:
                    await self.changes.wait(topic, seen[topic], poll_s=self.poll_s)
                    nursery.cancel_scope.cancel()

                async def wait_for_remote(remote: RemoteContent, generation: int) -> None:
                    await remote.wait_changed(generation)
                    nursery.cancel_scope.cancel()

                for topic in topics:
                    nursery.start_soon(wait_for, topic)
                if remote is not None:
                    nursery.start_soon(wait_for_remote, remote, remote.generation)

    async def check(self) -> None:
        """Compare every group with open sessions with what was seen, and notify."""
        # By group, as the supervisor indexes them: ten thousand open sessions
        # are not walked at every commit.
        groups: dict[str, Group] = dict(self.sessions.groups())
        groups.update(self.sessions.listens.groups())
        for group_id in [g for g in self._seen if g not in groups]:
            del self._seen[group_id]
        for group_id, group in groups.items():
            later = await snapshot(self.store, self.catalog, group, self.remote)
            before = self._seen.get(group_id)
            self._seen[group_id] = later
            if before is None:
                continue
            await self._notify(group_id, before, later)

    async def _notify(self, group_id: str, before: Snapshot, later: Snapshot) -> None:
        kinds = [
            kind
            for kind, changed in (
                ("tools", before.tools != later.tools),
                ("resources", before.resources != later.resources),
                ("prompts", before.prompts != later.prompts),
            )
            if changed
        ]
        updated = before.updated(later)
        if not kinds and not updated:
            return
        listens = self.sessions.listens
        for kind in kinds:
            listens.publish(group_id, _LIST_CHANGED[kind])
        for uri in sorted(updated):
            listens.publish(group_id, ResourceUpdated(uri=uri))
        async with trio.open_nursery() as nursery:
            for session in self.sessions.sessions_of_group(group_id):
                for kind in kinds:
                    nursery.start_soon(_send, session, kind)
                for uri in sorted(updated & session.subscriptions):
                    nursery.start_soon(_send, session, "updated", uri)
