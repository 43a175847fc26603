"""``/oauth/token``'s ``resource`` (RFC 8707 §2.2): a token for the endpoint consented to, or none.

A client may name the resource again when it exchanges a code or a
refresh token. The SDK's token handler does not compare it with the one
the consent was for; this wrapper does, before the handler reads the
request: a code or refresh token presented for another endpoint is
refused with ``invalid_target``, and nothing is spent. (Without this the
client would get a token that works only where the consent said, which
is safe but says nothing of the mistake.)
"""

from __future__ import annotations

from urllib.parse import parse_qs

import attrs

from agentws.core.errors import error_body
from agentws.domain.models import OAuthGrant, OAuthRefreshToken
from agentws.domain.rules import hash_secret
from agentws.http.asgi import ASGIApp, Receive, Scope, Send, replaying, respond_json
from agentws.store.sql_records import RecordStore

__all__ = ["TokenTarget"]

# The SDK's handlers take bodies up to 1 MiB; a token request is under 2 KiB.
_MAX_READ = 64 * 1024


@attrs.frozen
class TokenTarget:
    """Wraps the token endpoint ``app``: refuses a ``resource`` other than the consent's."""

    app: ASGIApp
    store: RecordStore

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more and size <= _MAX_READ:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, replaying(message, receive), send)
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if not more and await self._elsewhere(body):
            answer = error_body(
                "invalid_target",
                "'resource' is not the endpoint this grant was consented for",
                oauth=True,
            )
            await respond_json(send, 400, answer, [("Cache-Control", "no-store")])
            return
        last = {"type": "http.request", "body": body, "more_body": more}
        await self.app(scope, replaying(last, receive), send)

    async def _elsewhere(self, body: bytes) -> bool:
        try:
            form = parse_qs(body.decode("utf-8"), max_num_fields=50)
        except (UnicodeDecodeError, ValueError):
            return False  # the handler answers a malformed request
        resource = (form.get("resource") or [""])[0]
        grant_type = (form.get("grant_type") or [""])[0]
        if not resource:
            return False
        if grant_type == "authorization_code" and (code := (form.get("code") or [""])[0]):
            grant = await self.store.find(OAuthGrant, code_hash=hash_secret(code))
            return grant is not None and grant.resource != resource
        if grant_type == "refresh_token" and (token := (form.get("refresh_token") or [""])[0]):
            found = await self.store.find(OAuthRefreshToken, token_hash=hash_secret(token))
            return found is not None and found.resource != resource
        return False
