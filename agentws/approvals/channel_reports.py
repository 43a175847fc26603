"""ChannelReports: a run's queued call, its outcome reported in the event's channel.

A webhook's run ends before an admin decides: its message says what waits
(tool, approval id, dashboard link). When the decision is made, anywhere
(CLI, dashboard, another instance), this task in the service's nursery
posts a follow-up in the same channel, in the thread of the run's message
where the chat has threads: approved and ran (with the result's start),
approved but failed, denied (with the reason), or expired.

One report per approval: the report is claimed in the store before it is
posted (``reported_at``), so several instances never both post it; a post
that fails for a reason a retry can cure gives the claim back and is tried
again after a pause. A report waits until the run's own message is posted
(the event is finished), so the outcome never comes before the question.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import attrs
import trio

from agentws.chat.channels import ChannelRef, parse_channel
from agentws.chat.sinks import ChatSink, OutgoingMessage, SinkError
from agentws.core.errors import RetryableError, StoreError, ValidationError
from agentws.core.rounds import poll_until_closed
from agentws.domain.models import Approval, ApprovalStatus, ChatMessage, Event, Webhook
from agentws.domain.rules import utcnow
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_records import RecordStore

__all__ = ["ChannelReports", "report_text"]

log = logging.getLogger("agentws.approvals")

# Decisions reach the channel this fast.
_POLL_S = 1.0
# A report that could not be posted waits this long before it is tried again.
_RETRY_S = 30.0
_BATCH = 50
_RESULT_CHARS = 600


class _Store(RecordStore, ApprovalDecisionStore, Protocol):
    """The areas of the store this module uses."""


def report_text(approval: Approval) -> str:
    """The follow-up message for a finished approval."""
    who = approval.decided_by or "an admin"
    head = f"{approval.tool_name} (approval {approval.id})"
    if approval.status is ApprovalStatus.EXECUTED:
        text = f"✅ Approved by {who}: {head} ran."
        result = _result_text(approval)
        if result:
            text += "\n```\n" + result + "\n```"
        return text
    if approval.status is ApprovalStatus.FAILED:
        return f"⚠️ Approved by {who}, but {head} failed: {approval.error or 'no detail'}"
    if approval.status is ApprovalStatus.DENIED:
        text = f"❌ Denied by {who}: {head} did not run."
        return text + (f" Reason: {approval.reason}" if approval.reason else "")
    return f"⌛ {head} expired without a decision: it did not run."


def _result_text(approval: Approval) -> str:
    if approval.result is None:
        return ""
    parts = [
        str(c.get("text", ""))
        for c in approval.result.get("content", [])
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    text = "\n".join(parts).strip().replace("```", "'''")
    if len(text) > _RESULT_CHARS:
        text = text[:_RESULT_CHARS].rstrip() + " …"
    return text


@attrs.define(eq=False)
class ChannelReports:
    store: _Store
    sinks: Callable[[ChannelRef], ChatSink]
    _closed: trio.Event = attrs.field(factory=trio.Event, init=False)
    #: Reports that failed here, and when they may be tried again.
    _not_before: dict[str, float] = attrs.field(factory=dict, init=False)

    def close(self) -> None:
        self._closed.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Report outcomes until :meth:`close`; a failing round is logged and tried again."""
        task_status.started()
        await poll_until_closed(
            self.report_due, self._closed, every_s=_POLL_S, what="approvals' reports", log=log
        )

    async def report_due(self) -> int:
        """Post the reports that are due; how many were posted."""
        posted = 0
        now = trio.current_time()
        for approval in await self.store.unreported_approvals(limit=_BATCH):
            if self._not_before.get(approval.id, 0.0) > now:
                continue
            if await self._report(approval):
                posted += 1
        return posted

    async def _report(self, approval: Approval) -> bool:
        event = await self.store.find(Event, id=approval.event_id)
        if event is not None and not event.status.finished:
            return False  # the run's own message comes first
        webhook = await self.store.find(Webhook, id=event.webhook_id) if event else None
        if not await self.store.take_approval_report(approval.id, utcnow()):
            return False  # another instance took it
        if event is None or webhook is None:
            return False  # deleted meanwhile: there is no channel left to tell
        try:
            channel = parse_channel(webhook.channel)
        except ValidationError:
            return False
        original = await self.store.find(ChatMessage, event_id=event.id)
        thread = None
        if original is not None and channel.sink != "webhook":
            thread = original.thread or original.external_id or original.id
        message = OutgoingMessage(
            workspace_id=webhook.workspace_id,
            channel=channel,
            text=report_text(approval),
            event_id=None,
            thread=thread,
            allow_mentions=webhook.allow_mentions,
        )
        try:
            await self.sinks(channel).post(message)
        except (SinkError, StoreError) as exc:
            text = exc.message
            retryable = not isinstance(exc, RetryableError) or exc.retryable
            if retryable:
                self._not_before[approval.id] = trio.current_time() + _RETRY_S
                await self.store.release_approval_report(approval.id)
            log.warning(
                "approval %s: cannot report the outcome in %s (%s)%s",
                approval.id,
                channel,
                text,
                "; trying again later" if retryable else "",
            )
            return False
        self._not_before.pop(approval.id, None)
        log.info("approval %s: outcome reported in %s", approval.id, channel)
        return True
