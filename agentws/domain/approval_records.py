"""Calls held for a person: approvals and their states, one-time confirm tokens, the hash
binding either to one exact call.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Any

import attrs

from agentws.domain.previews import json_bytes, json_preview
from agentws.domain.record_fields import id_field, now_field
from agentws.domain.tool_records import Capability

__all__ = [
    "Approval",
    "ApprovalOutcome",
    "ApprovalOutcomes",
    "ApprovalStatus",
    "ConfirmToken",
    "arguments_hash",
]


class ApprovalStatus(StrEnum):
    """Where a queued call stands::

    pending --approve--> approved --a service claims it--> (running) --> executed | failed
    pending --deny-----> denied                          failed --retry--> approved
    pending --TTL------> expired

    ``running`` is never stored: it is an approved call whose run an
    instance holds a lease on (as ``expired`` is, for a person, a pending
    one past its time before the sweep marks it).
    """

    PENDING = "pending"
    APPROVED = "approved"  # an admin approved it; it waits for a service to run it
    RUNNING = "running"  # approved, and an instance is running it (shown, never stored)
    EXECUTED = "executed"  # it ran and the tool returned a result
    FAILED = "failed"  # it ran and failed, or could not be run
    DENIED = "denied"
    EXPIRED = "expired"

    @property
    def decided(self) -> bool:
        return self is not ApprovalStatus.PENDING

    @property
    def finished(self) -> bool:
        """Whether nothing more will happen to it."""
        return self not in (ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


def arguments_hash(tool_name: str, arguments: dict[str, Any]) -> str:
    """SHA-256 binding an approval or confirmation to one exact call."""
    canonical = json.dumps([tool_name, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@attrs.frozen(kw_only=True)
class Approval:
    """A call waiting for (or decided by) an admin; runs at most once, if approved."""

    id: str = id_field("apr")
    group_id: str
    #: The MCP token that asked (None once the token is deleted, or for other callers).
    token_id: str | None = None
    #: The MCP session that asked, told of the outcome while it is open.
    session_id: str | None = None
    #: Who asked, as the audit log names them (``mcp:tok_…``).
    requested_by: str
    tool_name: str
    capability: Capability
    #: The tool's definition when the call was queued: a changed tool does not run.
    definition_hash: str
    #: The arguments as an admin reads them: values the tool's schema marks secret redacted.
    arguments: dict[str, Any] = attrs.field(factory=dict)
    #: The whole arguments, sealed with the service key, when some are secret.
    sealed_arguments: bytes | None = attrs.field(default=None, repr=False)
    #: SHA-256 of the tool name and the whole arguments: what was approved.
    arguments_hash: str
    status: ApprovalStatus = ApprovalStatus.PENDING
    #: The approver's or denier's reason.
    reason: str | None = None
    decided_by: str | None = None
    #: The tool's result (an MCP ``CallToolResult`` as JSON) once it ran.
    result: dict[str, Any] | None = None
    #: Why it failed, when it did.
    error: str | None = None
    created_at: datetime = now_field()
    expires_at: datetime
    decided_at: datetime | None = None
    finished_at: datetime | None = None
    #: The webhook event whose run queued it: its channel hears the outcome.
    event_id: str | None = None
    #: When the outcome's report to the event's channel was taken (None: not yet).
    reported_at: datetime | None = None
    #: The instance running (or that ran) the approved call; None: no service took it yet.
    lease_owner: str | None = None
    #: While it runs: when the owner's claim lapses unless renewed.
    lease_expires_at: datetime | None = None
    #: Runs begun (an admin may retry a failed call).
    attempts: int = 0

    #: The start of ``arguments`` as JSON, what lists show (the whole is on its own page).
    arguments_preview: str = attrs.field()
    #: Size of ``arguments`` as stored (compact JSON, UTF-8 bytes).
    arguments_bytes: int = attrs.field()

    @arguments_preview.default
    def _preview(self) -> str:
        return json_preview(self.arguments)

    @arguments_bytes.default
    def _size(self) -> int:
        return json_bytes(self.arguments)


@attrs.frozen(kw_only=True)
class ApprovalOutcome:
    """What a caller is told of a queued call whose outcome is settled: an
    :class:`Approval` without its arguments (which may be 256 KiB)."""

    id: str
    group_id: str
    token_id: str | None
    tool_name: str
    status: ApprovalStatus
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None = None
    reason: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    lease_owner: str | None = None


@attrs.frozen
class ApprovalOutcomes:
    """Where the queued calls asked about stand (``Store.approval_outcomes``)."""

    #: The ids asked about that exist (the others were deleted with their group).
    known: frozenset[str]
    #: Those settled (decided against, run, expired), oldest first.
    finished: tuple[ApprovalOutcome, ...]


@attrs.frozen(kw_only=True)
class ConfirmToken:
    """A one-time confirm token given for a destructive call, kept by its hash only.

    It confirms exactly one call: the same MCP bearer token, tool and
    arguments (their hash), once, before it expires, in whatever session
    and on whatever instance it comes back.
    """

    #: SHA-256 of the token.
    id: str
    #: The MCP bearer token it was given to.
    token_id: str
    tool_name: str
    arguments_hash: str
    created_at: datetime = now_field()
    expires_at: datetime
