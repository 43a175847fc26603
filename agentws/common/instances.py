"""Instances sharing one database: this one's heartbeat, and where the others are.

Every instance keeps a row in ``instances`` with the URL the others reach it
at (``AGENTWS_INTERNAL_URL``, or its bind address), its public base URL (for
the URLs the CLI prints) and a heartbeat written
every ``HEARTBEAT_S``. An MCP session's id starts with its instance's id, so
a request for a session that reached another instance can be forwarded to
its owner (:mod:`agentws.doors.mcp.transports.forward`) while the owner's heartbeat is recent;
an owner silent for ``STALE_S`` is gone, and so are its sessions.

Heartbeats use each host's clock: hosts whose clocks disagree by more than
a few seconds see each other as gone early (keep them on NTP).
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta
from typing import Protocol

import attrs
import trio

from agentws.core.errors import NotFoundError, StoreError
from agentws.domain.models import Instance
from agentws.domain.rules import utcnow
from agentws.store.sql_health import HealthStore
from agentws.store.sql_records import RecordStore

__all__ = ["HEARTBEAT_S", "STALE_S", "InstanceDirectory"]

log = logging.getLogger("agentws.instances")

#: An instance says it is alive this often.
HEARTBEAT_S = 2.0
#: An instance silent for this long is gone: several heartbeats missed, not one slow write.
STALE_S = 10.0
# Where the others are is read again after this long (not on every forwarded request).
_LOOKUP_CACHE_S = 1.0
_RETRY_S = 0.1
# Removing this instance's row at shutdown may take this long at most.
_CLEANUP_S = 2.0


class _Store(RecordStore, HealthStore, Protocol):
    """The areas of the store this module uses."""


@attrs.define(eq=False)
class InstanceDirectory:
    """This instance's row in ``instances``, and a short-lived view of the others'.

    Args:
        store: the shared store.
        instance_id: this instance's id (``AGENTWS_INSTANCE_ID``).
    """

    store: _Store
    instance_id: str
    _internal_url: str | None = attrs.field(default=None, init=False)
    _public_url: str | None = attrs.field(default=None, init=False)
    _announced: trio.Event = attrs.field(factory=trio.Event, init=False)
    _beat: trio.Event = attrs.field(factory=trio.Event, init=False)
    _started_at: datetime = attrs.field(factory=utcnow, init=False)
    _draining: bool = attrs.field(default=False, init=False)
    _live: dict[str, Instance] = attrs.field(factory=dict, init=False)
    _live_read_at: float = attrs.field(default=float("-inf"), init=False)
    _scope: trio.CancelScope = attrs.field(factory=trio.CancelScope, init=False)

    @property
    def internal_url(self) -> str | None:
        """Where the other instances reach this one; None until announced."""
        return self._internal_url

    def announce(self, internal_url: str, public_url: str | None = None) -> None:
        """Start heartbeats with the address the others forward to (once it is bound),
        and the public base URL the CLI prints in URLs."""
        self._internal_url = internal_url.rstrip("/")
        self._public_url = public_url.rstrip("/") if public_url else None
        self._announced.set()
        self._beat.set()

    def drain(self) -> None:
        """Say, from the next heartbeat, that this instance is draining."""
        self._draining = True
        self._beat.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Heartbeat until cancelled, from :meth:`announce` on.

        Resource handling:
            On the way out, this instance's row is deleted (shielded, bounded),
            so requests for its sessions answer 404 at once instead of after
            ``STALE_S``.
        """
        with self._scope:
            task_status.started()
            await self._announced.wait()
            await self._beat_until_cancelled()

    def close(self) -> None:
        """Stop (shutdown): the heartbeats end and this instance's row is deleted."""
        self._scope.cancel()

    async def _beat_until_cancelled(self) -> None:
        try:
            while True:
                self._beat = trio.Event()
                try:
                    await self.store.heartbeat(self._record())
                except StoreError as exc:
                    log.warning("cannot record this instance's heartbeat: %s", exc.message)
                with trio.move_on_after(HEARTBEAT_S):
                    await self._beat.wait()
        finally:
            with trio.move_on_after(_CLEANUP_S, shield=True):
                with contextlib.suppress(NotFoundError, StoreError):
                    await self.store.delete(Instance, self.instance_id)

    def _record(self) -> Instance:
        return Instance(
            id=self.instance_id,
            internal_url=self._internal_url or "",
            started_at=self._started_at,
            heartbeat_at=utcnow(),
            draining=self._draining,
            public_url=self._public_url,
        )

    async def live(self, instance_id: str) -> Instance | None:
        """The instance ``instance_id`` if its heartbeat is recent, else None.

        Error handling:
            StoreError from the store, as for any read.
        """
        age = trio.current_time() - self._live_read_at
        # One not seen yet (just started, or forgotten) is looked for again sooner.
        if age >= _LOOKUP_CACHE_S or (instance_id not in self._live and age >= _RETRY_S):
            since = utcnow() - timedelta(seconds=STALE_S)
            self._live = {i.id: i for i in await self.store.live_instances(since)}
            self._live_read_at = trio.current_time()
        return self._live.get(instance_id)

    def forget(self, instance_id: str) -> None:
        """Count ``instance_id`` as gone until it is read again (nothing answered there)."""
        self._live.pop(instance_id, None)
