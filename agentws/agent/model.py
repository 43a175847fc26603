"""The :class:`ModelClient` protocol: what the agent's run asks of a language model.

One turn at a time: the run sends the system prompt, the conversation so far
(in the Messages API's shape: ``{"role", "content": [blocks]}``) and the
tools it may call; the model answers with text, tool calls, or both. The
run loops until the model answers without tool calls. Implementations:
:class:`~agentws.agent.offline.OfflineModel` (no network, the default) and
:class:`~agentws.agent.anthropic_model.AnthropicModel` (when a key is set).
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from agentws.core.errors import RetryableError

__all__ = [
    "EventBrief",
    "ModelClient",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "ModelTool",
    "ToolCall",
]


class ModelError(RetryableError):
    """The model could not answer. ``retryable``: busy, rate-limited, unreachable.

    ``retry_after_s``: how long the API asked to wait before trying again, if it said.
    """


@attrs.frozen
class ModelTool:
    """A tool offered to the model: its name, what it does, its arguments' schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@attrs.frozen
class ToolCall:
    """A call the model asks for; ``id`` pairs it with its result."""

    id: str
    name: str
    arguments: dict[str, Any]


@attrs.frozen
class ModelReply:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    #: Tokens counted by the model (``input_tokens``, ``output_tokens``...).
    usage: dict[str, int] = attrs.field(factory=dict)


@attrs.frozen
class EventBrief:
    """The event as data, beside the text the model reads.

    A language model reads only the messages; a model that is not one (the
    offline digest) reads the event from here instead of parsing its own
    prompt back.
    """

    webhook_name: str
    prompt: str
    payload: Any
    headers: dict[str, str]
    received_at: str
    truncated: bool
    original_bytes: int


@attrs.frozen
class ModelRequest:
    system: str
    messages: list[dict[str, Any]]
    tools: tuple[ModelTool, ...]
    brief: EventBrief


class ModelClient(Protocol):
    """A language model (or a stand-in for one) that takes turns in a run."""

    #: How the transcript names it (``offline``, a model id).
    @property
    def name(self) -> str: ...

    #: How much of its context a webhook payload may take, in bytes of JSON.
    @property
    def max_payload_bytes(self) -> int: ...

    async def reply(self, request: ModelRequest) -> ModelReply:
        """The model's next turn.

        Error handling:
            :class:`ModelError`, retryable or not; the run's deadline cancels it.
        """
        ...
