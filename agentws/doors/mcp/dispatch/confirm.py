"""Explicit confirmation of destructive calls, synchronously, as MCP clients can give it.

- A client that declared the ``elicitation`` capability (protocol
  2025-06-18 and later) is asked within the call: an ``elicitation/create``
  request shows the tool and its arguments (secrets redacted) and the call
  runs only if the person accepts *and* ticks "confirm". Declining,
  cancelling or not answering within ``AGENTWS_CONFIRM_TTL_S`` runs nothing.
- A client of the stateless revision (2026-07-28) that declared
  ``elicitation`` gets the same question as an ``input_required`` result:
  one elicitation request and a ``requestState`` that is a one-time confirm
  token (below). The client asks the person and calls again with the answer
  and the state; the call runs only if the state is valid for this bearer
  token, tool and arguments, unused and in time, and the answer is "accept"
  with "confirm" ticked. Any instance can take the second request.
- Any other client (2024-11-05 has no elicitation) gets a result carrying a
  one-time confirm token. Calling the same tool again with the same
  arguments plus ``"_confirm_token": "<token>"`` runs it. The token is bound
  to the bearer token (not to the session: one-shot clients such as the
  MCP Inspector's command line open a session per call), the tool and the
  SHA-256 of the arguments; it works once, right or wrong, and only within
  the TTL. Only its hash is kept, in the store, so the confirming call may
  reach any instance; presented with another bearer token it does not exist.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any, cast

import attrs
import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agentws.connectors.relayed_requests import CONFIRMATION_META_KEY
from agentws.domain.models import ConfirmToken
from agentws.domain.rules import hash_secret, new_secret, utcnow
from agentws.domain.secrets_in_arguments import redact
from agentws.domain.tool_results import tool_error, tool_text
from agentws.doors.mcp.sessions.session import McpSession
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.tools.gate import ConfirmAnswer
from agentws.tools.spec import ToolSpec

__all__ = ["CONFIRM_ARGUMENT", "CONFIRM_TOKEN_PREFIX", "McpConfirmer", "with_confirm_argument"]

log = logging.getLogger("agentws.mcp")

#: The argument a confirm token comes back in (taken out before anything else sees the call).
CONFIRM_ARGUMENT = "_confirm_token"
CONFIRM_TOKEN_PREFIX = "agwcf_"  # noqa: S105 - a prefix, not a secret

# Confirm tokens a bearer token holds at once; asking for more forgets the oldest.
_MAX_CONFIRMATIONS = 16
# Elicitation exists from this protocol version on.
_ELICITATION_SINCE = "2025-06-18"
# The key of the one input request a stateless confirmation asks.
_CONFIRM_INPUT = "confirm"
_CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Run it",
            "description": "Tick to run this destructive action now.",
        }
    },
    "required": ["confirm"],
}


def with_confirm_argument(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the optional confirm-token argument, for tools that ask for confirmation."""
    properties = schema.get("properties")
    if isinstance(properties, dict) and CONFIRM_ARGUMENT in properties:
        return schema
    return {
        **schema,
        "properties": {
            **(properties if isinstance(properties, dict) else {}),
            CONFIRM_ARGUMENT: {
                "type": "string",
                "description": "Leave out. When this destructive tool answers that it needs "
                "confirmation, call it again with the same arguments and the token it gave.",
            },
        },
    }


def _supports_elicitation(ctx: ServerRequestContext[McpSession]) -> bool:
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return False
    version = ctx.protocol_version
    if version not in KNOWN_PROTOCOL_VERSIONS or _ELICITATION_SINCE not in KNOWN_PROTOCOL_VERSIONS:
        return False
    return KNOWN_PROTOCOL_VERSIONS.index(version) >= KNOWN_PROTOCOL_VERSIONS.index(
        _ELICITATION_SINCE
    )


def _shown(tool: ToolSpec, arguments: dict[str, Any]) -> str:
    text = json.dumps(redact(arguments, tool.input_schema), indent=1, ensure_ascii=False)
    return text if len(text) <= 2000 else text[:2000] + "…"


def _confirmation(tool: ToolSpec, arguments: dict[str, Any]) -> types.ElicitRequest:
    """agentws's own question, with the mark no relayed request can carry (its ``_meta`` key)."""
    message = (
        f"agentws asks: run the destructive action {tool.name}?\n{tool.description}\n\n"
        f"Arguments:\n{_shown(tool, arguments)}"
    )
    meta = cast(types.RequestParamsMeta, {CONFIRMATION_META_KEY: {"tool": tool.name}})
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message, requested_schema=_CONFIRM_SCHEMA, _meta=meta
        )
    )


@attrs.define(eq=False)
class McpConfirmer:
    """Asks one MCP caller, in one request, to confirm a destructive call."""

    ctx: ServerRequestContext[McpSession]
    #: The confirm token the call came with, if any (not necessarily a string).
    presented: Any
    ttl_s: float
    #: Where confirm tokens are kept (shared by every instance).
    store: ApprovalRunStore
    #: A stateless client's retry: its answers to our input requests, and our state.
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None

    @property
    def session(self) -> McpSession:
        return self.ctx.lifespan_context

    async def confirm(
        self, tool: ToolSpec, arguments: dict[str, Any], arguments_hash: str
    ) -> ConfirmAnswer:
        if self.presented is not None:
            return await self._check_token(tool, arguments_hash, self.presented)
        if self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if self.request_state is not None:
                return await self._check_answer(tool, arguments_hash)
            capabilities = self.ctx.session.client_capabilities
            if capabilities is not None and capabilities.elicitation is not None:
                return await self._ask_input(tool, arguments, arguments_hash)
        elif _supports_elicitation(self.ctx):
            return await self._elicit(tool, arguments)
        return await self._issue_token(tool, arguments, arguments_hash)

    async def _check_token(
        self, tool: ToolSpec, arguments_hash: str, presented: Any
    ) -> ConfirmAnswer:
        pending = None
        if isinstance(presented, str) and presented.startswith(CONFIRM_TOKEN_PREFIX):
            pending = await self.store.take_confirm_token(
                hash_secret(presented), self.session.token_id
            )
        if pending is None:
            why = "it is unknown for this token, or was used already"
        elif pending.expires_at <= utcnow():
            given_s = (pending.expires_at - pending.created_at).total_seconds()
            why = f"it expired ({given_s:g} s after it was given)"
        elif pending.tool_name != tool.name or pending.arguments_hash != arguments_hash:
            why = "it was given for another call: the tool or the arguments differ"
        else:
            return ConfirmAnswer(True, outcome="confirmed_by_token")
        return ConfirmAnswer(
            False,
            tool_error(
                f"Confirmation refused for {tool.name}: {why}. Nothing ran. Call the tool again "
                f"without {CONFIRM_ARGUMENT} to be asked for a new confirmation."
            ),
            outcome="confirmation_refused",
        )

    async def _check_answer(self, tool: ToolSpec, arguments_hash: str) -> ConfirmAnswer:
        """A stateless retry: the state must be a valid token, the answer a yes."""
        checked = await self._check_token(tool, arguments_hash, self.request_state)
        if not checked.confirmed:
            return checked
        raw = (self.input_responses or {}).get(_CONFIRM_INPUT)
        if isinstance(raw, BaseModel):
            raw = raw.model_dump(by_alias=True, exclude_none=True)
        try:
            answer = types.ElicitResult.model_validate(raw)
        except PydanticValidationError:
            return self._not_run(tool, "the confirmation request was not answered", "no_answer")
        return self._judge(tool, answer, "confirmed_by_input")

    async def _ask_input(
        self, tool: ToolSpec, arguments: dict[str, Any], arguments_hash: str
    ) -> ConfirmAnswer:
        secret = await self._store_token(tool, arguments_hash)
        question = _confirmation(tool, arguments)
        return ConfirmAnswer(
            False,
            types.InputRequiredResult(
                input_requests={_CONFIRM_INPUT: question}, request_state=secret
            ),
            outcome="confirmation_requested",
        )

    async def _store_token(self, tool: ToolSpec, arguments_hash: str) -> str:
        """A new one-time confirm token for this call; only its hash is kept."""
        secret = new_secret(CONFIRM_TOKEN_PREFIX)
        now = utcnow()
        await self.store.issue_confirm_token(
            ConfirmToken(
                id=hash_secret(secret),
                token_id=self.session.token_id,
                tool_name=tool.name,
                arguments_hash=arguments_hash,
                created_at=now,
                expires_at=now + timedelta(seconds=self.ttl_s),
            ),
            keep=_MAX_CONFIRMATIONS,
        )
        return secret

    async def _issue_token(
        self, tool: ToolSpec, arguments: dict[str, Any], arguments_hash: str
    ) -> ConfirmAnswer:
        secret = await self._store_token(tool, arguments_hash)
        text = (
            f"Confirmation required: {tool.name} is destructive and has NOT run. Show the person "
            f"what it will do and ask them. To run it, call {tool.name} again with exactly the "
            f'same arguments plus "{CONFIRM_ARGUMENT}": "{secret}" (in this session or a new '
            f"one). The token works once, for this call only, within {self.ttl_s:g} "
            "seconds.\nArguments:\n"
            f"{_shown(tool, arguments)}"
        )
        return ConfirmAnswer(
            False,
            tool_text(
                text,
                {
                    "status": "confirmation_required",
                    "tool": tool.name,
                    "confirm_argument": CONFIRM_ARGUMENT,
                    "confirm_token": secret,
                    "expires_in_s": self.ttl_s,
                },
            ),
            outcome="confirmation_requested",
        )

    async def _elicit(self, tool: ToolSpec, arguments: dict[str, Any]) -> ConfirmAnswer:
        answer: types.ElicitResult | None = None
        with trio.move_on_after(self.ttl_s):
            try:
                answer = await self.ctx.session.send_request(
                    _confirmation(tool, arguments),
                    types.ElicitResult,
                    metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id),
                )
            except MCPError as exc:
                log.info("session %s: elicitation failed: %s", self.session.id, exc.error.message)
                return self._not_run(tool, f"the confirmation request failed ({exc.error.message})")
        if answer is None:
            return self._not_run(tool, f"no answer within {self.ttl_s:g} s", "no_answer")
        return self._judge(tool, answer, "confirmed_by_elicitation")

    def _judge(self, tool: ToolSpec, answer: types.ElicitResult, outcome: str) -> ConfirmAnswer:
        if answer.action == "accept" and (answer.content or {}).get("confirm") is True:
            return ConfirmAnswer(True, outcome=outcome)
        if answer.action == "accept":
            return self._not_run(tool, "the person did not tick 'Run it'", "declined")
        return self._not_run(tool, f"the person chose {answer.action}", "declined")

    def _not_run(
        self, tool: ToolSpec, why: str, outcome: str = "confirmation_failed"
    ) -> ConfirmAnswer:
        return ConfirmAnswer(
            False,
            tool_text(
                f"{tool.name} did not run: {why}. Nothing was changed.",
                {"status": "not_confirmed", "tool": tool.name, "reason": why},
            ),
            outcome=outcome,
        )
