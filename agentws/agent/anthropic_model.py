"""AnthropicModel: the agent's turns from the Anthropic Messages API, on trio.

Used when ``ANTHROPIC_API_KEY`` is set (``AGENTWS_MODEL`` names the model,
``ANTHROPIC_BASE_URL`` another endpoint). Each turn is one
``messages.create`` call with the run's system prompt and conversation, and
the tools it may call with their JSON schemas. The system prompt and the
tool list are the stable part of every turn of a run: both are marked for
prompt caching.

A turn has its own deadline (``AGENTWS_MODEL_TIMEOUT_S``) inside the run's.
The SDK retries rate limits, overloads and server errors itself (a couple of
times, honouring ``retry-after``); what still fails becomes a
:class:`~agentws.agent.model.ModelError`: retryable for 408/409/429/5xx/529,
timeouts and lost connections (with the ``retry-after`` the API gave, if
any), terminal for the rest (a bad key, a bad request), with the API's own
message. The key is never logged nor put in an error.
"""

from __future__ import annotations

from typing import Any

import anthropic
import attrs
import trio

from agentws.agent.model import ModelError, ModelReply, ModelRequest, ToolCall
from agentws.core.redaction import upstream_excerpt
from agentws.settings.config import Settings

__all__ = ["AnthropicModel"]

# Statuses worth trying again later: timeouts, conflicts, rate limits, the API's own trouble.
_RETRYABLE = frozenset({408, 409, 429})
# The SDK's own retries within one turn (each honours retry-after).
_SDK_RETRIES = 2
# A payload of this many bytes of JSON fits the context with room for the rest.
_PAYLOAD_BYTES = 100_000
_CACHED = {"type": "ephemeral"}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@attrs.define(eq=False)
class AnthropicModel:
    """A :class:`~agentws.agent.model.ModelClient` over the Messages API."""

    client: anthropic.AsyncAnthropic
    model: str
    max_tokens: int
    timeout_s: float
    max_payload_bytes: int = _PAYLOAD_BYTES

    @classmethod
    def from_settings(cls, settings: Settings) -> AnthropicModel:
        """The model the settings name; ``anthropic_api_key`` must be set."""
        if not settings.anthropic_api_key:
            raise ValueError("ANTHROPIC_API_KEY is not set")
        client = anthropic.AsyncAnthropic(
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url,
            max_retries=_SDK_RETRIES,
            timeout=settings.model_timeout_s,
        )
        return cls(
            client=client,
            model=settings.model,
            max_tokens=settings.model_max_tokens,
            timeout_s=settings.model_timeout_s,
        )

    @property
    def name(self) -> str:
        return self.model

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.close()

    async def check(self) -> str:
        """Ask the API about the model (no tokens spent): what it proved.

        Error handling:
            :class:`~agentws.agent.model.ModelError`, as for a turn (a bad
            key, an unknown model, an API that cannot be reached).
        """
        with trio.move_on_after(self.timeout_s) as scope:
            try:
                info = await self.client.models.retrieve(self.model)
            except anthropic.APIStatusError as exc:
                raise _status_error(exc) from None
            except anthropic.APIConnectionError as exc:
                raise ModelError(f"cannot reach the model's API: {exc}", retryable=True) from None
        if scope.cancelled_caught:
            raise ModelError(f"the API did not answer within {self.timeout_s:g} s", retryable=True)
        return f"the API knows {info.id} ({info.display_name}) and took the key"

    async def reply(self, request: ModelRequest) -> ModelReply:
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        if tools:
            tools[-1] = {**tools[-1], "cache_control": _CACHED}
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [{"type": "text", "text": request.system, "cache_control": _CACHED}],
            "messages": request.messages,
        }
        if tools:
            arguments["tools"] = tools
        # The SDK's retries sleep within this deadline too.
        with trio.move_on_after(self.timeout_s * (_SDK_RETRIES + 1)) as scope:
            try:
                message = await self.client.messages.create(**arguments)
            except anthropic.APIStatusError as exc:
                raise _status_error(exc) from None
            except anthropic.APITimeoutError:
                raise ModelError(
                    f"the model did not answer within {self.timeout_s:g} s", retryable=True
                ) from None
            except anthropic.APIConnectionError as exc:
                raise ModelError(f"cannot reach the model's API: {exc}", retryable=True) from None
        if scope.cancelled_caught:
            raise ModelError("the model did not answer in time", retryable=True)
        text = "".join(block.text for block in message.content if block.type == "text")
        calls = tuple(
            ToolCall(block.id, block.name, dict(block.input))
            for block in message.content
            if block.type == "tool_use"
        )
        usage = {
            field: value
            for field in _USAGE_FIELDS
            if isinstance(value := getattr(message.usage, field, None), int)
        }
        return ModelReply(text=text, tool_calls=calls, usage=usage)


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    detail = _api_message(exc)
    retryable = status in _RETRYABLE or status >= 500
    if status == 401:
        detail = f"the API key was refused ({detail}): check ANTHROPIC_API_KEY"
    return ModelError(
        f"Anthropic API {status}: {detail}",
        retryable=retryable,
        retry_after_s=_retry_after(exc) if retryable else None,
    )


def _api_message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return upstream_excerpt(inner["message"])
    # Not the API's JSON (a proxy's HTML page, say): what the response said.
    return upstream_excerpt(exc.response.content) or f"HTTP {exc.status_code}"


def _retry_after(exc: anthropic.APIStatusError) -> float | None:
    """Seconds the API asked to wait: ``retry-after-ms``, else ``retry-after`` (seconds)."""
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None
