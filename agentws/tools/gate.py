"""The permission gate: the one way a non-system caller's tool call runs.

Every caller path (the MCP endpoint now, the webhook agent later) hands its
calls to :meth:`ToolGate.call`; nothing else runs a tool for them. The gate
decides with :func:`agentws.domain.permissions.decide` from the tool's
capability and permission and the caller's scope, then:

- **run**: checks the arguments against the tool's schema (and a native
  action's path arguments against its API's grammar) and runs it;
- **queue**: stores an approval request bound to the SHA-256 of the tool
  name and the exact arguments, and answers (not as an error) that the
  call waits for an admin, with the approval id (or, over the queue's
  limits on argument size and waiting calls, a tool error naming the limit);
- **confirm**: asks the door's :class:`Confirmer` (MCP: elicitation, or a
  one-time confirm token) and runs only on an explicit yes;
- **deny**: raises :class:`~agentws.core.errors.PermissionDeniedError`.

Each call leaves one audit entry: who, which tool, the arguments' hash (and
the arguments with values the schema marks secret redacted, when short),
the decision and the outcome (and, for a call that ran, how long it took).
There is no bypass for MCP callers: the pre-authorization an admin gives
a webhook's runs at configuration time (write tools named with
``--allow-tool``, bound to their definitions) is not a thing a token can
carry.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import attrs
import mcp_types as types

from agentws.common.audit import AuditSink
from agentws.core.errors import (
    ConfigError,
    OverCapacityError,
    PermissionDeniedError,
    ValidationError,
)
from agentws.core.metrics import TOOL_CALLS
from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import Approval, AuditEntry, Capability
from agentws.domain.permissions import Decision, decide
from agentws.domain.tool_results import tool_error
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_approvals import ApprovalStore
from agentws.tools.approval_queue import QueueLimits, queue_call, queued_result
from agentws.tools.caller import ToolCaller
from agentws.tools.caller_channel import CallerChannel
from agentws.tools.execution import ToolRunner
from agentws.tools.spec import ToolSpec
from agentws.tools.validation import ArgumentChecker

__all__ = ["ConfirmAnswer", "Confirmer", "GateResult", "ToolGate", "denied_message"]

log = logging.getLogger("agentws.tools")

# Redacted arguments longer than this (as JSON) are audited by hash and size only.
_MAX_AUDITED_ARGUMENTS = 4096


@attrs.frozen
class ConfirmAnswer:
    """What a caller said to "run this destructive call?"."""

    confirmed: bool
    #: When not confirmed: what the caller gets instead (a question, a refusal).
    #: A question may be an ``input_required`` result (2026-07-28), the client
    #: retrying the call with the answer.
    result: types.CallToolResult | types.InputRequiredResult | None = None
    #: For the audit log: ``confirmed``, ``asked``, ``declined``, ``refused``...
    outcome: str = "confirmed"


class Confirmer(Protocol):
    """How a door asks its caller to confirm a call, synchronously."""

    async def confirm(
        self, tool: ToolSpec, arguments: dict[str, Any], arguments_hash: str
    ) -> ConfirmAnswer: ...


@attrs.frozen
class GateResult:
    """The call's result, and the approval request if it was queued."""

    result: types.CallToolResult | types.InputRequiredResult
    approval: Approval | None = None


@attrs.define(eq=False)
class ToolGate:
    """Decides, runs, queues or asks, and audits every call."""

    store: ApprovalStore
    settings: Settings
    runner: ToolRunner
    audit: AuditSink
    #: The service key: seals queued calls' secret arguments (not without one).
    keys: Keys
    #: Checks calls' arguments within bounds (costly schemas off the event loop).
    checker: ArgumentChecker

    async def call(
        self,
        caller: ToolCaller,
        tool: ToolSpec,
        arguments: dict[str, Any] | CallArguments,
        *,
        confirmer: Confirmer,
        channel: CallerChannel | None = None,
    ) -> GateResult:
        """Pass one call through the gate.

        Args:
            caller: who calls; never a system actor.
            tool: the tool, as the group's catalog has it (with its permission).
            arguments: the call's arguments, nothing of the door's mixed in
                (or them already hashed and redacted, when the caller needs
                the redaction too).
            confirmer: how to ask this caller for a confirmation.
            channel: how the running call reaches back to this caller
                (a remote's progress, logs and requests); None: it does not.

        Returns:
            The tool's result, or the queued or confirmation result.

        Error handling:
            :class:`~agentws.core.errors.PermissionDeniedError` for a denied call
            (audited; nothing runs). Invalid arguments and upstream failures
            are tool error results, not exceptions.
        """
        # Hashed, redacted and measured once for the queue, the audit and the caller.
        prepared = (
            arguments
            if isinstance(arguments, CallArguments)
            else CallArguments.of(tool.name, arguments, tool.input_schema)
        )
        arguments = prepared.whole
        preauthorized = caller.preauthorizes(tool.name, tool.definition_hash)
        decision = decide(
            tool.capability, tool.permission, caller.scope, preauthorized=preauthorized
        )
        if decision is Decision.DENY:
            await self._audit(caller, tool, prepared, decision, "denied")
            raise PermissionDeniedError(denied_message(tool, caller))
        # Before queueing or confirming: a call the action would refuse is
        # never put to an admin or a caller.
        problem = await self.checker.problem(tool, prepared)
        if problem is not None:
            await self._audit(caller, tool, prepared, decision, "invalid_arguments")
            return GateResult(tool_error(f"Invalid arguments for {tool.name}: {problem}"))
        if decision is Decision.QUEUE:
            try:
                approval = await queue_call(
                    self.store,
                    caller,
                    tool,
                    prepared,
                    box=self.keys.optional(),
                    limits=QueueLimits.from_settings(self.settings),
                )
            except (ConfigError, ValidationError, OverCapacityError) as exc:
                await self._audit(
                    caller, tool, prepared, decision, "not_queued", reason=exc.message
                )
                return GateResult(tool_error(f"{tool.name} was not queued: {exc.message}"))
            await self._audit(caller, tool, prepared, decision, "queued", approval_id=approval.id)
            return GateResult(queued_result(approval), approval)
        outcome = "ran"
        if decision is Decision.CONFIRM:
            answer = await confirmer.confirm(tool, arguments, prepared.hash)
            if not answer.confirmed:
                await self._audit(caller, tool, prepared, decision, answer.outcome)
                return GateResult(
                    answer.result or tool_error(f"{tool.name} did not run: not confirmed")
                )
            outcome = "confirmed_and_ran"
        started = time.monotonic()
        result = await self.runner.run(
            tool, arguments, group=caller.group, token_id=caller.token_id, channel=channel
        )
        # How long the tool took (the connectors page's call latency).
        extra: dict[str, Any] = {"duration_ms": round((time.monotonic() - started) * 1000)}
        if isinstance(result, types.InputRequiredResult):
            # A remote's questions passed back to the caller: this round ends here.
            extra["input_required"] = sorted(result.input_requests or {})
        else:
            extra["error"] = bool(result.is_error)
        if preauthorized and tool.capability is Capability.WRITE:
            extra["preauthorized"] = True
        await self._audit(caller, tool, prepared, decision, outcome, **extra)
        return GateResult(result)

    async def _audit(
        self,
        caller: ToolCaller,
        tool: ToolSpec,
        arguments: CallArguments,
        decision: Decision,
        outcome: str,
        **extra: Any,
    ) -> None:
        TOOL_CALLS.labels(tool.capability.value, decision.value).inc()
        detail: dict[str, Any] = {
            "group_id": caller.group.id,
            "capability": tool.capability.value,
            "permission": tool.permission.value,
            "scope": caller.scope.value,
            "decision": decision.value,
            "outcome": outcome,
            "arguments_hash": arguments.hash,
            **extra,
        }
        if caller.session_id is not None:
            detail["session_id"] = caller.session_id
        if caller.event_id is not None:
            detail["event_id"] = caller.event_id
        if caller.oauth_client is not None:
            detail["oauth_client"] = caller.oauth_client
        size = arguments.shown_json_chars
        if size <= _MAX_AUDITED_ARGUMENTS:
            detail["arguments"] = arguments.shown
        else:
            detail["arguments_bytes"] = size
        await self.audit.append(
            AuditEntry(
                workspace_id=caller.group.workspace_id,
                actor=caller.actor,
                action="tool.call",
                target=tool.name,
                detail=detail,
            )
        )


def denied_message(tool: ToolSpec, caller: ToolCaller) -> str:
    """What a denied caller is told (a try of a prompt tells the model the same)."""
    if not tool.capability.within(caller.scope):
        whose = "this token's" if caller.token_id is not None else "an automated run's"
        return (
            f"permission denied: {tool.name} is a {tool.capability.value} tool and "
            f"{whose} scope is {caller.scope.value}"
        )
    return f"permission denied: an admin has set {tool.name} to deny for this group"
