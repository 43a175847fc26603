"""Failure streaks and their notices, in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

:func:`streak_statements` are the statements :meth:`finish_event` adds to
the transaction that fails an event, or finishes one done, each guarded as
its other statements are (only the lease's holder, while the event runs):

- failed: the webhook's open streak counts one more (or opens, at 1); if
  that reaches the webhook's ``alert_after`` (> 0) and the streak has had
  no alert, the webhook is paused when it says so (``active`` false,
  ``paused_at``), then the alert is marked due (``alerted_at``, and
  ``paused_at`` if this paused it);
- done: the open streak ends (``ended_at``), which makes its recovery due
  if it had an alert.

Concurrent transactions on one webhook queue on the streak's row (the
unique index of open streaks, on PostgreSQL), so each failure counts once
and only the one that reaches the count marks the alert. A notice is then
posted by whichever instance takes it: taking is one conditional
``UPDATE`` that leases it (``notice_owner`` until ``notice_until``), so
several instances never post it both, and one that dies while posting
leaves a lease that runs out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, TypedDict, Unpack

from agentws.domain.models import EventStatus, FailureStreak, NoticeKind
from agentws.domain.rules import new_id
from agentws.store.queries import Queries
from agentws.store.tables import Dialect, table_for

__all__ = ["NoticeEnding", "StreakQueries", "StreakStore", "streak_statements"]

_Statement = tuple[str, tuple[Any, ...]]

# The event being finished, still running under the caller's lease ($1 event, $2 owner).
_HELD = "SELECT webhook_id FROM events WHERE id = $1 AND lease_owner = $2 AND status = 'running'"
# The webhook's open streak has reached its alert_after, and had no alert yet.
_REACHED = (
    "s.ended_at IS NULL AND s.alerted_at IS NULL AND w.alert_after > 0"
    " AND s.failures >= w.alert_after"
)
# A notice is due: the alert, or (the streak over) the recovery after a posted alert.
_DUE = (
    "alerted_at IS NOT NULL AND (alert_posted_at IS NULL"
    " OR (ended_at IS NOT NULL AND recovery_posted_at IS NULL))"
)


def _ts(value: datetime | None, dialect: Dialect) -> Any:
    return table_for(FailureStreak).encode_value("started_at", value, dialect)


def streak_statements(
    dialect: Dialect,
    event_id: str,
    owner: str,
    status: EventStatus,
    now: datetime,
    error: str | None,
) -> list[_Statement]:
    """What finishing ``event_id`` as ``status`` does to its webhook's streak (see the module)."""
    at = _ts(now, dialect)
    if status is EventStatus.DONE:
        return [
            (
                "UPDATE webhook_streaks SET ended_at = $3, recovered_event_id = $1"
                f" WHERE ended_at IS NULL AND webhook_id = ({_HELD})",
                (event_id, owner, at),
            )
        ]
    if status is not EventStatus.FAILED:
        return []
    return [
        (
            "INSERT INTO webhook_streaks (id, webhook_id, failures, started_at,"
            " last_failed_at, last_event_id, last_error)"
            " SELECT $4, webhook_id, 1, $3, $3, id, $5 FROM events"
            " WHERE id = $1 AND lease_owner = $2 AND status = 'running'"
            " ON CONFLICT (webhook_id) WHERE ended_at IS NULL DO UPDATE SET"
            " failures = webhook_streaks.failures + 1,"
            " last_failed_at = excluded.last_failed_at,"
            " last_event_id = excluded.last_event_id, last_error = excluded.last_error",
            (event_id, owner, at, new_id("stk"), error),
        ),
        (
            "UPDATE webhooks SET active = FALSE, paused_at = $3, updated_at = $3"
            f" WHERE id = ({_HELD}) AND active = TRUE AND pause_on_failure = TRUE"
            " AND EXISTS (SELECT 1 FROM webhook_streaks s, webhooks w"
            f" WHERE s.webhook_id = webhooks.id AND w.id = webhooks.id AND {_REACHED})",
            (event_id, owner, at),
        ),
        (
            # paused_at: the webhook's, if the statement before paused it just now.
            "UPDATE webhook_streaks SET alerted_at = $3, paused_at = (SELECT paused_at"
            " FROM webhooks WHERE id = webhook_streaks.webhook_id AND paused_at = $3)"
            f" WHERE webhook_id = ({_HELD}) AND id IN (SELECT s.id FROM webhook_streaks s"
            f" JOIN webhooks w ON w.id = s.webhook_id WHERE {_REACHED})",
            (event_id, owner, at),
        ),
    ]


class NoticeEnding(TypedDict):
    """How ``owner``'s posting of a notice ended (:meth:`StreakStore.finish_failure_notice`):
    posted as ``message_id``, or given up on ``error``."""

    owner: str
    now: datetime
    message_id: str | None
    error: str | None


class StreakStore(Protocol):
    """Webhooks' failure streaks and the notices they post."""

    async def due_failure_notices(self, *, now: datetime, limit: int) -> list[FailureStreak]:
        """Streaks with a notice to post (an alert, or a recovery after a posted alert)
        that no instance is posting at ``now``, oldest alert first."""
        ...

    async def take_failure_notice(
        self, streak_id: str, *, owner: str, now: datetime, until: datetime
    ) -> FailureStreak | None:
        """Take the streak's due notice to post it, leased to ``owner`` until ``until``;
        the streak as taken, or None if it is not due or another took it first."""
        ...

    async def finish_failure_notice(
        self, streak_id: str, kind: NoticeKind, **ending: Unpack[NoticeEnding]
    ) -> bool:
        """Record ``owner``'s notice posted (``message_id``) or given up (``error``);
        False if ``owner`` no longer held it."""
        ...

    async def release_failure_notice(
        self, streak_id: str, *, owner: str, not_before: datetime, error: str
    ) -> None:
        """Give a taken notice back (it could not be posted now): due again from ``not_before``."""
        ...

    async def forget_failure_streaks(self, *, ended_before: datetime) -> int:
        """Delete streaks that ended before ``ended_before`` with nothing left to post; how many."""
        ...

    async def latest_failure_streak(self, webhook_id: str) -> FailureStreak | None:
        """The webhook's newest streak (open or ended), if it has any left."""
        ...


class StreakQueries(Queries):
    """Streak notices; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def _streaks(self, rows: list[dict[str, Any]]) -> list[FailureStreak]:
        table = table_for(FailureStreak)
        return [table.decode(row, self.dialect) for row in rows]

    async def due_failure_notices(self, *, now: datetime, limit: int) -> list[FailureStreak]:
        columns = ", ".join(table_for(FailureStreak).columns)
        rows = await self._db.fetch(
            f"SELECT {columns} FROM webhook_streaks WHERE {_DUE}"
            " AND (notice_until IS NULL OR notice_until <= $1)"
            f" ORDER BY alerted_at, id LIMIT {max(1, int(limit))}",
            _ts(now, self.dialect),
        )
        return self._streaks(rows)

    async def take_failure_notice(
        self, streak_id: str, *, owner: str, now: datetime, until: datetime
    ) -> FailureStreak | None:
        (taken,) = await self._db.execute_batch(
            [
                (
                    "UPDATE webhook_streaks SET notice_owner = $2, notice_until = $3"
                    f" WHERE id = $1 AND {_DUE} AND (notice_until IS NULL OR notice_until <= $4)",
                    (streak_id, owner, _ts(until, self.dialect), _ts(now, self.dialect)),
                )
            ]
        )
        if not taken:
            return None
        columns = ", ".join(table_for(FailureStreak).columns)
        rows = await self._db.fetch(
            f"SELECT {columns} FROM webhook_streaks WHERE id = $1 AND notice_owner = $2",
            streak_id,
            owner,
        )
        found = self._streaks(rows)
        return found[0] if found else None

    async def finish_failure_notice(
        self, streak_id: str, kind: NoticeKind, **ending: Unpack[NoticeEnding]
    ) -> bool:
        # Column names come from this fixed choice, never from a caller.
        posted, message = (
            ("alert_posted_at", "alert_message_id")
            if kind is NoticeKind.ALERT
            else ("recovery_posted_at", "recovery_message_id")
        )
        (finished,) = await self._db.execute_batch(
            [
                (
                    f"UPDATE webhook_streaks SET {posted} = $3, {message} = $4, notice_error = $5,"
                    " notice_owner = NULL, notice_until = NULL"
                    f" WHERE id = $1 AND notice_owner = $2 AND {posted} IS NULL",
                    (
                        streak_id,
                        ending["owner"],
                        _ts(ending["now"], self.dialect),
                        ending["message_id"],
                        ending["error"],
                    ),
                )
            ]
        )
        return bool(finished)

    async def release_failure_notice(
        self, streak_id: str, *, owner: str, not_before: datetime, error: str
    ) -> None:
        await self._db.execute_batch(
            [
                (
                    "UPDATE webhook_streaks SET notice_owner = NULL, notice_until = $3,"
                    " notice_error = $4 WHERE id = $1 AND notice_owner = $2",
                    (streak_id, owner, _ts(not_before, self.dialect), error),
                )
            ]
        )

    async def forget_failure_streaks(self, *, ended_before: datetime) -> int:
        (forgotten,) = await self._db.execute_batch(
            [
                (
                    "DELETE FROM webhook_streaks WHERE ended_at IS NOT NULL AND ended_at < $1"
                    " AND (alerted_at IS NULL OR recovery_posted_at IS NOT NULL)",
                    (_ts(ended_before, self.dialect),),
                )
            ],
            durable=False,
        )
        return forgotten

    async def latest_failure_streak(self, webhook_id: str) -> FailureStreak | None:
        columns = ", ".join(table_for(FailureStreak).columns)
        rows = await self._db.fetch(
            f"SELECT {columns} FROM webhook_streaks WHERE webhook_id = $1"
            " ORDER BY started_at DESC, id DESC LIMIT 1",
            webhook_id,
        )
        found = self._streaks(rows)
        return found[0] if found else None
