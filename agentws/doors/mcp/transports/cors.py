"""CORS for the MCP door: which browser origins may call it from their pages.

Browser MCP clients (the MCP Inspector, web apps) send a preflight
``OPTIONS`` before a request with an ``Authorization`` header or a JSON
body, and can read only the response headers the server exposes
(``Mcp-Session-Id`` among them). Only origins configured in
``AGENTWS_CORS_ORIGINS`` (same patterns as ``AGENTWS_ALLOWED_ORIGINS``) get
a grant; a preflight from any other origin is refused with 403 and no CORS
header, so the browser blocks the request. Without the setting no origin
is granted anything.
"""

from __future__ import annotations

from typing import Any

import attrs
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
)

from agentws.doors.mcp.transports.door_requests import DoorRequest
from agentws.doors.mcp.transports.guard import origin_matches
from agentws.http.asgi import HttpRefusal, Send, respond
from agentws.settings.config import Settings

__all__ = ["Cors", "answer_preflight", "with_cors"]

_METHODS = "GET, POST, DELETE, OPTIONS"
# The request headers MCP clients send (the 2026-07-28 ones too; a preflight
# names each Mcp-Param-* header in full, so those are matched by prefix).
_HEADERS = (
    "authorization",
    "content-type",
    "accept",
    "mcp-session-id",
    MCP_PROTOCOL_VERSION_HEADER,
    "last-event-id",
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
)
_EXPOSED = b"Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"
# Browsers cache a preflight this long (seconds); Chromium caps it at 7200.
_MAX_AGE = b"7200"


@attrs.frozen
class Cors:
    """The origins granted CORS (none when empty)."""

    origins: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: Settings) -> Cors:
        return cls(settings.cors_origins or ())

    def grants(self, origin: str | None) -> bool:
        """Whether ``origin`` (a request's ``Origin``) is granted CORS."""
        return bool(origin) and any(origin_matches(p, origin or "") for p in self.origins)

    def preflight(
        self, origin: str | None, requested: str | None
    ) -> list[tuple[bytes, bytes]] | None:
        """The headers of a preflight's 204 (besides :meth:`response_headers`), or None.

        Args:
            origin: the preflight's ``Origin``.
            requested: its ``Access-Control-Request-Headers``: the
                ``Mcp-Param-*`` ones it names are allowed besides the MCP
                headers (any other is left out, and the browser says so).
        """
        if not self.grants(origin):
            return None
        prefix = MCP_PARAM_HEADER_PREFIX.lower()
        params = [
            name
            for name in (n.strip().lower() for n in (requested or "").split(","))
            if name.startswith(prefix)
        ]
        allowed = ", ".join(dict.fromkeys([*_HEADERS, *params]))
        return [
            (b"access-control-allow-methods", _METHODS.encode()),
            (b"access-control-allow-headers", allowed.encode()),
            (b"access-control-max-age", _MAX_AGE),
        ]

    def response_headers(self, origin: str) -> list[tuple[bytes, bytes]]:
        """What an answer to a granted origin carries (check :meth:`grants` first)."""
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", _EXPOSED),
            (b"vary", b"Origin"),
        ]


def with_cors(send: Send, granted: list[tuple[bytes, bytes]]) -> Send:
    """``send`` adding ``granted`` (:meth:`Cors.response_headers`) to the response's head."""

    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            # A relayed answer (another instance's session) has the grant already.
            if not any(name.lower() == b"access-control-allow-origin" for name, _ in headers):
                message = {**message, "headers": [*headers, *granted]}
        await send(message)

    return send_with_cors


async def answer_preflight(cors: Cors, request: DoorRequest) -> None:
    """Answer a preflight ``OPTIONS``: 204 with the grant, or 403 with none.

    The grant's ``Access-Control-Allow-Origin`` comes from the door's
    ``send``, wrapped with :func:`with_cors` for every granted origin.
    """
    origin = request.header(b"origin")
    granted = cors.preflight(origin, request.header(b"access-control-request-headers"))
    if origin is None or granted is None:
        raise HttpRefusal(
            403,
            "forbidden",
            f"no CORS for origin {origin!r}: browser pages must be from an origin "
            "in AGENTWS_CORS_ORIGINS",
        )
    await respond(request.send, 204, b"", granted)
