"""A webhook's failed events in a row, and its two notices: an alert and a recovery.

A streak opens with the first event of a webhook that fails (after its
retries) and counts each one after it; the first event that succeeds ends
it. Both are written in the transaction that finishes the event
(:meth:`~agentws.store.sql_events.EventStore.finish_event`), so instances finishing
events of one webhook at once count each failure once. When the count
reaches the webhook's ``alert_after``, that same transaction marks the
alert due (``alerted_at``) and, with ``pause_on_failure``, pauses the
webhook. The notices are then posted by :mod:`agentws.webhooks.alerts`:
the alert once, and, once the streak has ended, the recovery once.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import attrs

from agentws.domain.record_fields import id_field, now_field

__all__ = ["FailureStreak", "NoticeKind"]


class NoticeKind(StrEnum):
    """What a streak's notice says: it failed too often, or it works again."""

    ALERT = "alert"
    RECOVERY = "recovery"


@attrs.frozen(kw_only=True)
class FailureStreak:
    """Consecutive failed events of one webhook; open while ``ended_at`` is None."""

    id: str = id_field("stk")
    webhook_id: str
    #: Failed events in a row so far.
    failures: int = 0
    started_at: datetime = now_field()
    last_failed_at: datetime = now_field()
    last_event_id: str | None = None
    last_error: str | None = None
    #: When the count reached the webhook's ``alert_after``: the alert is due (or posted).
    alerted_at: datetime | None = None
    #: When that alert paused the webhook (its ``pause_on_failure``).
    paused_at: datetime | None = None
    alert_posted_at: datetime | None = None
    alert_message_id: str | None = None
    #: When an event of the webhook succeeded again.
    ended_at: datetime | None = None
    recovered_event_id: str | None = None
    recovery_posted_at: datetime | None = None
    recovery_message_id: str | None = None
    #: Why the last notice could not be posted (it was given up, or is retried).
    notice_error: str | None = None
    #: The instance posting a notice now, and until when it may.
    notice_owner: str | None = None
    notice_until: datetime | None = None

    @property
    def due(self) -> NoticeKind | None:
        """The notice to post next, if any: the alert first, the recovery after it."""
        if self.alerted_at is None:
            return None
        if self.alert_posted_at is None:
            return NoticeKind.ALERT
        if self.ended_at is not None and self.recovery_posted_at is None:
            return NoticeKind.RECOVERY
        return None
