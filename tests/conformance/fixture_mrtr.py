"""The fixture server's 2026-07-28 multi-round tools: answers that ask the client first.

On 2026-07-28 a server that needs the user or the client's model returns an
``InputRequiredResult`` (``resultType: "input_required"``) naming what it
needs; the client calls again with ``inputResponses`` and the echoed
``requestState``. The conformance suite's ``input-required-result-*``
scenarios call the tools and the prompt below by name, following the suite's
own requirements for each. ``requestState`` is HMAC-signed, so a tampered one
is refused with -32602. To a client of a handshake revision the same tools
ask with requests during the call. The fixture's tools of the 2025 revisions
that ask (sampling, elicitation) ask a client of 2026-07-28 (agentws's link
to a remote connector, which speaks it) the other way round: :func:`asking`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

__all__ = ["MRTR_PROMPT", "MRTR_TOOLS", "Ask", "AskingHandler", "asking", "mrtr_prompt"]

Context = ServerRequestContext[Any, Any]
Params = types.CallToolRequestParams | types.GetPromptRequestParams
Answer = types.CallToolResult | types.InputRequiredResult
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
# Signs requestState for this process's lifetime: state is only ever echoed
# back to the process that issued it.
_KEY = secrets.token_bytes(32)


def _sign(state: dict[str, Any]) -> str:
    payload = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
    mac = hmac.new(_KEY, payload.encode(), hashlib.sha256).hexdigest()
    return f"{payload}.{mac}"


def _verify(token: str | None) -> dict[str, Any]:
    payload, _, mac = (token or "").rpartition(".")
    expected = hmac.new(_KEY, payload.encode(), hashlib.sha256).hexdigest()
    if not payload or not hmac.compare_digest(mac, expected):
        raise MCPError(types.INVALID_PARAMS, "requestState failed its integrity check")
    state: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload))
    return state


def _ask(message: str, field: str, kind: str = "string") -> types.ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def _sample(text: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def _need(
    requests: Mapping[str, types.InputRequest], state: dict[str, Any] | None = None
) -> types.InputRequiredResult:
    return types.InputRequiredResult(
        input_requests=dict(requests), request_state=_sign(state) if state is not None else None
    )


def _missing(params: Params, requests: Mapping[str, types.InputRequest]) -> dict[str, Any]:
    """The requests not answered yet (re-asked rather than refused)."""
    answered = params.input_responses or {}
    return {key: request for key, request in requests.items() if key not in answered}


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _field(params: Params, key: str, field: str) -> Any:
    response = (params.input_responses or {})[key]
    return (getattr(response, "content", None) or {}).get(field)


def _reply_text(response: Any) -> str:
    content = getattr(response, "content", None)
    return content.text if isinstance(content, types.TextContent) else str(content)


async def _elicitation(ctx: Context, params: Params) -> Answer:
    requests = {"user_name": _ask("What is your name?", "name")}
    if missing := _missing(params, requests):
        return _need(missing)
    return _text(f"Hello, {_field(params, 'user_name', 'name')}!")


async def _sampling(ctx: Context, params: Params) -> Answer:
    requests = {"capital_question": _sample("What is the capital of France?", 100)}
    if missing := _missing(params, requests):
        return _need(missing)
    answer = (params.input_responses or {})["capital_question"]
    return _text(f"The model said: {_reply_text(answer)}")


async def _list_roots(ctx: Context, params: Params) -> Answer:
    requests = {"client_roots": types.ListRootsRequest()}
    if missing := _missing(params, requests):
        return _need(missing)
    roots = getattr((params.input_responses or {})["client_roots"], "roots", [])
    return _text("Roots: " + ", ".join(str(root.uri) for root in roots))


async def _request_state(ctx: Context, params: Params) -> Answer:
    requests = {"confirm": _ask("Please confirm", "ok", "boolean")}
    if params.request_state is None or _missing(params, requests):
        return _need(requests, {"tool": "request_state"})
    _verify(params.request_state)
    return _text(f"state-ok: confirmed={_field(params, 'confirm', 'ok')}")


async def _multiple_inputs(ctx: Context, params: Params) -> Answer:
    requests: dict[str, types.InputRequest] = {
        "user_name": _ask("What is your name?", "name"),
        "greeting": _sample("Generate a greeting", 50),
        "client_roots": types.ListRootsRequest(),
    }
    if params.request_state is not None:
        _verify(params.request_state)
    if missing := _missing(params, requests):
        return _need(missing, {"tool": "multiple_inputs"})
    return _text(f"Got all three, {_field(params, 'user_name', 'name')}")


async def _multi_round(ctx: Context, params: Params) -> Answer:
    state = _verify(params.request_state) if params.request_state is not None else {"round": 1}
    if state["round"] == 1:
        step1 = {"step1": _ask("Step 1: What is your name?", "name")}
        if params.request_state is None or _missing(params, step1):
            return _need(step1, {"round": 1})
        name = _field(params, "step1", "name")
        return _need(
            {"step2": _ask("Step 2: What is your favorite color?", "color")},
            {"round": 2, "name": name},
        )
    step2 = {"step2": _ask("Step 2: What is your favorite color?", "color")}
    if _missing(params, step2):
        return _need(step2, state)
    return _text(f"{state['name']} likes {_field(params, 'step2', 'color')}")


async def _tampered_state(ctx: Context, params: Params) -> Answer:
    requests = {"confirm": _ask("Please confirm", "ok", "boolean")}
    if params.request_state is None:
        return _need(requests, {"tool": "tampered_state"})
    _verify(params.request_state)
    return _text("state verified")


async def _capabilities(ctx: Context, params: Params) -> Answer:
    # Ask only for what the client declared it can give.
    declared = ctx.session.client_capabilities or types.ClientCapabilities()
    requests: dict[str, types.InputRequest] = {}
    if declared.elicitation is not None:
        requests["user_name"] = _ask("What is your name?", "name")
    if declared.sampling is not None:
        requests["greeting"] = _sample("Generate a greeting", 50)
    if missing := _missing(params, requests):
        return _need(missing)
    return _text(f"Answered: {sorted(params.input_responses or {})}")


# --- the same tools to a client of a handshake revision --------------------------------
# Such a client (agentws's link to its remote connectors) takes requests from the
# server during the call: the tools ask them there and answer when they have it
# all. agentws, for its own 2026-07-28 callers, turns those requests into
# input_required rounds: these are what the scenarios then see through it.


async def _request(ctx: Context, request: types.InputRequest) -> Any:
    result_type: type[types.Result] = {
        "elicitation/create": types.ElicitResult,
        "sampling/createMessage": types.CreateMessageResult,
        "roots/list": types.ListRootsResult,
    }[request.method]
    return await ctx.session.send_request(
        request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
    )


def _content(answer: Any, field: str) -> Any:
    return (getattr(answer, "content", None) or {}).get(field)


async def _legacy(ctx: Context, name: str) -> types.CallToolResult:
    ask = functools.partial(_request, ctx)
    if name == "elicitation":
        return _text(f"Hello, {_content(await ask(_ask('What is your name?', 'name')), 'name')}!")
    if name == "sampling":
        answer = await ask(_sample("What is the capital of France?", 100))
        return _text(f"The model said: {_reply_text(answer)}")
    if name == "list_roots":
        roots = (await ask(types.ListRootsRequest())).roots
        return _text("Roots: " + ", ".join(str(root.uri) for root in roots))
    if name == "request_state":
        answer = await ask(_ask("Please confirm", "ok", "boolean"))
        return _text(f"state-ok: confirmed={_content(answer, 'ok')}")
    if name == "multiple_inputs":
        answers: dict[str, Any] = {}

        async def one(key: str, request: types.InputRequest) -> None:
            answers[key] = await ask(request)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "user_name", _ask("What is your name?", "name"))
            group.start_soon(one, "greeting", _sample("Generate a greeting", 50))
            group.start_soon(one, "client_roots", types.ListRootsRequest())
        return _text(f"Got all three, {_content(answers['user_name'], 'name')}")
    if name == "multi_round":
        who = _content(await ask(_ask("Step 1: What is your name?", "name")), "name")
        color = _content(await ask(_ask("Step 2: What is your favorite color?", "color")), "color")
        return _text(f"{who} likes {color}")
    if name == "tampered_state":
        await ask(_ask("Please confirm", "ok", "boolean"))
        return _text("state verified")
    # capabilities: what agentws's caller declared decides what reaches it;
    # sampling first, so a caller without elicitation is asked that alone.
    await ask(_sample("Generate a greeting", 50))
    return _text("Answered: greeting")


def _dual(name: str, modern: Handler) -> Handler:
    async def handle(ctx: Context, params: Params) -> Answer:
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            return await _legacy(ctx, name)
        return await modern(ctx, params)

    return handle


Handler = Callable[[Context, Params], Awaitable[Answer]]
#: ``ask(request)``: the client's answer to an elicitation or sampling request.
Ask = Callable[[types.InputRequest], Awaitable[Any]]
#: A tool that asks the client: what it answers depends on its arguments and the answer.
AskingHandler = Callable[[Ask, dict[str, Any]], Awaitable[types.CallToolResult]]
_ANSWER_TYPES: dict[str, type[types.Result]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
}


# --- the fixture's tools of the 2025 revisions that ask, to a client of either --------


class _NeedsInput(Exception):
    """A tool asked a client of 2026-07-28 what it has not answered yet."""

    def __init__(self, request: types.InputRequest) -> None:
        super().__init__(request.method)
        self.request = request


def asking(
    handler: AskingHandler,
) -> Callable[[Context, types.CallToolRequestParams], Awaitable[Answer]]:
    """A tool that asks with a request during the call, or (2026-07-28) with ``input_required``.

    On 2026-07-28 its one question is ``answer``; the retry brings the answer.
    """

    async def call(ctx: Context, params: types.CallToolRequestParams) -> Answer:
        async def ask(request: types.InputRequest) -> Any:
            result_type = _ANSWER_TYPES[request.method]
            if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
                related = ServerMessageMetadata(related_request_id=ctx.request_id)
                return await ctx.session.send_request(request, result_type, metadata=related)
            answer = (params.input_responses or {}).get("answer")
            if answer is None:
                raise _NeedsInput(request)
            return result_type.model_validate(
                answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            )

        try:
            return await handler(ask, dict(params.arguments or {}))
        except _NeedsInput as needs:
            return types.InputRequiredResult(input_requests={"answer": needs.request})

    return call


#: name -> (description, input schema, handler), as in the fixture's tool table.
MRTR_TOOLS: dict[str, tuple[str, dict[str, Any], Handler]] = {
    f"test_input_required_result_{name}": (description, NO_ARGUMENTS, _dual(name, handler))
    for name, description, handler in (
        ("elicitation", "Asks the user's name first", _elicitation),
        ("sampling", "Asks the client's model first", _sampling),
        ("list_roots", "Asks for the client's roots first", _list_roots),
        ("request_state", "Asks, keeping signed state", _request_state),
        ("multiple_inputs", "Asks three things at once", _multiple_inputs),
        ("multi_round", "Asks twice, one thing each round", _multi_round),
        ("tampered_state", "Refuses state it did not sign", _tampered_state),
        ("capabilities", "Asks only what the client can answer", _capabilities),
    )
}
MRTR_PROMPT = "test_input_required_result_prompt"


async def mrtr_prompt(
    ctx: Context, params: types.GetPromptRequestParams
) -> types.GetPromptResult | types.InputRequiredResult:
    """``prompts/get`` of :data:`MRTR_PROMPT`: asks for the context first."""
    requests = {"user_context": _ask("What context should the prompt use?", "context")}
    if missing := _missing(params, requests):
        return _need(missing)
    context = _field(params, "user_context", "context")
    return types.GetPromptResult(
        messages=[
            types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=f"Context: {context}")
            )
        ]
    )
