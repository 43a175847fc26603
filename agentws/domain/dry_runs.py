"""What "Try a prompt" answers: the message a run would post and what became of its tool calls.

A try (:mod:`agentws.agent.dry_run`) runs the agent on a sample or a past
event with a candidate prompt and posts nothing. Read tools run for real;
nothing else does. Each call the model asked for ends as one of
:class:`TriedOutcome`, which says what the live run would have done with it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import attrs

from agentws.domain.webhook_records import Event, Webhook

__all__ = ["DryRun", "TriedCall", "TriedOutcome", "TryRequest"]


class TriedOutcome(StrEnum):
    """What became of one tool call in a try."""

    #: A read tool: run for real, its result given to the model.
    RAN = "ran"
    #: A read tool that ran and answered with an error.
    ERROR = "error"
    #: A write tool: the live run would queue it for an admin's approval; not queued.
    WOULD_QUEUE = "would_queue"
    #: A destructive tool (or one set to need a confirmation): it would ask a person to
    #: confirm, which a webhook's run cannot, so the live run refuses it; not run.
    WOULD_ASK = "would_ask"
    #: A write tool the live run would run (pre-authorized, or allowed): not run here.
    WOULD_RUN = "would_run"
    #: Denied by an admin's permission: the live run gets "permission denied" too.
    DENIED = "denied"
    #: Arguments the tool's schema refuses: the live run would refuse them too.
    INVALID_ARGUMENTS = "invalid_arguments"
    #: The model named a tool the webhook's group does not have.
    UNKNOWN_TOOL = "unknown_tool"

    @property
    def label(self) -> str:
        """How people read it."""
        return _LABELS[self]


_LABELS = {
    TriedOutcome.RAN: "ran",
    TriedOutcome.ERROR: "ran, with an error",
    TriedOutcome.WOULD_QUEUE: "would queue for approval",
    TriedOutcome.WOULD_ASK: "would ask for confirmation",
    TriedOutcome.WOULD_RUN: "would run (write: not run in a try)",
    TriedOutcome.DENIED: "denied",
    TriedOutcome.INVALID_ARGUMENTS: "invalid arguments",
    TriedOutcome.UNKNOWN_TOOL: "unknown tool",
}


@attrs.frozen(kw_only=True)
class TryRequest:
    """Try ``prompt`` (None: the webhook's own) on one of its samples or past events."""

    webhook: Webhook
    #: What it is tried on: a past event, or a sample as an event that is not
    #: stored (see :func:`agentws.webhooks.samples.tried_delivery`).
    delivery: Event
    #: ``sample`` or ``event``.
    source: str
    prompt: str | None = None
    #: Who tries it, for the audit log (``admin:alice``, ``cli:bob``).
    actor: str


@attrs.frozen(kw_only=True)
class TriedCall:
    """One tool call the model asked for, and what became of it."""

    name: str
    #: ``read``, ``write`` or ``destructive``; None for a tool the group does not have.
    capability: str | None
    #: As the model gave them, with values the tool's schema marks secret redacted.
    arguments: dict[str, Any]
    outcome: TriedOutcome
    #: A read's result (cut short), or what the live run would have done.
    detail: str


@attrs.frozen(kw_only=True)
class DryRun:
    """A try's answer."""

    #: The message the run would post (nothing was posted).
    text: str
    #: The model that ran (``offline`` for the digest).
    model: str
    #: The prompt it ran with.
    prompt: str
    #: ``sample`` or ``event``, and its id.
    source: str
    source_id: str
    calls: tuple[TriedCall, ...] = ()
    #: Tokens used, per the model (empty for the offline model).
    usage: dict[str, int] = attrs.field(factory=dict)
