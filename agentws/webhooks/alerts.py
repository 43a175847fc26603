"""FailureAlerts: a failing webhook's alert and its recovery message, each posted once.

The store counts a webhook's failed events in a row in the transaction
that fails each one, and marks the streak's alert due when the count
reaches the webhook's ``alert_after`` (pausing the webhook too, when it
says so); an event that succeeds ends the streak, which makes its recovery
due (see :class:`~agentws.domain.models.FailureStreak`). This task, in the
service's nursery, posts what is due: to the webhook's alerts channel, or
its own channel when it has none.

Each notice is taken in the store before it is posted, under a lease, so
instances never both post it; a post that fails for a reason a retry can
cure gives it back to be tried again after a pause; one that cannot work
(the channel is unusable) is given up and its reason kept, shown by
``agentws webhook show``. An instance that dies while posting leaves a
lease that runs out, after which the notice is posted again (a crash
between a post and its record can repeat it, as for incoming webhooks).
The recovery waits until the alert is posted, so it never comes first.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

import attrs
import trio

from agentws.chat.channels import ChannelRef, parse_channel
from agentws.chat.sinks import ChatSink, OutgoingMessage
from agentws.core.errors import RetryableError, StoreError, ValidationError
from agentws.core.metrics import WEBHOOK_ALERTS, WEBHOOK_PAUSES
from agentws.core.rounds import poll_until_closed
from agentws.domain.models import FailureStreak, NoticeKind, Webhook, Workspace
from agentws.domain.replays import ReplaySelection
from agentws.domain.rules import utcnow
from agentws.store.sql_records import RecordStore
from agentws.store.sql_replays import ReplayStore
from agentws.store.sql_streaks import StreakStore

__all__ = ["FailureAlerts", "alert_text", "recovery_text"]

log = logging.getLogger("agentws.webhooks")

# Alerts reach their channel this fast (the store is read this often).
_POLL_S = 1.0
# A taken notice is ours this long: the post's own bound, and time to record it.
_POST_S = 30.0
_LEASE_S = _POST_S + 30.0
# A notice that could not be posted now is tried again after this.
_RETRY_S = 30.0
# Notices posted in one round at most (the rest wait for the next).
_BATCH = 20
# Ended streaks with nothing left to post are kept this long (shown by `webhook show`).
_KEEP = timedelta(days=30)
_FORGET_EVERY_S = 3600.0
# What a recovery counts as left to replay: every failed event no event replays yet.
_ALL_FAILED = ReplaySelection()
# An error quoted in an alert is cut here: the event's page has all of it.
_ERROR_CHARS = 300


class _Store(RecordStore, ReplayStore, StreakStore, Protocol):
    """The areas of the store this module uses."""


def _when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _command(*words: str) -> str:
    return "`agentws " + " ".join(shlex.quote(w) for w in words) + "`"


def _page(base_url: str, workspace: str, webhook: Webhook) -> str:
    return f"{base_url.rstrip('/')}/dashboard/w/{workspace}/webhooks/{webhook.id}"


def alert_text(streak: FailureStreak, webhook: Webhook, workspace: str, base_url: str) -> str:
    """The alert: how many failed, since when, the last error, what was done, what to do."""
    error = (streak.last_error or "no error recorded").replace("\n", " ")
    if len(error) > _ERROR_CHARS:
        error = error[:_ERROR_CHARS].rstrip() + " …"
    lines = [
        f"⚠️ Webhook {webhook.name!r} ({workspace}): {streak.failures} events in a row failed, "
        f"since {_when(streak.started_at)}.",
        f"Last error: {error} (event {streak.last_event_id}).",
    ]
    if streak.paused_at is not None:
        lines.append(
            "It is paused: deliveries are refused (403) until an admin activates it again, "
            f"with {_command('webhook', 'activate', workspace, webhook.name)}."
        )
    else:
        lines.append("It still takes deliveries; their events may fail too.")
    lines.append(
        "Once the cause is fixed, replay what failed with "
        f"{_command('webhook', 'replay', workspace, webhook.name, '--failed')}."
    )
    lines.append(_page(base_url, workspace, webhook))
    return "\n".join(lines)


def recovery_text(
    streak: FailureStreak, webhook: Webhook, workspace: str, base_url: str, *, unreplayed: int
) -> str:
    """The recovery: which event worked, after how many failures; what is left to do.

    ``unreplayed``: the webhook's failed events that no event replays yet.
    After ``webhook replay --failed`` there are none (the recovery is often
    a replay's own success), and the message says so rather than asking for
    the replay again.
    """
    lines = [
        f"✅ Webhook {webhook.name!r} ({workspace}) works again: event "
        f"{streak.recovered_event_id} succeeded after {streak.failures} failed events in a "
        f"row (since {_when(streak.started_at)}).",
    ]
    if webhook.paused_at is not None and not webhook.active:
        lines.append(
            "It is still paused: activate it with "
            f"{_command('webhook', 'activate', workspace, webhook.name)}."
        )
    if unreplayed:
        many = f"The {unreplayed} events" if unreplayed != 1 else "The event"
        lines.append(
            f"{many} that failed were not replayed: replay them with "
            f"{_command('webhook', 'replay', workspace, webhook.name, '--failed')}."
        )
    else:
        lines.append(
            "Every event that failed has been replayed (or is queued to be): follow them with "
            f"{_command('event', 'list', workspace, '--webhook', webhook.name)}."
        )
    lines.append(_page(base_url, workspace, webhook))
    return "\n".join(lines)


@attrs.frozen(kw_only=True)
class _Posted:
    """How a post went: its message, or the problem and whether trying again may help."""

    message_id: str | None = None
    problem: str | None = None
    retryable: bool = False


@attrs.define(eq=False)
class FailureAlerts:
    """Posts due alerts and recoveries until closed; one per service."""

    store: _Store
    sinks: Callable[[ChannelRef], ChatSink]
    #: This instance's id: who holds a notice while posting it.
    owner: str
    #: The dashboard link in the messages.
    base_url: str
    _closed: trio.Event = attrs.field(factory=trio.Event, init=False)
    _forgot_at: float = attrs.field(default=float("-inf"), init=False)

    def close(self) -> None:
        self._closed.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Post due notices until :meth:`close`; a failing round is logged and tried again."""
        task_status.started()
        await poll_until_closed(
            self._round, self._closed, every_s=_POLL_S, what="webhook alerts", log=log
        )

    async def _round(self) -> None:
        await self.post_due()
        await self._forget_old()

    async def post_due(self) -> int:
        """Post the notices that are due now; how many were posted."""
        posted = 0
        for streak in await self.store.due_failure_notices(now=utcnow(), limit=_BATCH):
            # An alert and its recovery may both be due: the alert goes first.
            while await self._post_one(streak.id):
                posted += 1
        return posted

    async def _forget_old(self) -> None:
        if trio.current_time() - self._forgot_at < _FORGET_EVERY_S:
            return
        self._forgot_at = trio.current_time()
        await self.store.forget_failure_streaks(ended_before=utcnow() - _KEEP)

    async def _post_one(self, streak_id: str) -> bool:
        """Take the streak's due notice and post it; whether one was posted."""
        now = utcnow()
        streak = await self.store.take_failure_notice(
            streak_id, owner=self.owner, now=now, until=now + timedelta(seconds=_LEASE_S)
        )
        kind = streak.due if streak is not None else None
        if streak is None or kind is None:
            return False  # another instance took it, or nothing is due
        webhook = await self.store.find(Webhook, id=streak.webhook_id)
        if webhook is None:
            return False  # deleted meanwhile (its streaks go with it)
        workspace = await self.store.get(Workspace, webhook.workspace_id)
        if kind is NoticeKind.ALERT:
            text = alert_text(streak, webhook, workspace.slug, self.base_url)
        else:
            unreplayed = await self.store.count_replay_candidates(webhook.id, _ALL_FAILED)
            text = recovery_text(
                streak, webhook, workspace.slug, self.base_url, unreplayed=unreplayed
            )
        posted = await self._post(webhook, text)
        if posted.problem is not None and posted.retryable:
            WEBHOOK_ALERTS.labels(kind.value, "retried").inc()
            log.warning(
                "webhook %s: cannot post its %s (%s); trying again in %g s",
                webhook.id,
                kind.value,
                posted.problem,
                _RETRY_S,
            )
            await self.store.release_failure_notice(
                streak.id,
                owner=self.owner,
                not_before=utcnow() + timedelta(seconds=_RETRY_S),
                error=posted.problem,
            )
            return False
        await self.store.finish_failure_notice(
            streak.id,
            kind,
            owner=self.owner,
            now=utcnow(),
            message_id=posted.message_id,
            error=posted.problem,
        )
        if posted.problem is not None:
            WEBHOOK_ALERTS.labels(kind.value, "failed").inc()
            log.error(
                "webhook %s: its %s cannot be posted: %s", webhook.id, kind.value, posted.problem
            )
            return False
        WEBHOOK_ALERTS.labels(kind.value, "posted").inc()
        if kind is NoticeKind.ALERT and streak.paused_at is not None:
            WEBHOOK_PAUSES.inc()
        log.info(
            "webhook %s: %s posted (%d failed in a row)", webhook.id, kind.value, streak.failures
        )
        return True

    async def _post(self, webhook: Webhook, text: str) -> _Posted:
        """Post ``text`` where the webhook's alerts go."""
        try:
            channel = parse_channel(webhook.alerts_channel or webhook.channel)
        except ValidationError as exc:
            return _Posted(problem=f"the channel cannot be used: {exc.message}")
        message = OutgoingMessage(
            workspace_id=webhook.workspace_id,
            channel=channel,
            text=text,
            event_id=None,
            # The error quoted comes from elsewhere (a model's or a chat's answer): it pings no one.
            allow_mentions=False,
        )
        try:
            with trio.fail_after(_POST_S):
                message_id = (await self.sinks(channel).post(message)).id
        except trio.TooSlowError:
            return _Posted(problem=f"no answer from {channel} within {_POST_S:g} s", retryable=True)
        except RetryableError as exc:  # the chat's: SinkError
            return _Posted(problem=f"{channel}: {exc.message}", retryable=exc.retryable)
        except StoreError as exc:
            return _Posted(problem=f"{channel}: {exc.message}", retryable=True)
        return _Posted(message_id=message_id)
