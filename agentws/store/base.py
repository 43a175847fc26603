"""The :class:`Store` protocol: everything the service layer asks of storage.

Records are the frozen attrs classes of :mod:`agentws.domain.models`; the
generic operations take the record type (``await store.get(Group, id)``)
and return records of that type. Operations that need more than one
statement, or a query the generic ones cannot say, are methods of their own.

What a group exposes (``group_*`` and :meth:`Store.search_documents`) is
decided here, in one place: libraries and connectors reach a group only by
being attached to it (and belonging to its workspace), documents whose policy
is ``never`` are not there at all, and connectors that are not active offer
no tools.

Every implementation passes ``tests/contract``; both stores raise only
:mod:`agentws.errors`: :class:`~agentws.errors.NotFoundError` for a missing
record, :class:`~agentws.errors.ConflictError` for a broken uniqueness rule,
:class:`~agentws.errors.StoreUnavailableError` when the database cannot be
reached.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

import outcome
import trio

from agentws.domain.approval_lists import ApprovalPage, ApprovalQuery
from agentws.domain.audit_lists import AuditPage, AuditQuery
from agentws.domain.connector_health import Activity
from agentws.domain.deliveries import DeliveryGenerations, Ingested
from agentws.domain.delivery_log import Delivery, StatusFilter
from agentws.domain.event_lists import EventPage, EventQuery
from agentws.domain.models import (
    Approval,
    ApprovalOutcomes,
    ApprovalStatus,
    AuditEntry,
    CachedTool,
    Capability,
    ChatMessage,
    ConfirmToken,
    Connector,
    ContextDocument,
    DocumentHit,
    Event,
    EventAttempt,
    EventStatus,
    FailureStreak,
    Group,
    Instance,
    Library,
    McpToken,
    NoticeKind,
    OAuthClient,
    OAuthGrant,
    OAuthRefreshToken,
    Skill,
    ToolPermission,
    Webhook,
    WebhookSample,
    Workspace,
)
from agentws.domain.replays import ReplayCandidate, ReplayOrder, ReplaySelection
from agentws.domain.rollups import Bucket, RollupMark
from agentws.store.tables import Dialect

__all__ = ["R", "Store"]

R = TypeVar("R")


class Store(Protocol):
    """Durable storage for every record agentws keeps."""

    @property
    def dialect(self) -> Dialect: ...

    async def ping(self) -> None:
        """Round-trip to the database (readiness)."""
        ...

    def data_version(self) -> int | None:
        """Changes whenever anyone commits; None when unknown (then assume a change)."""
        ...

    async def insert(self, record: R) -> R:
        """Store a new record; ConflictError if it breaks a uniqueness rule."""
        ...

    async def insert_many(self, records: list[Any]) -> None:
        """Store new records of one type, all in one transaction."""
        ...

    async def get(self, kind: type[R], record_id: str, /) -> R:
        """The record of type ``kind`` with ``record_id``; NotFoundError if none."""
        ...

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        """The first record whose fields equal ``where``, or None."""
        ...

    async def select(
        self, kind: type[R], /, *, limit: int | None = None, offset: int = 0, **where: Any
    ) -> list[R]:
        """Records whose fields equal ``where`` (None matches NULL), oldest first."""
        ...

    async def count(self, kind: type[Any], /, **where: Any) -> int:
        """How many records of ``kind`` match ``where``."""
        ...

    async def update(self, record: R) -> R:
        """Replace the stored record with the same id; NotFoundError if none."""
        ...

    async def delete(self, kind: type[Any], record_id: str, /) -> None:
        """Delete a record and what belongs to it; NotFoundError if none."""
        ...

    async def workspace_by_slug(self, slug: str) -> Workspace:
        """NotFoundError naming the slug if there is no such workspace."""
        ...

    async def group_by_slug(self, workspace_slug: str, group_slug: str) -> Group:
        """NotFoundError naming the workspace or group that does not exist."""
        ...

    async def token_by_hash(self, token_hash: str) -> McpToken | None:
        """The token with this SHA-256, revoked or not; None if there is none."""
        ...

    async def revoke_token(self, token_id: str) -> McpToken:
        """Mark a token revoked (now); revoking twice keeps the first time."""
        ...

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        """Those of ``token_ids`` that exist and are not revoked (open sessions' tokens)."""
        ...

    async def touch_token(self, token_id: str) -> None:
        """Record that a token was just used."""
        ...

    async def insert_oauth_client_within(self, client: OAuthClient, *, limit: int) -> bool:
        """Insert ``client`` unless ``limit`` clients of its kind exist already; whether it was.

        Counted and inserted at once: registrations racing on any instance
        never pass the limit together.
        """
        ...

    async def decide_oauth_grant(
        self,
        grant_id: str,
        *,
        approve: bool,
        scope: Capability,
        code_hash: str | None,
        decided_by: str,
        expires_at: datetime,
    ) -> bool:
        """Approve (with its code's hash and the scope granted) or deny a pending
        authorization request; False if it was not pending (decided already)."""
        ...

    async def take_oauth_code(
        self, code_hash: str, family_id: str, now: datetime
    ) -> tuple[OAuthGrant | None, bool]:
        """Take an approved, unexpired code once (its grant becomes used, of
        ``family_id``). Returns the grant, or None; and whether the code had been
        used before, in which case everything its first use issued is revoked."""
        ...

    async def spend_refresh_token(
        self, token_hash: str, now: datetime
    ) -> tuple[OAuthRefreshToken | None, bool]:
        """Spend a live refresh token once. Returns it, or None; and whether it had
        been spent before, in which case its whole family is revoked."""
        ...

    async def revoke_oauth_family(self, family_id: str, now: datetime) -> int:
        """Revoke the refresh tokens and access tokens of one consent; how many
        access tokens were live."""
        ...

    async def revoke_oauth_client(self, client_id: str, now: datetime) -> int:
        """Revoke every token of an OAuth client and forget its pending requests;
        how many access tokens were live."""
        ...

    async def forget_expired_oauth(self, before: datetime) -> int:
        """Delete authorization requests, codes and refresh tokens that expired
        before ``before``; how many."""
        ...

    async def mark_tools_fetched(self, connector_id: str, fetched_at: datetime) -> None:
        """Set ``fetched_at`` of every cached tool of the connector, and nothing else.

        A refresh that found a tool unchanged must not write the rest of its
        row back: an admin's label set meanwhile would be lost.
        """
        ...

    async def decide_approval(
        self,
        approval_id: str,
        *,
        status: ApprovalStatus,
        decided_by: str,
        reason: str | None,
        now: datetime,
    ) -> Approval | None:
        """Move a pending, unexpired approval to ``status`` (approved or denied).

        One statement decides it, so of concurrent deciders exactly one gets
        the approval back; the others get None (it was decided, or expired).
        """
        ...

    async def finish_approval(
        self,
        approval_id: str,
        *,
        owner: str,
        status: ApprovalStatus,
        result: dict[str, Any] | None,
        error: str | None,
        now: datetime,
    ) -> Approval | None:
        """Record the outcome of an approved call (executed or failed) that ``owner`` runs;
        None if it does not (it is not approved, or another holds its lease)."""
        ...

    async def claim_approvals(
        self, *, owner: str, lease_expires_at: datetime, limit: int
    ) -> list[Approval]:
        """Claim up to ``limit`` approved calls no service has taken, oldest first, to run.

        Each is leased to ``owner`` until ``lease_expires_at`` (its
        ``attempts`` counts one more); concurrent claimers, on any instance,
        never get the same call.
        """
        ...

    async def renew_approval_lease(
        self, approval_id: str, *, owner: str, lease_expires_at: datetime
    ) -> bool:
        """Extend ``owner``'s lease on a call it runs; False if it no longer holds it."""
        ...

    async def lapse_approval_leases(self, *, now: datetime, error: str) -> list[Approval]:
        """Fail the running calls whose lease ran out by ``now`` (their instance stopped)
        with ``error``; the ones this call failed."""
        ...

    async def retry_approval(self, approval_id: str) -> Approval | None:
        """Put a failed call back to approved (outcome cleared, to be claimed again);
        None if it is not failed (of concurrent retries, one wins)."""
        ...

    async def issue_confirm_token(self, token: ConfirmToken, *, keep: int) -> None:
        """Keep a confirm token; its bearer token's oldest beyond ``keep`` and every
        expired one are forgotten."""
        ...

    async def take_confirm_token(self, token_hash: str, token_id: str) -> ConfirmToken | None:
        """Take (delete) the confirm token with this hash given to ``token_id``; None if
        there is none (never given, given to another token, or taken already)."""
        ...

    async def approvals(self, ids: list[str]) -> list[Approval]:
        """The approvals with these ids (those that exist), in no particular order."""
        ...

    async def approval_outcomes(self, ids: list[str], *, now: datetime) -> ApprovalOutcomes:
        """Which of these approvals exist, and the outcomes of those settled at ``now``.

        Settled: denied, executed, failed, expired, or pending past its time.
        Only what a caller is told is read, never the arguments: a session
        waiting on its token's queued calls asks four times a second.
        """
        ...

    async def queue_approval(self, approval: Approval, *, max_pending: int, now: datetime) -> bool:
        """Store a new pending approval unless its requester already has ``max_pending``.

        Counts the requester's (``requested_by``: one token, one webhook)
        pending approvals not yet expired at ``now``, and inserts in the same
        transaction, serialized per requester: concurrent calls cannot pass
        the cap together. False, and nothing stored, when at the cap.
        """
        ...

    async def approval_page(self, query: ApprovalQuery, *, now: datetime) -> ApprovalPage:
        """One page of queued calls as summaries: previews, never whole arguments or results.

        Statuses are as a person sees them at ``now`` (a pending request past
        its expiry is expired). Ordered by ``(created_at, id)``, oldest first
        unless ``query.newest_first``; ``query.cursor`` is one a page gave.
        """
        ...

    async def count_approvals(self, query: ApprovalQuery, *, now: datetime) -> int:
        """How many queued calls ``query`` lists, over all its pages."""
        ...

    async def expire_approvals(self, now: datetime) -> list[Approval]:
        """Mark pending approvals whose time is up as expired; the ones this call expired."""
        ...

    async def take_rate_token(
        self, webhook_id: str, *, rate_per_min: int, burst: int, now: datetime
    ) -> float | None:
        """Take one delivery from the webhook's shared bucket (``burst``, then ``rate_per_min``).

        One transaction, serialized per webhook: every process on this
        database draws on the same bucket. None when taken; else the seconds
        until a delivery would be.
        """
        ...

    async def unreported_approvals(self, *, limit: int) -> list[Approval]:
        """Finished approvals queued by a webhook's run whose outcome the channel has not had."""
        ...

    async def take_approval_report(self, approval_id: str, now: datetime) -> bool:
        """Claim the report of an approval's outcome; False if another took it first."""
        ...

    async def release_approval_report(self, approval_id: str) -> None:
        """Give a claimed report back (it could not be posted): it is taken again later."""
        ...

    async def tool_permissions(self, workspace_id: str, group_id: str) -> list[ToolPermission]:
        """Permissions that may apply in a group: its own and the workspace's."""
        ...

    async def audit_log(
        self,
        *,
        limit: int,
        workspace_id: str | None = None,
        action_prefix: str | None = None,
        after: datetime | None = None,
    ) -> list[AuditEntry]:
        """Audit entries, oldest first: the newest ``limit``, or the ``limit`` after ``after``.

        ``action_prefix`` keeps entries whose action starts with it (``approval.``).
        """
        ...

    async def connector_activity(
        self, workspace_id: str, *, since: datetime, limit: int
    ) -> list[Activity]:
        """The workspace's tool calls and connector refreshes since ``since``, newest
        first, at most ``limit`` (one read through the action index, for the
        connectors page's health)."""
        ...

    async def connector_tool_summaries(
        self, workspace_id: str
    ) -> dict[str, tuple[int, datetime | None]]:
        """Connector id -> how many tools it has cached, and the newest fetch of them."""
        ...

    async def delete_admin_unless_last(self, admin_id: str) -> bool:
        """Delete the admin (its sessions and API tokens with it) unless no other is left.

        Returns:
            False, deleting nothing, when it is the only admin.

        Error handling:
            NotFoundError for an unknown id.
        """
        ...

    async def audit_page(self, query: AuditQuery) -> AuditPage:
        """A page of the audit log, newest first, under ``query``'s filters.

        ``next_cursor`` leads to older entries, ``previous_cursor`` to newer ones.
        """
        ...

    async def group_libraries(self, group_id: str) -> list[Library]:
        """Libraries attached to the group, in the order they were attached."""
        ...

    async def group_documents(self, group_id: str) -> list[ContextDocument]:
        """Documents the group exposes (policy ``spine`` or ``on_demand``).

        Ordered by when their library was attached, then by creation.
        """
        ...

    async def group_document(self, group_id: str, document_id: str) -> ContextDocument | None:
        """That document if the group exposes it; None otherwise, as if it did not exist."""
        ...

    async def group_skills(self, group_id: str) -> list[Skill]:
        """Skills of the group's libraries, by attach order, then creation."""
        ...

    async def catalog_version(self) -> int:
        """A counter that moves with every change to what groups' tool lists are made of."""
        ...

    async def pending_approvals_summary(self) -> tuple[int, float]:
        """How many approval requests wait for a decision, and the oldest one's age in seconds."""
        ...

    async def event_counts(self) -> dict[str, int]:
        """Webhook events by status, every status present (0 when none)."""
        ...

    async def sealed_samples(self) -> list[bytes]:
        """The newest value sealed with the service key of each kind kept (a connector's
        secret, a webhook's verification secret, a queued call's arguments): enough to
        tell whether the key opens what is stored. Empty when nothing is sealed."""
        ...

    async def heartbeat(self, instance: Instance) -> None:
        """Record that ``instance`` is alive (insert or replace its row)."""
        ...

    async def live_instances(self, since: datetime) -> list[Instance]:
        """Instances whose last heartbeat is at ``since`` or later."""
        ...

    @property
    def notifies(self) -> bool:
        """Whether :meth:`listen_for_changes` works here (PostgreSQL: yes; SQLite: no)."""
        ...

    async def listen_for_changes(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``on_change(topic)`` for each change announced by any writer.

        Topics: ``tokens`` (a token revoked or deleted), ``approvals`` (one
        decided, run, expired or deleted), ``catalog`` (the catalog version
        moved). Reports started once listening; runs until the connection
        is lost, which raises :class:`~agentws.errors.StoreUnavailableError`
        (changes made meanwhile are not announced: callers re-read).
        """
        ...

    async def group_tools(self, group_id: str) -> list[tuple[Connector, CachedTool]]:
        """Cached tools of the group's active connectors, by connector name, then tool name."""
        ...

    async def search_documents(
        self,
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> list[DocumentHit]:
        """Full-text search over the documents :meth:`group_documents` returns, best first.

        ``query`` is free text from a person or a model: it is split into
        words (letters and digits) and any of them matches; a document with
        more of the words ranks above one with fewer, and a document whose
        title is the query (ignoring case) ranks first. Nothing in ``query``
        is syntax, so no text raises; text without words finds nothing.
        ``limit`` is clamped to 1..50.

        ``libraries``: the group's libraries in the order they were attached,
        as :meth:`group_libraries` returns them, when the caller has them
        already (the tool catalog keeps them): their documents are searched
        without finding them through the group's attachments again.
        """
        ...

    def ingest_nowait(self, event: Event, answer: Callable[[outcome.Outcome[bool]], None]) -> None:
        """Queue a delivery's event for the next group commit of deliveries.

        Deliveries queued while a commit runs are stored together by the
        next one, which starts as soon as it ends: one durable commit for
        many requests. The event is stored only if its webhook exists and is
        active and no event of the webhook holds its ``dedup_key``: all
        checked in the transaction that stores it. Events are committed in
        the order they were queued.

        ``answer`` is called in trio's thread once the commit is durable:
        with True if the event was stored, False if not (then
        :meth:`not_ingested` says why), or with the store's error.

        Error handling:
            :class:`~agentws.errors.StoreUnavailableError`, at once, when the
            store is closing (nothing queued).
        """
        ...

    def capture_nowait(
        self,
        sample: WebhookSample,
        *,
        keep: int,
        answer: Callable[[outcome.Outcome[bool]], None],
    ) -> None:
        """Queue a capturing draft's sample for the next group commit of deliveries.

        Stored only if its webhook exists and is a draft that captures, checked
        in the transaction that stores it; then the webhook's samples beyond
        the newest ``keep`` are dropped. ``answer`` is called in trio's thread
        once both are durable: True if the sample was stored, False if not
        (the webhook is gone, active, or no longer captures), or the store's
        error.

        Error handling:
            :class:`~agentws.errors.StoreUnavailableError`, at once, when the
            store is closing.
        """
        ...

    async def not_ingested(self, event: Event, *, dedup_since: datetime) -> Ingested:
        """What became of an event :meth:`ingest_nowait` did not store.

        Its webhook ``gone`` (no longer exists) or ``inactive`` (a draft);
        or its ``dedup_key`` already held by an event of the webhook
        received since ``dedup_since``: a ``duplicate`` (same body hash) or
        a ``conflict`` (another body), with that first event's id. An older
        holder of the key lets go of it, and the event is stored after all
        (``accepted``).
        """
        ...

    async def delivery_generations(
        self, webhook_id: str, which: Literal["url", "secret"], current: int, since: datetime
    ) -> DeliveryGenerations:
        """The webhook's events received since ``since`` through generation ``current`` of
        its URL (``which="url"``) or secret, and through the one before."""
        ...

    async def ingest_events(self, events: list[Event], *, dedup_since: datetime) -> list[Ingested]:
        """Store deliveries with :meth:`ingest_nowait`; one answer per event, in order.

        An event not stored is answered as :meth:`not_ingested` says.
        Cancelled while waiting, the events may still be stored.
        """
        ...

    async def claim_events(
        self, *, owner: str, now: datetime, lease_expires_at: datetime, limit: int
    ) -> list[Event]:
        """Lease up to ``limit`` runnable events to ``owner``, fairly between webhooks.

        Runnable: queued and available by ``now``, or running on a lease that
        has expired. Each webhook gets at most its concurrency minus its
        events on live leases; with concurrency 1 only its oldest unfinished
        event. Each claimed event is ``running`` with ``attempts`` one higher.
        """
        ...

    async def webhooks_by_id(self, ids: Collection[str]) -> dict[str, Webhook]:
        """The webhooks with these ids, by id, in one read; ids not found are left out."""
        ...

    async def next_event_due(self, now: datetime) -> datetime | None:
        """When the next waiting event becomes available or the next lease expires."""
        ...

    async def finish_event(
        self,
        event_id: str,
        *,
        owner: str,
        status: EventStatus,
        now: datetime,
        error: str | None = None,
        message_id: str | None = None,
        available_at: datetime | None = None,
        give_back_attempt: bool = False,
        attempt: EventAttempt | None = None,
    ) -> bool:
        """End ``owner``'s lease: done, failed, or queued again (from ``available_at``).

        ``attempt``, the record of the run that ends, is stored in the same
        transaction (also when the lease was lost: it is what happened).
        False, and the event unchanged, if ``owner`` no longer holds the lease.
        Failing it counts one more failure of its webhook's streak (and may
        mark the streak's alert due, and pause the webhook); finishing it done
        ends the streak: in the same transaction (see
        :class:`~agentws.domain.models.FailureStreak`).
        """
        ...

    async def post_chat_message(self, message: ChatMessage) -> ChatMessage:
        """Store a message; the one already stored for its event, if there is one.

        Committed without a flush to disk, like the queue's bookkeeping: a
        power loss takes it back only together with the event's ``done``.
        """
        ...

    async def recent_events(
        self,
        workspace_id: str,
        *,
        limit: int,
        webhook_id: str | None = None,
        status: EventStatus | None = None,
    ) -> list[Event]:
        """A workspace's newest events first, optionally of one webhook or status."""
        ...

    async def event_page(self, query: EventQuery) -> EventPage:
        """A page of a workspace's events, newest first, filtered and searched by ``query``.

        A search finds only events already indexed (:meth:`index_events`); the
        page says how many are not (:attr:`EventPage.unindexed`).
        """
        ...

    async def index_events(self, *, limit: int, max_bytes: int) -> int:
        """Add up to ``limit`` stored events not yet in the search index to it, as many as
        ``max_bytes`` of their bodies allow (at least one); how many were taken.

        Committed without a flush to disk. Safe to run in several processes at
        once: no event is indexed twice.
        """
        ...

    async def unindexed_events(self) -> int:
        """How many stored events (of every workspace) are not yet in the search index."""
        ...

    async def channel_messages(
        self, workspace_id: str, channel: str, *, limit: int, after: ChatMessage | None = None
    ) -> list[ChatMessage]:
        """A channel's messages, oldest first: the newest ``limit``, or those after ``after``."""
        ...

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
        self,
        streak_id: str,
        kind: NoticeKind,
        *,
        owner: str,
        now: datetime,
        message_id: str | None,
        error: str | None,
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

    async def replay_candidates(
        self, webhook_id: str, selection: ReplaySelection, *, limit: int
    ) -> list[ReplayCandidate]:
        """The webhook's failed events ``selection`` takes that nothing replays yet, oldest
        first, at most ``limit``."""
        ...

    async def count_replay_candidates(self, webhook_id: str, selection: ReplaySelection) -> int:
        """How many events :meth:`replay_candidates` would list without a limit."""
        ...

    async def last_run_prompts(self, event_ids: Collection[str]) -> dict[str, str]:
        """The prompt each event's last recorded attempt ran with (events never run: absent)."""
        ...

    async def queue_replays(self, webhook_id: str, orders: list[ReplayOrder]) -> list[str]:
        """Queue the replays of ``orders`` (all of one webhook), each only if its original has
        none yet, in one transaction serialized per webhook; the ids of those queued."""

    def log_deliveries_nowait(
        self, deliveries: Sequence[Delivery], answer: Callable[[outcome.Outcome[int]], None]
    ) -> None:
        """Queue rows of the delivery log (1 to 500) for the next group commit of deliveries.

        All the rows are one statement, which joins the group commit of
        deliveries (:meth:`ingest_nowait`): no commit of its own. Each row is
        written only while its webhook exists. ``answer`` is called in
        trio's thread after the commit with how many rows were written, or
        the store's error.

        Error handling:
            :class:`~agentws.errors.StoreUnavailableError`, at once, when the
            store is closing (nothing queued); ValueError for no rows or too many.
        """
        ...

    async def webhook_deliveries(
        self,
        webhook_id: str,
        *,
        limit: int,
        status: StatusFilter | None = None,
        reason: str | None = None,
        since: datetime | None = None,
    ) -> list[Delivery]:
        """A webhook's delivery log, newest first, at most ``limit`` entries: its events that
        came through its URL (202 ``queued``, with no id) and its rows, received since
        ``since``; ``accepted`` (2xx), ``refused``, one status, or one reason only."""
        ...

    async def trim_webhook_deliveries(
        self, webhook_id: str, *, keep: int, counted_through: int | None = None
    ) -> int:
        """Delete a webhook's rows (not its events) but the newest ``keep``; how many.

        Rows after row ``counted_through`` (the overview's rollup has not counted
        them yet) are kept past the bound, until a later trim.
        """
        ...

    async def expire_webhook_deliveries(self, before: datetime) -> int:
        """Delete every log row received before ``before``; how many were deleted."""
        ...

    async def webhooks_over_delivery_bound(self, keep: int) -> list[str]:
        """The ids of the webhooks with more than ``keep`` log rows."""
        ...

    async def source_buckets(
        self, start_minute: int, end_minute: int, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        """The overview's counters (events received, done, failed; latency bins; tool calls;
        model tokens) of every workspace, or one, for the minutes ``start_minute`` to
        ``end_minute`` (minutes since the epoch, the end excluded), counted from the tables
        they happen in: one-minute buckets, none for a figure that is 0."""
        ...

    async def refusal_buckets(
        self,
        *,
        after_id: int,
        workspace_id: str | None = None,
        received_before: datetime | None = None,
    ) -> tuple[list[Bucket], int]:
        """Refused deliveries by reason and minute, from the delivery log's rows after row
        ``after_id``, in id order, up to the first received at ``received_before`` or later
        (when given); and the last row id taken."""
        ...

    async def oldest_rollup_source(self) -> datetime | None:
        """When the oldest row the overview counts was written (an event received, an
        audit entry); None when there is none. Two index reads."""
        ...

    async def approval_buckets(
        self, now: datetime, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        """Samples at ``now`` of the approval queue's depth and oldest waiting age (seconds),
        for every workspace (0 where nothing waits), or one."""
        ...

    async def rollup_mark(self) -> RollupMark | None:
        """How far the rollup of closed minutes has come; None before its first roll."""
        ...

    async def roll_up(
        self,
        counted: Sequence[Bucket],
        added: Sequence[Bucket],
        *,
        mark: RollupMark | None,
        to: RollupMark,
    ) -> bool:
        """Move the rollup's mark from ``mark`` (as read) to ``to``, writing ``counted``
        (whole minutes, replacing what is there) and adding ``added`` (refusals) to their
        buckets, and rolling the hours the move completes; all in one transaction, and only
        if the mark is still ``mark``: False, and nothing written, if another moved it."""
        ...

    async def save_samples(self, buckets: Sequence[Bucket]) -> None:
        """Write gauge samples, each replacing its instance's sample of that minute."""
        ...

    async def rollup_steps(
        self,
        workspace_id: str,
        *,
        span_m: int,
        start_minute: int,
        end_minute: int,
        origin_minute: int,
        step_m: int,
    ) -> list[tuple[int, str, str, float]]:
        """A workspace's buckets of span ``span_m`` from ``start_minute`` to ``end_minute``
        grouped into steps of ``step_m`` minutes counted from ``origin_minute`` (at or
        before the start): ``(step, series, key, value)`` per step, series and key, the
        step counted from 0 at the origin, the value the sum (a gauge's: the largest).
        Minute sessions samples are left out (see :meth:`session_samples`)."""
        ...

    async def session_samples(
        self, workspace_id: str, *, start_minute: int, end_minute: int
    ) -> list[Bucket]:
        """A workspace's sessions samples, per minute, transport and instance."""
        ...

    async def restart_rollups(self) -> None:
        """Forget the rollup's mark and every counted bucket (gauge samples stay): the next
        roll counts the whole retention period again from the sources."""
        ...

    async def forget_rollups(self, before_minute: int) -> int:
        """Delete every bucket that starts before ``before_minute``; how many."""
        ...
