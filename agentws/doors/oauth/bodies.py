"""How the OAuth door reads a request's body, before the ``mcp`` SDK's handlers see it.

The SDK's handlers read bodies through Starlette, which waits for as long as
a client trickles its body in, turns a client that leaves half-way into an
exception (a 500 and a traceback in the log), and parses a form of any
number of fields (past 1,000, an exception too). So the door reads every
body first, as the other doors do (:class:`~agentws.http.asgi.BodyReader`: one
deadline for the whole body, ``AGENTWS_BODY_READ_TIMEOUT_S``, and a size
cap), checks a form's shape, and hands the handler the body whole.

Refusals are OAuth's error bodies (``{"error": "invalid_request",
"error_description": …}``): 413 over the cap, 408 past the deadline (the
connection is closed: the rest of the body is never read), 400 for a
multipart form or one with too many fields. A client that left is not
answered. Each is counted in ``agentws_rejected_requests`` (door ``oauth``).
"""

from __future__ import annotations

import json

from agentws.core.errors import error_body
from agentws.core.metrics import REJECTED
from agentws.http.asgi import (
    BodyReader,
    BodyRefusals,
    HttpRefusal,
    Receive,
    Scope,
    Send,
    header,
    late_body,
    replaying,
)

__all__ = ["MAX_BODY_BYTES", "MAX_FORM_FIELDS", "read_whole_body"]

#: The largest body taken. A token request is under 2 KiB; a registration with
#: every field at its bound (agentws.oauth.client_rules) is under 48 KiB.
MAX_BODY_BYTES = 64 * 1024
#: The most fields a form may have: a token request has about eight.
MAX_FORM_FIELDS = 100
# The endpoints that take a form (RFC 6749 §3.2, RFC 7009 §2.1; /authorize by POST).
_FORM_PATHS = frozenset({"/oauth/token", "/oauth/revoke", "/oauth/authorize"})
_METHODS_WITHOUT_BODY = frozenset({"GET", "HEAD", "OPTIONS"})
_CLOSE = [("Connection", "close")]

_REFUSALS = BodyRefusals(
    too_large=lambda limit: HttpRefusal(
        413, "too_large", f"the request body may be at most {limit} bytes"
    ),
    late=lambda timeout_s: late_body(timeout_s, what="the request body", headers=_CLOSE),
    gone=lambda: HttpRefusal(400, "disconnected", "the client went away"),
)


async def read_whole_body(
    scope: Scope, receive: Receive, send: Send, timeout_s: float
) -> Receive | None:
    """A ``receive`` that gives the request's whole body at once; None if it was refused.

    Args:
        scope, receive, send: the request's, as the door got them.
        timeout_s: how long the whole body may take to arrive.

    Returns:
        What the SDK's handler should read the request from: the body, read
        and checked, as one message, then whatever ``receive`` gives next.
        The same ``receive`` for a request that carries no body (``GET``).

    Error handling:
        A refused request has been answered (or, if the client left, not)
        when this returns None; nothing else is to be sent.
    """
    if scope.get("method", "GET") in _METHODS_WITHOUT_BODY:
        return receive
    reader = BodyReader(receive, timeout_s)
    try:
        body = await reader.read(header(scope, b"content-length"), MAX_BODY_BYTES, _REFUSALS)
        if scope.get("path") in _FORM_PATHS:
            _check_form(scope, body)
    except HttpRefusal as refusal:
        REJECTED.labels("oauth", refusal.code).inc()
        if refusal.code != "disconnected":  # nobody is left to answer
            await _refuse(reader, scope, send, refusal)
        return None
    return replaying({"type": "http.request", "body": body, "more_body": False}, receive)


def _check_form(scope: Scope, body: bytes) -> None:
    content_type = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        raise HttpRefusal(
            400,
            "form_encoding",
            "send the form as application/x-www-form-urlencoded (RFC 6749 §3.2)",
        )
    if body.count(b"&") >= MAX_FORM_FIELDS:
        raise HttpRefusal(
            400, "too_many_fields", f"the form has more than {MAX_FORM_FIELDS} fields"
        )


async def _refuse(reader: BodyReader, scope: Scope, send: Send, refusal: HttpRefusal) -> None:
    """Answer ``refusal``; if the body is still coming, drop it meanwhile and close."""
    body = json.dumps(error_body("invalid_request", refusal.message, oauth=True)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(k.lower().encode(), v.encode()) for k, v in refusal.headers]
    await _send(reader.answering(scope, send), refusal.status, headers, body)


async def _send(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
