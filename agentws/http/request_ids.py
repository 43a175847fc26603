"""Request ids: every HTTP request gets one, in its log lines and its answer.

The outermost ASGI layer. It takes a caller's ``X-Request-Id`` when it is a
plausible id (so a proxy's id follows the request through), makes one
otherwise, puts it in the log context of the request's task (see
:mod:`agentws.core.logs`) and sends it back as ``X-Request-Id``.
"""

from __future__ import annotations

import random
import re
from typing import Any

import attrs

from agentws.core.logs import log_context
from agentws.http.asgi import ASGIApp, Receive, Scope, Send

__all__ = ["RequestIds"]


# What a proxy's request id looks like; anything else (long, odd bytes) is replaced.
_PLAUSIBLE = re.compile(rb"[A-Za-z0-9._:-]{8,128}")


@attrs.define(eq=False)
class RequestIds:
    """ASGI middleware: ``X-Request-Id`` in, log context, ``X-Request-Id`` out."""

    app: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = b""
        for key, value in scope["headers"]:
            if key == b"x-request-id":
                request_id = value
                break
        # An id to find a request by in the logs, not a secret: no system randomness needed.
        if not (request_id and _PLAUSIBLE.fullmatch(request_id)):
            request_id = b"%016x" % random.getrandbits(64)
        id_header = (b"x-request-id", request_id)

        async def send_with_id(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", ()) if h[0] != b"x-request-id"]
                headers.append(id_header)
                message = {**message, "headers": headers}
            await send(message)

        with log_context(request_id=request_id.decode("ascii")):
            await self.app(scope, receive, send_with_id)
