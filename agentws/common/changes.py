"""Changes made by any process, announced to this one: the change feed.

Several things this process holds depend on rows another process may
change: open MCP sessions of a token someone revoked, sessions waiting for
an approval someone decided, tool lists built from the catalog. On
PostgreSQL, triggers announce such changes with ``NOTIFY`` (migration 0010)
and :class:`ChangeFeed` listens, on a connection of its own owned by the
service's nursery, reconnecting with backoff when it is lost. Each topic
has a generation, a counter moved by every announcement; waiters wake at
once, and caches compare generations instead of asking the database.

While the feed is not listening (SQLite, which has no notifications; a
lost connection), nothing is announced: :meth:`ChangeFeed.version` is None
("assume changed") and :meth:`ChangeFeed.wait` returns after the caller's
polling interval, so every consumer falls back to reading the store as
often as it did without a feed. Connecting and losing the connection both
move every topic, so nothing changed while deaf goes unnoticed; so does a
safety tick every ``SAFETY_POLL_S`` while listening.

A store without notifications still says when anyone committed (SQLite's
``PRAGMA data_version``, a read of shared memory): the feed reads it every
``COMMIT_POLL_S`` and counts the commits it saw (:meth:`ChangeFeed.commits`).
A consumer that cannot wait for its polling interval (a revocation made by
the CLI must close its sessions at once) passes that count to
:meth:`ChangeFeed.wait` and wakes on the next commit, whoever made it, and
then checks the store itself.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable

import attrs
import trio

from agentws.core.backoff import Backoff
from agentws.core.errors import StoreError
from agentws.store.sql_changes import ChangeStore

__all__ = ["ChangeFeed", "Topic"]

log = logging.getLogger("agentws.changes")

# While listening, every topic moves this often all the same, so consumers
# and caches read the store again: a safety net for an announcement lost in
# a way the connection check did not notice.
SAFETY_POLL_S = 10.0
# Reconnecting: full jitter below 0.5 s, doubling with each failure up to 5 s. The
# cap is low because an instance is not ready while its listener is down.
_RECONNECT = Backoff(first_s=0.5, cap_s=5.0, jitter=True)
# How often a store without notifications is asked whether anyone committed.
COMMIT_POLL_S = 0.05


class Topic(enum.StrEnum):
    """What a change notification is about (the payloads of migration 0010's triggers)."""

    TOKENS = "tokens"
    APPROVALS = "approvals"
    CATALOG = "catalog"
    #: Documents and skills of libraries, and attachments (migration 0016).
    LIBRARIES = "libraries"


@attrs.define
class _OnStarted:
    """A ``task_status`` that calls back when the task reports started."""

    callback: Callable[[], None]

    def started(self, value: object = None) -> None:
        self.callback()


@attrs.define(eq=False)
class ChangeFeed:
    """This process's view of changes announced by the store.

    Args:
        store: the store whose announcements to follow.
    """

    store: ChangeStore
    _generations: dict[Topic, int] = attrs.field(
        factory=lambda: dict.fromkeys(Topic, 0), init=False
    )
    _changed: trio.Event = attrs.field(factory=trio.Event, init=False)
    _listening: bool = attrs.field(default=False, init=False)
    #: Why the feed is not listening, for readiness; None while it listens.
    _problem: str | None = attrs.field(default="not connected yet", init=False)
    _scope: trio.CancelScope = attrs.field(factory=trio.CancelScope, init=False)
    #: Commits seen on a store without notifications (None: not watched).
    _commits: int | None = attrs.field(default=None, init=False)

    def close(self) -> None:
        """Stop listening (shutdown); consumers poll from now on."""
        self._scope.cancel()

    @property
    def listening(self) -> bool:
        """Whether announcements arrive now."""
        return self._listening

    def generation(self, topic: Topic) -> int:
        """A counter that moves with every announcement about ``topic``."""
        return self._generations[topic]

    def version(self, topic: Topic) -> int | None:
        """:meth:`generation` while listening; None ("assume changed") otherwise.

        Two equal versions mean nothing about ``topic`` was announced in
        between and the feed listened all along (losing and regaining the
        connection moves every topic).
        """
        return self._generations[topic] if self._listening else None

    def commits(self) -> int | None:
        """Commits seen on a store without notifications; None where they are not watched."""
        return self._commits

    async def wait(
        self, topic: Topic, seen: int, *, poll_s: float, commits: int | None = None
    ) -> None:
        """Return once ``topic`` has moved past generation ``seen``, or when it is time to poll.

        That is after ``poll_s`` when not listening, and after the longer
        safety interval while listening. With ``commits`` (what
        :meth:`commits` said along with ``seen``), it also returns once a
        commit was seen since, where commits are watched; the safety
        interval is then the polling interval too.
        """
        by_commit = commits is not None and self._commits is not None
        timeout_s = max(poll_s, SAFETY_POLL_S) if self._listening or by_commit else poll_s
        with trio.move_on_after(timeout_s):
            while self._generations[topic] == seen and not (by_commit and self._commits != commits):
                await self._changed.wait()

    def problem(self) -> str | None:
        """Why announcements are not arriving, where they should; None when all is well."""
        if not self.store.notifies:
            return None
        return self._problem

    def _move(self, topics: list[Topic]) -> None:
        for topic in topics:
            self._generations[topic] += 1
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _on_change(self, payload: str) -> None:
        try:
            topic = Topic(payload)
        except ValueError:
            log.debug("ignoring a change notification about %r", payload)
            return
        self._move([topic])

    def _set_listening(self, listening: bool) -> None:
        self._listening = listening
        if listening:
            self._problem = None
        self._move(list(Topic))

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen, reconnecting with backoff, until cancelled.

        Reports started after the first attempt to connect, successful or
        not, so a database that is down delays nothing: consumers poll.
        Without notifications (SQLite) it watches for commits instead, if
        the store can tell (see :meth:`commits`).
        """
        if not self.store.notifies:
            self._problem = None
            with self._scope:
                await self._watch_commits(task_status)
            return
        with self._scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._safety_ticks)
                await self._listen(task_status)
        self._set_listening(False)

    async def _watch_commits(self, task_status: trio.TaskStatus[None]) -> None:
        last = self.store.data_version()
        if last is not None:
            self._commits = 0
        task_status.started()
        if last is None:
            return  # the store cannot tell (an in-memory database): consumers poll
        seen = 0
        try:
            while True:
                await trio.sleep(COMMIT_POLL_S)
                version = self.store.data_version()
                if version is not None and version != last:
                    last, seen = version, seen + 1
                    self._commits = seen
                    self._wake()
        finally:
            self._commits = None  # consumers poll again
            self._wake()

    async def _safety_ticks(self) -> None:
        while True:
            await trio.sleep(SAFETY_POLL_S)
            if self._listening:
                self._move(list(Topic))

    async def _listen(self, task_status: trio.TaskStatus[None]) -> None:
        reported = False
        failures = 0

        def listening() -> None:
            nonlocal failures, reported
            failures = 0
            self._set_listening(True)
            log.info("listening for changes")
            if not reported:
                reported = True
                task_status.started()

        while True:
            try:
                await self.store.listen_for_changes(
                    self._on_change, task_status=_OnStarted(listening)
                )
            except StoreError as exc:
                self._problem = f"change listener: {exc.message}"
            except Exception as exc:
                # The listener must come back whatever broke it; consumers poll meanwhile.
                log.exception("the change listener failed")
                self._problem = f"change listener: {type(exc).__name__}"
            was_listening = self._listening
            self._set_listening(False)
            if not reported:
                reported = True
                task_status.started()
            failures += 1
            delay = _RECONNECT.delay_s(failures)
            log.warning(
                "%s; %s again in %.1f s",
                self._problem,
                "listening" if was_listening else "trying",
                delay,
            )
            await trio.sleep(delay)
