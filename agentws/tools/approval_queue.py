"""Queueing a call for an admin's approval, and reading where it stands.

A queued call keeps what an admin needs to decide and what running it
needs: the tool, the arguments as an admin may read them (values the
tool's schema marks secret are redacted), the whole arguments sealed with
the service key when some are secret, their SHA-256 (what is approved is
exactly that call), who asked, from which session, and when it expires.

The queue has limits (:class:`QueueLimits`), so that one caller cannot
fill it: a call's arguments are capped in size, and so are the calls one
requester (an MCP token, or one webhook's runs) may have waiting. Lists of
the queue carry a preview of each call's arguments, a page at a time
(:mod:`agentws.domain.approval_lists`); the whole arguments are read only
for one call.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any, Protocol

import attrs
import mcp_types as types

from agentws.core.errors import ConfigError, OverCapacityError, ValidationError
from agentws.domain.approval_lists import ApprovalPage, ApprovalQuery, Cursor
from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import Approval, ApprovalOutcome, ApprovalStatus
from agentws.domain.rules import utcnow
from agentws.domain.tool_results import tool_error, tool_text
from agentws.settings.config import Settings
from agentws.settings.secret_box import SecretBox
from agentws.store.sql_approvals import ApprovalStore
from agentws.store.sql_records import RecordStore, find_listed
from agentws.tools.caller import ToolCaller
from agentws.tools.spec import ToolSpec

__all__ = [
    "QueueLimits",
    "approval_outcome",
    "approval_url",
    "count_approvals",
    "current_status",
    "find_approval",
    "list_approvals",
    "outcome_data",
    "outcome_text",
    "queue_call",
    "queued_result",
    "stored_arguments",
]


class _Store(RecordStore, ApprovalStore, Protocol):
    """The areas of the store this module uses."""


async def queue_call(
    store: ApprovalStore,
    caller: ToolCaller,
    tool: ToolSpec,
    arguments: CallArguments,
    *,
    box: SecretBox | None,
    limits: QueueLimits,
) -> Approval:
    """Store a pending approval for this exact call, within the queue's limits.

    ``arguments`` carry their redaction, hash and size, computed once for the call.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` when the arguments are
        larger than ``limits.max_argument_bytes``;
        :class:`~agentws.core.errors.OverCapacityError` when the caller (its
        token, or its webhook's runs) already has ``limits.max_pending``
        calls waiting; :class:`~agentws.core.errors.ConfigError` when some
        arguments are secret and there is no service key to seal them with
        (they are never stored in clear). Each message names the limit.
    """
    size = arguments.whole_bytes
    if size > limits.max_argument_bytes:
        raise ValidationError(
            f"its arguments are {size:,} bytes as JSON, over the limit of "
            f"{limits.max_argument_bytes:,} bytes for a call queued for approval "
            "(AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES): send smaller arguments, such as a "
            "reference to the content instead of the content"
        )
    sealed: bytes | None = None
    if arguments.has_secrets:
        if box is None:
            raise ConfigError(
                "this call has secret arguments and no secret key is configured to keep them "
                "encrypted until an admin decides: set AGENTWS_SECRET_KEY or run `agentws init`"
            )
        sealed = box.seal(arguments.sealable())
    now = utcnow()
    approval = Approval(
        group_id=caller.group.id,
        token_id=caller.token_id,
        session_id=caller.session_id,
        event_id=caller.event_id,
        requested_by=caller.actor,
        tool_name=tool.name,
        capability=tool.capability,
        definition_hash=tool.definition_hash,
        arguments=arguments.shown,
        arguments_bytes=arguments.shown_bytes,
        sealed_arguments=sealed,
        arguments_hash=arguments.hash,
        created_at=now,
        expires_at=now + timedelta(seconds=limits.ttl_s),
    )
    if not await store.queue_approval(approval, max_pending=limits.max_pending, now=now):
        who = "this token already has" if caller.token_id else "this webhook's runs already have"
        raise OverCapacityError(
            f"{who} {limits.max_pending} calls waiting for an admin's decision, "
            "the limit (AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN): wait until an admin decides "
            "or they expire"
        )
    return approval


@attrs.frozen
class QueueLimits:
    """How long a queued call waits, how large it may be, and how many one caller may queue."""

    ttl_s: float
    #: Size of a call's arguments as compact JSON, in bytes.
    max_argument_bytes: int
    #: Calls one token (or one webhook's runs) may have waiting at once.
    max_pending: int

    @classmethod
    def from_settings(cls, settings: Settings) -> QueueLimits:
        return cls(
            ttl_s=settings.approval_ttl_s,
            max_argument_bytes=settings.approval_max_argument_bytes,
            max_pending=settings.approval_max_pending_per_token,
        )


def stored_arguments(approval: Approval, box: SecretBox | None) -> dict[str, Any]:
    """The whole arguments of a queued call, unsealed when they were sealed.

    Error handling:
        :class:`~agentws.core.errors.ConfigError` if they are sealed and there is
        no key; :class:`~agentws.core.errors.StoreError` if the key changed.
    """
    if approval.sealed_arguments is None:
        return approval.arguments
    if box is None:
        raise ConfigError("this call's arguments are encrypted and no secret key is configured")
    arguments: dict[str, Any] = json.loads(box.open(approval.sealed_arguments))
    return arguments


def approval_url(base_url: str, approval_id: str) -> str:
    """Where an admin decides ``approval_id`` in the dashboard."""
    return f"{base_url.rstrip('/')}/dashboard/approvals/{approval_id}"


#: Where a queued call's outcome is read (``resources/read``) and announced
#: (``notifications/resources/updated`` to a client listening for the URI).
APPROVAL_URI_PREFIX = "agentws://approvals/"
_APPROVAL_URI = re.compile(re.escape(APPROVAL_URI_PREFIX) + r"([A-Za-z0-9_-]+)")


def approval_uri(approval_id: str) -> str:
    return f"{APPROVAL_URI_PREFIX}{approval_id}"


def approval_id_of(uri: str) -> str | None:
    """The approval a URI names, if it is an approval's URI."""
    match = _APPROVAL_URI.fullmatch(uri)
    return match[1] if match else None


def queued_result(approval: Approval) -> types.CallToolResult:
    """What the caller gets back for a queued call: not an error, with the approval id."""
    text = (
        f"Queued for admin approval: {approval.tool_name} has not run yet. It runs once, with "
        f"these exact arguments, when an admin approves it. Approval id: {approval.id} "
        f"(expires {approval.expires_at.isoformat(timespec='seconds')}). "
    )
    if approval.event_id is not None:
        # A webhook's run: it ends before anyone decides; the channel hears the outcome.
        text += "The channel is told the outcome when an admin decides; say it is waiting."
    else:
        text += (
            "This session is told the outcome if it is still open; "
            f"get_approval(approval_id={approval.id!r}) reads it at any time."
        )
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if approval.event_id is None:
        # A client of the stateless revision listens for this URI to hear the outcome.
        content.append(
            types.ResourceLink(
                type="resource_link",
                uri=approval_uri(approval.id),
                name=f"approval {approval.id}",
                description=f"Where the queued {approval.tool_name} call stands",
                mime_type="application/json",
            )
        )
    return types.CallToolResult(
        content=content,
        structured_content={
            "status": "queued",
            "approval_id": approval.id,
            "uri": approval_uri(approval.id),
            "tool": approval.tool_name,
            "expires_at": approval.expires_at.isoformat(),
        },
    )


def current_status(approval: Approval | ApprovalOutcome) -> ApprovalStatus:
    """Its status, counting a pending approval past its expiry as expired (before the sweep),
    and an approved one that an instance holds the lease of as running."""
    if approval.status is ApprovalStatus.PENDING and approval.expires_at <= utcnow():
        return ApprovalStatus.EXPIRED
    if approval.status is ApprovalStatus.APPROVED and approval.lease_owner is not None:
        return ApprovalStatus.RUNNING
    return approval.status


def outcome_data(approval: Approval | ApprovalOutcome) -> dict[str, Any]:
    """Where a queued call stands, as JSON: for ``get_approval`` and session notifications."""
    data: dict[str, Any] = {
        "approval_id": approval.id,
        "tool": approval.tool_name,
        "status": current_status(approval).value,
        "requested_at": approval.created_at.isoformat(),
        "expires_at": approval.expires_at.isoformat(),
    }
    if approval.decided_at is not None:
        data["decided_at"] = approval.decided_at.isoformat()
    if approval.reason:
        data["reason"] = approval.reason
    if approval.result is not None:
        data["result"] = approval.result
    if approval.error:
        data["error"] = approval.error
    return data


_STATUS_TEXT = {
    ApprovalStatus.PENDING: "is waiting for an admin's decision",
    ApprovalStatus.APPROVED: "was approved and waits for the service to run it",
    ApprovalStatus.RUNNING: "was approved and is running",
    ApprovalStatus.EXECUTED: "was approved and ran",
    ApprovalStatus.FAILED: "was approved but failed",
    ApprovalStatus.DENIED: "was denied by an admin; it did not run",
    ApprovalStatus.EXPIRED: "expired before an admin decided; it did not run",
}


def outcome_text(approval: Approval) -> str:
    """One paragraph a person or a model can read."""
    text = f"{approval.tool_name} ({approval.id}) {_STATUS_TEXT[current_status(approval)]}."
    if approval.reason:
        text += f" Reason: {approval.reason}"
    if approval.error:
        text += f" Error: {approval.error}"
    if approval.result is not None:
        parts = [
            c.get("text", "") for c in approval.result.get("content", []) if c.get("type") == "text"
        ]
        if parts:
            text += "\nResult:\n" + "\n".join(parts)
    return text


async def approval_outcome(
    store: RecordStore, token_id: str | None, approval_id: str
) -> types.CallToolResult:
    """``get_approval``: the outcome of a call this token queued; others' do not exist for it."""
    approval = await store.find(Approval, id=approval_id)
    if approval is None or token_id is None or approval.token_id != token_id:
        return tool_error(
            f"No approval {approval_id!r} for this caller: use the id a queued call returned."
        )
    return tool_text(outcome_text(approval), outcome_data(approval))


async def find_approval(store: RecordStore, approval_id: str) -> Approval:
    """The approval with this id; NotFoundError saying where to look."""
    return await find_listed(store, Approval, id=approval_id)


async def list_approvals(
    store: _Store,
    *,
    workspace_slug: str | None,
    statuses: frozenset[ApprovalStatus] | None,
    limit: int,
    cursor: str | None = None,
    newest_first: bool = False,
) -> ApprovalPage:
    """One page of queued calls as summaries (argument previews, never whole arguments).

    Args:
        statuses: as a person sees them (a pending call past its time is
            expired); None lists every status.
        limit: rows of the page, 1 to :data:`~agentws.domain.approval_lists.MAX_PAGE`.
        cursor: a ``next_cursor`` or ``previous_cursor`` of a page of the same list.
        newest_first: a history's order instead of a queue's (oldest first).

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for a bad limit or cursor;
        NotFoundError for an unknown workspace.
    """
    workspace = await store.workspace_by_slug(workspace_slug) if workspace_slug else None
    query = ApprovalQuery(
        statuses=statuses,
        workspace_id=workspace.id if workspace else None,
        newest_first=newest_first,
        limit=limit,
        cursor=Cursor.decode(cursor) if cursor else None,
    )
    return await store.approval_page(query, now=utcnow())


async def count_approvals(
    store: _Store, *, workspace_slug: str | None, statuses: frozenset[ApprovalStatus] | None
) -> int:
    """How many queued calls :func:`list_approvals` lists over all its pages."""
    workspace = await store.workspace_by_slug(workspace_slug) if workspace_slug else None
    query = ApprovalQuery(statuses=statuses, workspace_id=workspace.id if workspace else None)
    return await store.count_approvals(query, now=utcnow())
