"""AgentRunner: one run of the agent for one event, in a bounded tool loop.

The run builds the system prompt (service rules + the webhook's prompt) and
the user turn (the event, fenced as untrusted data, cut by structure if it
is larger than the model takes), then gives the model turns until it answers
without tool calls. Every tool call goes through the permission gate as a
non-system caller (``webhook:<id>``, scope ``write``): reads run, writes are
queued for an admin and the message says so with the approval id,
destructive calls are refused (nobody is there to confirm them). Write
tools an admin pre-authorized for the webhook (``--allow-tool``, bound to
the tool's definition) run without approval.

What a tool call does is a :class:`CallPolicy`: the live run's is the gate;
a try of a prompt (:mod:`agentws.agent.dry_run`) passes its own, which runs
reads only and says what would have become of the rest.

What happens is written to a :class:`RunLog` as it happens, so that a run
cut short (deadline, failure) still leaves its transcript for the timeline.
The run's deadline is its caller's cancel scope.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Protocol

import attrs
import mcp_types as types
import trio

from agentws.agent.model import EventBrief, ModelClient, ModelRequest, ModelTool, ToolCall
from agentws.agent.prompt import system_prompt, user_turn
from agentws.core.errors import PermissionDeniedError
from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import (
    Capability,
    ContextDocument,
    DocumentPolicy,
    Event,
    Group,
    Webhook,
)
from agentws.domain.payloads import fence_payload
from agentws.domain.tool_results import tool_error
from agentws.tools.approval_queue import approval_url
from agentws.tools.builtins import GET_APPROVAL
from agentws.tools.caller import ToolCaller
from agentws.tools.catalog import Catalog
from agentws.tools.gate import ConfirmAnswer, ToolGate
from agentws.tools.spec import ToolSpec

__all__ = ["AgentRunner", "CallPolicy", "NoConfirmation", "RunLog", "unconfirmed_result"]

# Model turns in one run at most: a loop of tool calls must end.
_MAX_TURNS = 8
# Tool output kept in the timeline, per call.
_MAX_RESULT_CHARS = 2000
# A body larger than this (as received) is fenced in a thread.
_FENCE_ON_LOOP_BYTES = 64 * 1024


@attrs.define
class RunLog:
    """What a run did so far: for the event's timeline, even if the run did not finish."""

    model: str = ""
    #: The webhook's prompt the run followed (a replay may ask for it again).
    prompt: str = ""
    system: str = ""
    messages: list[dict[str, Any]] = attrs.field(factory=list)
    tool_calls: list[dict[str, Any]] = attrs.field(factory=list)
    usage: dict[str, int] = attrs.field(factory=dict)
    text: str = ""

    def transcript(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": self.prompt,
            "system": self.system,
            "messages": self.messages,
        }

    def add_usage(self, usage: dict[str, int]) -> None:
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + int(value)


def unconfirmed_result(tool: ToolSpec) -> types.CallToolResult:
    """What the model reads of a call that needs a person's confirmation: it did not run."""
    text = (
        f"{tool.name} is destructive and needs a person's confirmation, which an automated "
        "run cannot give: it did not run. Ask an admin to do it."
    )
    return tool_error(text)


@attrs.frozen
class NoConfirmation:
    """Nobody can confirm a destructive call in an automated run (or a try of one): it is refused.

    (With the run's scope, ``write``, the gate denies destructive tools before
    it would ask, and a try's reads never ask; this holds should either change.)
    """

    async def confirm(
        self, tool: ToolSpec, arguments: dict[str, Any], digest: str
    ) -> ConfirmAnswer:
        return ConfirmAnswer(False, unconfirmed_result(tool), outcome="refused")


class CallPolicy(Protocol):
    """What a run does with one call of a tool its group has.

    Returns what the model reads back, and says in ``entry`` (the call's
    record in the run's log, which holds its name, arguments and capability
    already) what became of it: ``outcome`` and, where there is one, ``result``.
    """

    async def __call__(
        self,
        caller: ToolCaller,
        tool: ToolSpec,
        arguments: CallArguments,
        entry: dict[str, Any],
    ) -> types.CallToolResult: ...


@attrs.define(eq=False)
class AgentRunner:
    """Runs the agent for events, with the group's tools behind the gate."""

    catalog: Catalog
    gate: ToolGate
    model: ModelClient
    #: The service's public URL, for links to the dashboard.
    base_url: str = attrs.field(default="", kw_only=True)

    async def run(
        self,
        *,
        webhook: Webhook,
        event: Event,
        payload: Any,
        prompt: str,
        group: Group | None,
        log: RunLog,
        calls: CallPolicy | None = None,
    ) -> str:
        """Run the agent on ``event``, whose body parsed is ``payload``; the message to post.

        The message is also in ``log.text``. ``calls``: what a tool call does
        (default: it goes through the permission gate, as the live run's do).

        Error handling:
            :class:`~agentws.agent.model.ModelError` from the model; store
            errors from the catalog. Tool failures are results the model reads.
        """
        fence = functools.partial(fence_payload, payload, max_bytes=self.model.max_payload_bytes)
        # Cutting a large body to the model's budget takes tens of milliseconds of
        # small steps (sizes member by member): in a thread, the loop runs meanwhile.
        fenced = (
            await trio.to_thread.run_sync(fence)
            if len(event.body) > _FENCE_ON_LOOP_BYTES
            else fence()
        )
        received_at = event.received_at.isoformat(timespec="seconds")
        log.model = self.model.name
        log.prompt = prompt
        spine: list[ContextDocument] = []
        if group is not None:
            documents = await self.catalog.store.group_documents(group.id)
            spine = [d for d in documents if d.policy is DocumentPolicy.SPINE]
        log.system = system_prompt(prompt, spine)
        log.messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": user_turn(
                            webhook_name=webhook.name,
                            received_at=received_at,
                            headers=event.headers,
                            fenced=fenced,
                        ),
                    }
                ],
            }
        )
        brief = EventBrief(
            webhook_name=webhook.name,
            prompt=prompt,
            payload=payload,
            headers=event.headers,
            received_at=received_at,
            truncated=fenced.truncated,
            original_bytes=fenced.original_bytes,
        )
        tools = await self._tools(group)
        offered = tuple(ModelTool(t.name, t.tagged_description, t.input_schema) for t in tools)
        caller = (
            ToolCaller(
                actor=f"webhook:{webhook.id}",
                group=group,
                scope=Capability.WRITE,
                event_id=event.id,
                preauthorized=webhook.allowed_tools,
            )
            if group is not None
            else None
        )
        by_name = {t.name: t for t in tools}
        policy = calls or self._through_gate
        text = ""
        for _ in range(_MAX_TURNS):
            request = ModelRequest(log.system, list(log.messages), offered, brief)
            reply = await self.model.reply(request)
            log.add_usage(reply.usage)
            text = reply.text or text
            content: list[dict[str, Any]] = []
            if reply.text:
                content.append({"type": "text", "text": reply.text})
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in reply.tool_calls
            ]
            log.messages.append({"role": "assistant", "content": content})
            if not reply.tool_calls:
                break
            results = []
            for call in reply.tool_calls:
                result = await self._call(caller, by_name.get(call.name), call, log, policy)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": call.id,
                        "content": _text(result),
                        "is_error": bool(result.is_error),
                    }
                )
            log.messages.append({"role": "user", "content": results})
        else:
            text = (text + "\n\n" if text else "") + (
                f"(The agent stopped after {_MAX_TURNS} turns without finishing.)"
            )
        log.text = self._with_approvals(
            text.strip() or "(The agent wrote nothing.)", log.tool_calls
        )
        return log.text

    def _with_approvals(self, text: str, calls: list[dict[str, Any]]) -> str:
        """``text``, then what waits for an admin: each call's tool, approval id and link.

        Always added by the service, whatever the model wrote: the channel
        must be able to trust where the approval is (a payload cannot make
        the model point elsewhere). A try lists the calls it would have queued.
        """
        lines = []
        for call in calls:
            if call.get("outcome") == "queued":
                approval = call["approval_id"]
                lines.append(
                    f"• {call['name']}: approval {approval} — "
                    f"{approval_url(self.base_url, approval)}"
                    f" (or `agentws approval approve {approval}`)"
                )
            elif call.get("outcome") == "would_queue":
                lines.append(
                    f"• {call['name']}: (an approval id and its link: a try queues nothing)"
                )
        if not lines:
            return text
        return text + "\n\nWaiting for an admin's approval:\n" + "\n".join(lines)

    async def _tools(self, group: Group | None) -> list[ToolSpec]:
        if group is None:
            return []
        listing = await self.catalog.tools(group)
        # Reading a queued call's outcome is for MCP sessions; a run ends first.
        return [t for t in listing.tools if t.name != GET_APPROVAL.name]

    async def _call(
        self,
        caller: ToolCaller | None,
        tool: ToolSpec | None,
        call: ToolCall,
        log: RunLog,
        policy: CallPolicy,
    ) -> types.CallToolResult:
        entry: dict[str, Any] = {"id": call.id, "name": call.name}
        log.tool_calls.append(entry)
        if tool is None or caller is None:
            entry.update(arguments={}, outcome="unknown_tool")
            return tool_error(f"There is no tool called {call.name!r} here.")
        # Redacted once, for this log and the gate's audit and queue.
        arguments = CallArguments.of(tool.name, call.arguments, tool.input_schema)
        entry["arguments"] = arguments.shown
        entry["capability"] = tool.capability.value
        result = await policy(caller, tool, arguments, entry)
        entry.setdefault("result", _text(result)[:_MAX_RESULT_CHARS])
        return result

    async def _through_gate(
        self, caller: ToolCaller, tool: ToolSpec, arguments: CallArguments, entry: dict[str, Any]
    ) -> types.CallToolResult:
        """The live run's calls: through the permission gate (reads run, writes queue)."""
        try:
            outcome = await self.gate.call(caller, tool, arguments, confirmer=NoConfirmation())
        except PermissionDeniedError as exc:
            entry.update(outcome="denied", result=exc.message)
            return tool_error(exc.message)
        result = outcome.result
        if not isinstance(result, types.CallToolResult):
            # Only a door that asked its client a question gets one back; this one asks none.
            result = tool_error(f"{tool.name} did not run: it needs a confirmation")
        if outcome.approval is not None:
            entry.update(outcome="queued", approval_id=outcome.approval.id)
        else:
            entry["outcome"] = "error" if result.is_error else "ran"
        return result


def _text(result: types.CallToolResult) -> str:
    parts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)
