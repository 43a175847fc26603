"""Try a prompt: the agent's run on a sample or a past event, with nothing posted or changed.

:class:`PromptTrials` runs the agent (:class:`~agentws.agent.runner.AgentRunner`,
its model, its group's tools) exactly as a webhook's run would, on a
captured sample or a past event of the webhook, with a candidate prompt,
and answers a :class:`~agentws.domain.dry_runs.DryRun`: the message it
would post, the model, and each tool call with what became of it. It posts
nothing, stores no event, queues no approval.

Its tool calls go through :class:`DryCalls` instead of the gate. It decides
each call as the gate would for the webhook's run
(:func:`agentws.domain.permissions.decide`, the run's scope, the webhook's
pre-authorized tools) and:

- a **read** tool runs for real, through the gate, as a caller whose scope
  is ``read`` (so the gate can do nothing but run it or deny it), audited as
  ``try:<webhook id>``;
- a **write** tool is not run: "would queue for approval" (or, when the
  live run would run it, pre-authorized or allowed, "would run");
- a **destructive** tool is not run: "would ask for confirmation" (which a
  webhook's run cannot give: the live run refuses it);
- a denied tool, invalid arguments: as the live run.

What the model reads back for a call that did not run is what the live run
would have given it (a queued call's answer without an approval id, the
refusal of a call nobody can confirm), so the message is the one the live
run would write.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import mcp_types as types
import trio

from agentws.agent.model import ModelError
from agentws.agent.runner import AgentRunner, NoConfirmation, RunLog, unconfirmed_result
from agentws.common.audit import record_webhook_action
from agentws.core.errors import UpstreamError, ValidationError
from agentws.domain.call_arguments import CallArguments
from agentws.domain.dry_runs import DryRun, TriedCall, TriedOutcome, TryRequest
from agentws.domain.models import Capability, Group, Permission
from agentws.domain.permissions import Decision, decide
from agentws.domain.tool_results import tool_error, tool_text
from agentws.tools.caller import ToolCaller
from agentws.tools.gate import ToolGate, denied_message
from agentws.tools.spec import ToolSpec

__all__ = ["DryCalls", "PromptTrials"]

# A candidate prompt may be no longer than a webhook's.
_MAX_PROMPT_CHARS = 20_000
# What became of a call that would ask a person to confirm it.
_UNCONFIRMABLE = (
    "needs a person's confirmation, which a webhook's run cannot give: the live run refuses it"
)


@attrs.define(eq=False)
class DryCalls:
    """A try's :class:`~agentws.agent.runner.CallPolicy`: reads run, nothing else does."""

    gate: ToolGate

    async def __call__(
        self,
        caller: ToolCaller,
        tool: ToolSpec,
        arguments: CallArguments,
        entry: dict[str, Any],
    ) -> types.CallToolResult:
        preauthorized = caller.preauthorizes(tool.name, tool.definition_hash)
        decision = decide(
            tool.capability, tool.permission, caller.scope, preauthorized=preauthorized
        )
        if decision is Decision.DENY:
            message = denied_message(tool, caller)
            if tool.capability is Capability.DESTRUCTIVE and tool.permission is not Permission.DENY:
                return _would(entry, TriedOutcome.WOULD_ASK, _UNCONFIRMABLE, tool_error(message))
            return _would(entry, TriedOutcome.DENIED, message, tool_error(message))
        problem = await self.gate.checker.problem(tool, arguments)
        if problem is not None:
            text = f"Invalid arguments for {tool.name}: {problem}"
            return _would(entry, TriedOutcome.INVALID_ARGUMENTS, text, tool_error(text))
        if decision is Decision.QUEUE:
            told = (
                f"Queued for admin approval: {tool.name} has not run yet. It runs once, with "
                "these exact arguments, when an admin approves it. The channel is told the "
                "outcome when an admin decides; say it is waiting."
            )
            detail = "the live run would queue it for an admin's approval; not queued"
            return _would(entry, TriedOutcome.WOULD_QUEUE, detail, tool_text(told))
        if decision is Decision.CONFIRM:
            return _would(entry, TriedOutcome.WOULD_ASK, _UNCONFIRMABLE, unconfirmed_result(tool))
        if tool.capability is not Capability.READ:
            why = "pre-authorized for this webhook" if preauthorized else "allowed for its group"
            detail = f"the live run would run it ({why}); a try runs no write tool"
            told = (
                f"{tool.name} was not run (this is a rehearsal of the run, in which only read "
                "tools run): write what you would say once it has run."
            )
            return _would(entry, TriedOutcome.WOULD_RUN, detail, tool_text(told))
        # A read tool runs for real, through the gate (its argument checks, its
        # audit), as a caller that may only read: the gate cannot queue or ask.
        reader = ToolCaller(
            actor="try:" + caller.actor.removeprefix("webhook:"),
            group=caller.group,
            scope=Capability.READ,
        )
        passed = await self.gate.call(
            reader,
            attrs.evolve(tool, permission=Permission.ALLOW),
            arguments,
            confirmer=NoConfirmation(),
        )
        result = passed.result
        if not isinstance(result, types.CallToolResult):
            result = tool_error(f"{tool.name} did not run: it asked for more input")
        entry["outcome"] = (TriedOutcome.ERROR if result.is_error else TriedOutcome.RAN).value
        return result


def _would(
    entry: dict[str, Any], outcome: TriedOutcome, detail: str, told: types.CallToolResult
) -> types.CallToolResult:
    entry.update(outcome=outcome.value, detail=detail)
    return told


@attrs.define(eq=False)
class PromptTrials:
    """Tries prompts on a webhook's samples and past events (see the module's docstring)."""

    agent: AgentRunner
    #: A try's deadline, as a run's (``AGENTWS_RUN_TIMEOUT_S``).
    run_timeout_s: float

    async def try_prompt(self, request: TryRequest) -> DryRun:
        """Run the agent as the webhook's run would, posting nothing; what it would do.

        Error handling:
            :class:`~agentws.core.errors.ValidationError` for an empty or too
            long prompt; :class:`~agentws.core.errors.UpstreamError` when the
            model fails or the try takes longer than ``run_timeout_s``.
        """
        store = self.agent.catalog.store
        webhook = request.webhook
        prompt = request.prompt if request.prompt is not None else webhook.prompt
        if not prompt.strip():
            raise ValidationError("the prompt is empty: say what the events are and what to post")
        if len(prompt) > _MAX_PROMPT_CHARS:
            raise ValidationError(f"the prompt is longer than {_MAX_PROMPT_CHARS} characters")
        event = request.delivery
        try:
            payload = json.loads(event.body)
        except ValueError:  # the door stores JSON objects only
            raise ValidationError(f"{event.id} does not hold a JSON body") from None
        group = await store.find(Group, id=webhook.group_id) if webhook.group_id else None
        log = RunLog()
        with trio.move_on_after(self.run_timeout_s) as deadline:
            try:
                text = await self.agent.run(
                    webhook=webhook,
                    event=event,
                    payload=payload,
                    prompt=prompt,
                    group=group,
                    log=log,
                    calls=DryCalls(self.agent.gate),
                )
            except ModelError as exc:
                raise UpstreamError(f"the model: {exc.message}") from None
        if deadline.cancelled_caught:
            raise UpstreamError(
                f"the try took longer than {self.run_timeout_s:g} s (AGENTWS_RUN_TIMEOUT_S)"
            )
        source = request.source
        dry = DryRun(
            text=text,
            model=log.model,
            prompt=prompt,
            source=source,
            source_id=event.id,
            calls=tuple(_tried(entry) for entry in log.tool_calls),
            usage=dict(log.usage),
        )
        await record_webhook_action(
            store,
            webhook,
            request.actor,
            "webhook.try",
            source=source,
            source_id=event.id,
            model=dry.model,
            prompt_is_current=prompt == webhook.prompt,
            calls=[{"name": c.name, "outcome": c.outcome.value} for c in dry.calls],
        )
        return dry


def _tried(entry: dict[str, Any]) -> TriedCall:
    return TriedCall(
        name=str(entry.get("name", "")),
        capability=entry.get("capability"),
        arguments=dict(entry.get("arguments") or {}),
        outcome=TriedOutcome(entry.get("outcome", TriedOutcome.UNKNOWN_TOOL.value)),
        detail=str(entry.get("detail") or entry.get("result") or ""),
    )
