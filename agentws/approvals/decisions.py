"""An admin's decisions on queued calls: approve, deny, retry a failed one, expire.

Deciding is a claim first: one conditional update moves the request from
``pending`` to ``approved`` (or ``denied``), so of any number of concurrent
decisions (two admins, two processes, two instances) exactly one wins; the
others are told it was decided already.

A decision is only recorded here, wherever it is made (the CLI, the admin
API, the dashboard, any instance). The call itself is run by the service,
with its own settings (:mod:`~agentws.approvals.runs`), which the change
feed or its poll wakes. A failed call can be retried by an admin: it goes
back to ``approved`` (conditionally, so concurrent retries run it once) and
a service runs it again.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentws.common.audit import record
from agentws.core.errors import ConflictError
from agentws.domain.models import Approval, ApprovalStatus, Group
from agentws.domain.rules import utcnow
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import current_status, find_approval

__all__ = ["approve", "audit_approval", "deny", "expire_due", "retry"]

# Reasons are for people; a page of text is plenty.
_MAX_REASON = 2000


class _DecidingStore(RecordStore, ApprovalDecisionStore, Protocol):
    """The areas of the store that deciding (approving, denying, expiring) uses."""


class _RetryingStore(RecordStore, ApprovalRunStore, Protocol):
    """The areas of the store that a retry uses."""


def _reason(reason: str | None) -> str | None:
    reason = (reason or "").strip()
    return reason[:_MAX_REASON] or None


def _already(approval: Approval) -> ConflictError:
    status = current_status(approval)
    by = f" by {approval.decided_by}" if approval.decided_by else ""
    if status is ApprovalStatus.EXPIRED:
        return ConflictError(f"approval {approval.id} has expired; the caller must ask again")
    return ConflictError(f"approval {approval.id} is already {status.value}{by}")


async def _claim(
    store: _DecidingStore, approval_id: str, status: ApprovalStatus, actor: str, reason: str | None
) -> Approval:
    approval = await find_approval(store, approval_id)
    if current_status(approval) is not ApprovalStatus.PENDING:
        raise _already(approval)
    claimed = await store.decide_approval(
        approval_id, status=status, decided_by=actor, reason=_reason(reason), now=utcnow()
    )
    if claimed is None:  # someone else decided it (or it expired) just now
        raise _already(await find_approval(store, approval_id))
    return claimed


async def deny(
    store: _DecidingStore, approval_id: str, *, actor: str, reason: str | None
) -> Approval:
    """Deny a pending request; it never runs.

    Error handling:
        NotFoundError for an unknown id; ConflictError if it was decided or
        has expired.
    """
    return await _decide(store, approval_id, ApprovalStatus.DENIED, actor, reason)


async def _decide(
    store: _DecidingStore, approval_id: str, status: ApprovalStatus, actor: str, reason: str | None
) -> Approval:
    """Claim the pending request for ``status``, audited as approval.approve or approval.deny."""
    decided = await _claim(store, approval_id, status, actor, reason)
    group = await store.get(Group, decided.group_id)
    action = "approval.approve" if status is ApprovalStatus.APPROVED else "approval.deny"
    await audit_approval(store, group, actor, action, decided, reason=decided.reason)
    return decided


async def audit_approval(
    store: RecordStore,
    group: Group | None,
    actor: str,
    action: str,
    approval: Approval,
    **detail: Any,
) -> None:
    """Record ``actor`` did ``action`` to ``approval`` (a decision, a run, an
    expiry): every such entry names the tool, who asked and the arguments' hash."""
    await record(
        store,
        group.workspace_id if group else None,
        actor,
        action,
        approval.id,
        tool=approval.tool_name,
        requested_by=approval.requested_by,
        arguments_hash=approval.arguments_hash,
        **detail,
    )


async def approve(
    store: _DecidingStore, approval_id: str, *, actor: str, reason: str | None
) -> Approval:
    """Approve a pending request: recorded, for a running service to run it, once.

    Returns:
        The request, ``approved``: see
        :func:`~agentws.approvals.runs.await_outcome` for its outcome.

    Error handling:
        NotFoundError for an unknown id; ConflictError if it was decided or
        has expired.
    """
    return await _decide(store, approval_id, ApprovalStatus.APPROVED, actor, reason)


async def retry(
    store: _RetryingStore, approval_id: str, *, actor: str, reason: str | None
) -> Approval:
    """Put a failed call back to ``approved``: a running service runs it again, once.

    What the call is checked against when it runs (the tool's definition,
    the token, the permission, the arguments' hash) is checked again.

    Error handling:
        NotFoundError for an unknown id; ConflictError unless it is failed
        (another retry won, or it never failed).
    """
    found = await find_approval(store, approval_id)
    retried = await store.retry_approval(approval_id)
    if retried is None:
        status = current_status(await find_approval(store, approval_id))
        raise ConflictError(
            f"approval {found.id} is {status.value}: only a failed call can be retried"
        )
    group = await store.find(Group, id=retried.group_id)
    await audit_approval(
        store,
        group,
        actor,
        "approval.retry",
        retried,
        reason=_reason(reason),
        previous_error=found.error,
    )
    return retried


async def expire_due(store: _DecidingStore, *, actor: str) -> list[Approval]:
    """Expire every pending request whose time is up; the ones expired now."""
    expired = await store.expire_approvals(utcnow())
    for approval in expired:
        group = await store.find(Group, id=approval.group_id)
        await audit_approval(store, group, actor, "approval.expire", approval)
    return expired
