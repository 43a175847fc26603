"""How the admin API handles every call: the caller, the JSON in and out, the errors.

Each module of the API declares its handlers in an :class:`Endpoints` table,
which makes every one an :func:`endpoint`: it authenticates the caller
(:func:`agentws.admins.access.authenticate`) and turns agentws errors into
``{"error": {"code", "message"}}`` with the status the error's kind calls
for. The rest reads input the same way for every handler: the JSON body
(:func:`json_body`, held to a size before it is read: 413 ``too_large``
past it) checked against its shape (:func:`read_body`,
:mod:`agentws.doors.api.shapes.bodies`), and the page of a list the request asks
for (:func:`page_of`: ``limit`` 1 to 200, default 50, and the opaque
``cursor`` a page's ``next_cursor`` gives).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar, overload

from quart import Response, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from agentws.admins.access import SESSION_COOKIE, AdminServices, Caller, authenticate
from agentws.core.errors import (
    AgentwsError,
    ConfigError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    StoreUnavailableError,
    UnauthorizedError,
    UpstreamError,
    ValidationError,
    error_body,
)
from agentws.domain.typed_numbers import whole_number
from agentws.doors.api.shapes.base import Shape
from agentws.doors.api.shapes.bodies import read_shape
from agentws.http.blueprints import RouteTable
from agentws.http.request_bodies import CappedBody
from agentws.libraries import MAX_DOCUMENT_BYTES, format_bytes

__all__ = [
    "DOCUMENT_BODY_BYTES",
    "MAX_BODY_BYTES",
    "Answer",
    "Endpoints",
    "endpoint",
    "enum_value",
    "json_body",
    "page_of",
    "query_number",
    "read_body",
]

P = ParamSpec("P")
S = TypeVar("S", bound=Shape)
EnumT = TypeVar("EnumT", bound=Enum)

#: What a handler answers: a response, or JSON data (and its status, 200 if not given).
Answer = Response | dict[str, Any] | tuple[dict[str, Any], int]
#: A handler: ``handler(admin, caller, **path)``.
Handler: TypeAlias = Callable[Concatenate[AdminServices, Caller, P], Awaitable[Answer]]

#: The largest body an endpoint reads, unless it says otherwise: its largest field is a
#: prompt of 20,000 characters, which JSON may spell in 240,000 bytes (``\\ud83d\\ude00``
#: is one character). Parsing it is a few milliseconds of the event loop.
MAX_BODY_BYTES = 256 * 1024
#: The largest body of the document upload: a document's largest body, escaped (``"``,
#: ``\\`` and a line end are two bytes in a JSON string), and room for the other fields.
DOCUMENT_BODY_BYTES = 2 * MAX_DOCUMENT_BYTES + 64 * 1024

_MAX_LIMIT = 200


class _TooLarge(AgentwsError):
    """The body is over what the endpoint reads."""

    code = "too_large"


_STATUS = {
    _TooLarge: 413,
    ValidationError: 400,
    UnauthorizedError: 401,
    PermissionDeniedError: 403,
    NotFoundError: 404,
    ConflictError: 409,
    StoreUnavailableError: 503,
    # The service lacks what this needs (the key, to open a connector's secret): say why.
    ConfigError: 503,
    # The model (a try of a prompt), a connector: the fault is further on.
    UpstreamError: 502,
}

# A \ud800-\udfff escape: only then can a parsed body hold a lone surrogate,
# which json accepts and no UTF-8 encoder (the stores, the JSON answer) does.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _InvalidJson(ValidationError):
    """The body is not JSON text (as the webhook door calls it)."""

    code = "invalid_json"


def _error(status: int, code: str, message: str) -> Response:
    response = jsonify(error_body(code, message))
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="agentws admin API"'
    return response


def endpoint(
    handler: Callable[Concatenate[AdminServices, Caller, P], Awaitable[Answer]],
) -> Callable[Concatenate[AdminServices, P], Awaitable[Response]]:
    """Authenticate, run ``handler(admin, caller, **path)``, and turn agentws errors into JSON."""

    @functools.wraps(handler)
    async def wrapped(admin: AdminServices, /, *args: P.args, **kwargs: P.kwargs) -> Response:
        try:
            caller = await authenticate(
                admin.store,
                method=request.method,
                authorization=request.headers.get("Authorization"),
                cookie=request.cookies.get(SESSION_COOKIE),
                csrf=request.headers.get("X-CSRF-Token"),
            )
            result = await handler(admin, caller, *args, **kwargs)
        except AgentwsError as exc:
            status = next((s for k, s in _STATUS.items() if isinstance(exc, k)), 500)
            response = _error(status, exc.code, exc.message)
            if status == 413:
                # The rest of the body is never read: the connection cannot carry another request.
                response.headers["Connection"] = "close"
            return response
        if isinstance(result, Response):
            return result
        data, status = result if isinstance(result, tuple) else (result, 200)
        response = jsonify(data)
        response.status_code = status
        return response

    return wrapped


class Endpoints:
    """A module's handlers, each declared as an :func:`endpoint` for one method and rule.

    No handler of the API can be declared without authenticating its caller
    first; the one route that needs no credentials (the OpenAPI document) is
    declared on a plain :class:`~agentws.http.blueprints.RouteTable`. ``table`` is
    what the blueprint includes.
    """

    def __init__(self) -> None:
        self.table = RouteTable[AdminServices]()

    def route(self, method: str, rule: str) -> Callable[[Handler[P]], Handler[P]]:
        """Declare ``handler(admin, caller, **path)`` for ``method`` on ``rule``."""

        def declare(handler: Handler[P]) -> Handler[P]:
            self.table.route(rule, methods=[method])(endpoint(handler))
            return handler

        return declare

    def get(self, rule: str) -> Callable[[Handler[P]], Handler[P]]:
        return self.route("GET", rule)

    def post(self, rule: str) -> Callable[[Handler[P]], Handler[P]]:
        return self.route("POST", rule)

    def put(self, rule: str) -> Callable[[Handler[P]], Handler[P]]:
        return self.route("PUT", rule)

    def patch(self, rule: str) -> Callable[[Handler[P]], Handler[P]]:
        return self.route("PATCH", rule)

    def delete(self, rule: str) -> Callable[[Handler[P]], Handler[P]]:
        return self.route("DELETE", rule)


async def json_body(max_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The request's JSON object (ValidationError if it is not one).

    Every handler that reads a body reads it here, so a body that is not
    JSON text is refused the same way everywhere: 400 ``invalid_json``; and
    one over ``max_bytes`` (announced, or found so as it arrives) is refused
    before it is parsed, the rest unread: 413 ``too_large``.
    """
    limit = format_bytes(max_bytes)
    too_large = _TooLarge(f"the body is over {limit}, the most this endpoint reads")
    body = request.body
    if isinstance(body, CappedBody) and not body.cap(max_bytes):
        raise too_large
    try:
        raw = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    except RequestEntityTooLarge:
        raise too_large from None
    try:
        data = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # UnicodeDecodeError included
        raise _InvalidJson("the body is not valid JSON: send a JSON object") from None
    if _SURROGATE_ESCAPE.search(raw) and not _encodable(data):
        raise _InvalidJson(
            "the body has an unpaired UTF-16 surrogate escape (\\ud800-\\udfff), which is not text"
        )
    if not isinstance(data, dict):
        raise ValidationError("the body must be a JSON object")
    return data


async def read_body(shape: type[S], max_bytes: int = MAX_BODY_BYTES) -> S:
    """The request's JSON object as ``shape`` (:func:`json_body`, then
    :func:`~agentws.doors.api.shapes.bodies.read_shape`).

    Error handling:
        ValidationError saying the first thing wrong with the body.
    """
    return read_shape(shape, await json_body(max_bytes))


def _encodable(data: Any) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def query_number(name: str, default: int, *, low: int = 1, high: int = _MAX_LIMIT) -> int:
    """The request's query parameter ``name`` as a whole number, ``default`` when absent.

    Error handling:
        ValidationError naming ``name`` for anything but ASCII digits from ``low`` to ``high``.
    """
    text = request.args.get(name)
    if text is None or text == "":
        return default
    return whole_number(text, name=name, low=low, high=high)


def page_of(items: list[Any]) -> dict[str, Any]:
    """One page of ``items`` by the request's ``limit`` and ``cursor``."""
    limit = query_number("limit", 50)
    # A cursor is an offset this list gave; no list is longer than this.
    start = query_number("cursor", 0, low=0, high=10**9)
    end = start + limit
    return {"items": items[start:end], "next_cursor": str(end) if end < len(items) else None}


@overload
def enum_value(kind: type[EnumT], name: str, value: str) -> EnumT: ...
@overload
def enum_value(kind: type[EnumT], name: str, value: str | None) -> EnumT | None: ...
def enum_value(kind: type[EnumT], name: str, value: str | None) -> EnumT | None:
    """``kind(value)``; None for None.

    Error handling:
        ValidationError naming the allowed values.
    """
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(v.value for v in kind)
        raise ValidationError(f"{name} must be one of {allowed}") from None
