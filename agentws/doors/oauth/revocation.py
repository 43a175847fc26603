"""``/oauth/revoke`` (RFC 7009), for public clients too.

The SDK's own handler requires a ``client_secret`` field in the form even
from a public client, which has none and (RFC 7009 §2.1) sends only its
``client_id``; such a request would be refused with ``invalid_request``.
This one authenticates the client as the SDK does (its
:class:`~mcp.server.auth.middleware.client_auth.ClientAuthenticator`: a
confidential client must present its secret) and otherwise behaves as the
SDK's: the token is looked up as an access token, then as a refresh token
(the hint first), revoked if it is the client's, and the answer is 200
whether or not anything was found (§2.2). A client the registration policy
no longer serves (``AGENTWS_OAUTH_REGISTRATION``) may still revoke its own
tokens.
"""

from __future__ import annotations

from typing import Any

import attrs
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentws.core.errors import error_body
from agentws.oauth.provider import Provider

__all__ = ["Revocation"]

_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _refused(status: int, error: str, description: str) -> Response:
    """A refusal in RFC 6749's shape (RFC 7009 §2.2.1), never cached."""
    return JSONResponse(error_body(error, description, oauth=True), status, _NO_STORE)


@attrs.frozen
class _AnyStoredClient:
    """The provider as the authenticator sees it here: every stored client, served or not."""

    provider: Provider

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return await self.provider.revoking_client(client_id)


@attrs.frozen
class Revocation:
    provider: Provider

    async def handle(self, request: Request) -> Response:
        clients = _AnyStoredClient(self.provider)
        try:
            client = await ClientAuthenticator(clients).authenticate_request(request)  # type: ignore[arg-type]
        except AuthenticationError as exc:
            return _refused(401, "invalid_client", exc.message)
        form = await request.form()
        token = form.get("token")
        if not isinstance(token, str) or not token:
            return _refused(400, "invalid_request", "the 'token' to revoke is missing")
        hint = form.get("token_type_hint")
        loaders: list[Any] = [
            self.provider.load_access_token,
            lambda value: self.provider.load_refresh_token(client, value),
        ]
        if hint == "refresh_token":
            loaders.reverse()
        for load in loaders:
            found = await load(token)
            if found is not None:
                if found.client_id == client.client_id:
                    await self.provider.revoke_token(found)
                break
        return Response(status_code=200, headers=_NO_STORE)
