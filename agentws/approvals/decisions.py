"""An admin's decisions on queued calls: approve (and run it, exactly once), deny, expire.

Approving is a claim first: one conditional update moves the request from
``pending`` to ``approved``, so of any number of concurrent approvals (two
admins, two processes, two instances) exactly one wins and runs the call;
the others are told it was decided already. The call then runs with the
arguments stored at queue time, checked against their hash, and only if the
tool is still the one the caller asked for (same definition) and is not
denied meanwhile. Its result, or its error, is recorded with the request.

If the process stops while the call runs, the request stays ``approved``
without an outcome: it is never run again on its own, because whether the
upstream acted cannot be known.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types

from agentws.approvals.queue import current_status, find_approval, stored_arguments
from agentws.audit import record
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    Capability,
    Group,
    McpToken,
    arguments_hash,
)
from agentws.domain.permissions import Decision, decide
from agentws.domain.rules import utcnow
from agentws.errors import AgentwsError, ConflictError
from agentws.secret_box import SecretBox
from agentws.store import Store
from agentws.tools.catalog import group_tool
from agentws.tools.execution import ToolRunner
from agentws.tools.spec import ToolSpec

__all__ = ["approve", "deny", "expire_due"]

log = logging.getLogger("agentws.approvals")

# Reasons are for people; a page of text is plenty.
_MAX_REASON = 2000


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
    store: Store, approval_id: str, status: ApprovalStatus, actor: str, reason: str | None
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


async def deny(store: Store, approval_id: str, *, actor: str, reason: str | None) -> Approval:
    """Deny a pending request; it never runs.

    Error handling:
        NotFoundError for an unknown id; ConflictError if it was decided or
        has expired.
    """
    denied = await _claim(store, approval_id, ApprovalStatus.DENIED, actor, reason)
    group = await store.get(Group, denied.group_id)
    await _audit(store, group, actor, "approval.deny", denied, reason=denied.reason)
    return denied


async def _audit(
    store: Store, group: Group | None, actor: str, action: str, approval: Approval, **detail: Any
) -> None:
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
    store: Store,
    approval_id: str,
    *,
    actor: str,
    reason: str | None,
    runner: ToolRunner,
    box: SecretBox | None,
) -> Approval:
    """Approve a pending request and run its call, once; the request with its outcome.

    Returns:
        The request, ``executed`` (with the tool's result) or ``failed``
        (with the error: the tool failed, changed, went away, was denied
        meanwhile, or the token that asked was revoked).

    Error handling:
        NotFoundError for an unknown id; ConflictError if it was decided or
        has expired (nothing runs). Cancellation while the call runs leaves
        it ``approved`` without an outcome.
    """
    approved = await _claim(store, approval_id, ApprovalStatus.APPROVED, actor, reason)
    group = await store.get(Group, approved.group_id)
    await _audit(store, group, actor, "approval.approve", approved, reason=approved.reason)
    result: types.CallToolResult | None = None
    try:
        problem, tool, arguments = await _why_not(store, approved, group, box)
        if tool is not None:
            result = await runner.run(tool, arguments, group=group, token_id=approved.token_id)
            if result.is_error:
                problem = _text(result) or "the tool reported an error"
    except AgentwsError as exc:
        problem = exc.message
    except Exception:
        log.exception("approval %s: running %s failed", approved.id, approved.tool_name)
        problem = "internal error while running the call; the server log has details"
    status = ApprovalStatus.FAILED if problem else ApprovalStatus.EXECUTED
    finished = await store.finish_approval(
        approved.id,
        status=status,
        result=_result_json(result),
        error=problem,
        now=utcnow(),
    )
    outcome = finished or await find_approval(store, approved.id)
    await _audit(
        store, group, actor, "approval.execute", approved, outcome=status.value, error=problem
    )
    return outcome


async def _why_not(
    store: Store, approval: Approval, group: Group, box: SecretBox | None
) -> tuple[str | None, ToolSpec | None, dict[str, Any]]:
    """Why the approved call must not run now, or the tool and arguments to run it with."""
    tool = await group_tool(store, group, approval.tool_name)
    if tool is None:
        return f"{approval.tool_name} is no longer one of this group's tools; nothing ran", None, {}
    if tool.definition_hash != approval.definition_hash:
        why = f"{approval.tool_name} has changed since the call was queued; nothing ran"
        return why + " (the caller must ask again)", None, {}
    scope = Capability.WRITE
    if approval.token_id is not None:
        token = await store.find(McpToken, id=approval.token_id)
        if token is None or token.revoked:
            return "the token that queued this call has been revoked; nothing ran", None, {}
        scope = token.scope
    if decide(tool.capability, tool.permission, scope) is Decision.DENY:
        why = f"permission denied: {tool.name} may no longer be called by this caller"
        return why, None, {}
    arguments = stored_arguments(approval, box)
    if arguments_hash(approval.tool_name, arguments) != approval.arguments_hash:
        return "the stored arguments do not match the approved call; nothing ran", None, {}
    return None, tool, arguments


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _result_json(result: types.CallToolResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    data: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


async def expire_due(store: Store, *, actor: str) -> list[Approval]:
    """Expire every pending request whose time is up; the ones expired now."""
    expired = await store.expire_approvals(utcnow())
    for approval in expired:
        group = await store.find(Group, id=approval.group_id)
        await _audit(store, group, actor, "approval.expire", approval)
    return expired
