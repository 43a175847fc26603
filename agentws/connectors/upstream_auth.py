"""How a remote MCP connector proves who it is upstream: its auth mode, made an ``httpx2.Auth``.

A remote MCP connector authenticates as itself (the connector's identity,
shared by its groups, as a team's bot account would be; DESIGN.md §11):

- ``static``: a secret header pasted by an admin
  (:func:`~agentws.connectors.admin.connector_headers`); no auth flow;
- ``oauth``: the MCP authorization flow, authorization code with PKCE S256;
- ``client_credentials``: the client-credentials grant, the client
  authenticated with its secret (``client_secret_basic`` or
  ``client_secret_post``) or a signed JWT (``private_key_jwt``).

The flows are the ``mcp`` SDK's OAuth client (``OAuthClientProvider`` and
its client-credentials extensions): discovery from the 401's
``resource_metadata`` and the well-known paths (RFC 9728, then RFC 8414 and
OpenID discovery with the 2025-03-26 fallbacks), registration by a Client
ID Metadata Document, dynamic registration (RFC 7591) or a client an admin
registered, ``resource`` (RFC 8707) on every request, the issuer checked
(RFC 9207), step-up on ``insufficient_scope``, refresh ahead of expiry and
on a 401, a rotated refresh token kept. What is agentws's is around it:

- every request of a flow (discovery, metadata, registration, token, each
  redirect hop) goes through the link's own HTTP client, so through the URL
  guard, and :class:`HttpsOnly` refuses plain HTTP to a host the allowlist
  does not name;
- the grant (tokens, the registered client) lives in a
  :class:`~mcp.client.auth.TokenStorage` the caller gives: sealed in the
  store for a connector, in memory for a one-off client;
- the authorization step itself (sending a person to the upstream's consent
  page and taking the code back) is an :class:`Authorizer`; a link has none,
  so a connector whose grant is gone fails with :class:`NeedsAuthorization`
  rather than waiting for a person.
"""

from __future__ import annotations

import ipaddress
import warnings
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol, get_args

import attrs
import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import AnyUrl

from agentws.connectors.url_guard import GuardedTransport, Resolver
from agentws.core.errors import UnsafeUrlError, UpstreamError, ValidationError
from agentws.domain.allowlist import Allowlist

__all__ = [
    "AUTH_MODES",
    "AuthMode",
    "Authorizer",
    "ClientAuthMethod",
    "HttpsOnly",
    "MemoryGrant",
    "NeedsAuthorization",
    "UpstreamAuth",
    "auth_transport",
    "upstream_auth",
]

AuthMode = Literal["static", "oauth", "client_credentials"]
AUTH_MODES: tuple[str, ...] = get_args(AuthMode)
#: How the client authenticates at the token endpoint.
ClientAuthMethod = Literal["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]
_CLIENT_AUTH_METHODS: tuple[str, ...] = get_args(ClientAuthMethod)

#: The name agentws gives itself when it registers as a client.
CLIENT_NAME = "agentws"


class NeedsAuthorization(UpstreamError):
    """The connector has no usable grant: an admin must authorize it again."""

    code = "needs_authorization"


class Authorizer(Protocol):
    """Sends a person to the upstream's consent page and brings the answer back."""

    async def redirect(self, authorization_url: str) -> None:
        """Show ``authorization_url`` to the person who authorizes (or follow it)."""

    async def callback(self) -> AuthorizationCodeResult:
        """The ``code``, ``state`` and ``iss`` the upstream redirected back with."""


@attrs.frozen
class UpstreamAuth:
    """A remote MCP connector's auth mode and its settings (none of them secret).

    The client secret or private key, when there is one, is the connector's
    sealed secret, handed to :func:`upstream_auth` opened.
    """

    mode: AuthMode = "static"
    #: A client registered in advance (required for ``client_credentials``).
    client_id: str | None = None
    #: How the client authenticates at the token endpoint.
    client_auth: ClientAuthMethod | None = None
    #: The scope to ask for; None: what the upstream challenges or advertises.
    scope: str | None = None
    #: The issuer the pre-registered client belongs to; None: the one discovery finds.
    issuer: str | None = None
    #: ``private_key_jwt``'s signing algorithm.
    signing_algorithm: str = "RS256"

    def settings(self) -> dict[str, str]:
        """The settings as a connector keeps them (those given)."""
        given = {
            "client_id": self.client_id,
            "client_auth": self.client_auth,
            "scope": self.scope,
            "issuer": self.issuer,
        }
        kept = {k: v for k, v in given.items() if v}
        if self.client_auth == "private_key_jwt":
            kept["signing_algorithm"] = self.signing_algorithm
        return kept

    def check(self, *, has_secret: bool) -> None:
        """ValidationError naming what does not fit together."""
        if self.mode not in AUTH_MODES:
            raise ValidationError(f"auth mode {self.mode!r} is not one of {', '.join(AUTH_MODES)}")
        if self.client_auth is not None and self.client_auth not in _CLIENT_AUTH_METHODS:
            raise ValidationError(
                f"client authentication {self.client_auth!r} is not one of "
                f"{', '.join(_CLIENT_AUTH_METHODS)}"
            )
        if self.mode == "client_credentials":
            if not self.client_id:
                raise ValidationError("client credentials need the client's id (--client-id)")
            if not has_secret:
                raise ValidationError(
                    "client credentials need the client's secret or private key "
                    "(--secret-env VAR or --secret-stdin)"
                )
            if self.client_auth == "none":
                raise ValidationError("client credentials need the client to authenticate")
        if self.mode != "static" and has_secret and not self.client_id:
            raise ValidationError("a client secret belongs to a client: give --client-id too")


@attrs.define
class MemoryGrant:
    """A grant kept in memory (a ``TokenStorage``): a one-off client's, or a test's."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@attrs.frozen
class HttpsOnly(httpx2.AsyncBaseTransport):
    """Refuses plain HTTP to a host the allowlist does not name; passes the rest on.

    An OAuth flow sends credentials and tokens: over HTTP only to hosts an
    operator trusts (a loopback test server, a network of their own).
    """

    inner: httpx2.AsyncBaseTransport
    allowlist: Allowlist

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme == "http" and not self._trusted(url.host):
            raise UnsafeUrlError(
                f"{url.host} is reached over plain HTTP, which an OAuth connector uses only "
                "with hosts AGENTWS_CONNECTOR_ALLOWLIST names: use https"
            )
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _trusted(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return self.allowlist.names_host(host)
        return self.allowlist.names_address(address)


def auth_transport(
    allowlist: Allowlist, resolve: Resolver, connections: int | None = None
) -> httpx2.AsyncBaseTransport:
    """The transport of an OAuth connector's requests: the URL guard, plain HTTP only
    to allow-listed hosts."""
    guard = (
        GuardedTransport(allowlist, resolve=resolve)
        if connections is None
        else GuardedTransport(allowlist, resolve=resolve, connections=connections)
    )
    return HttpsOnly(guard, allowlist)


async def _no_person(url: str) -> None:
    raise NeedsAuthorization(
        "the connector needs authorization: its grant is missing, expired or was revoked "
        "(authorize it again: the Connect button on its page, or `agentws connector authorize`)"
    )


async def _no_callback() -> AuthorizationCodeResult:  # pragma: no cover - _no_person raises first
    raise NeedsAuthorization("the connector needs authorization")


def _pre_registered(
    settings: UpstreamAuth, secret: str | None, redirect_uri: str
) -> OAuthClientInformationFull | None:
    if not settings.client_id:
        return None
    method = settings.client_auth or ("client_secret_basic" if secret else "none")
    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=secret,
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method=method,
        issuer=settings.issuer,
    )


@attrs.define
class _PreRegistered:
    """``storage``, with the admin's pre-registered client until the flow stores another."""

    storage: TokenStorage
    client: OAuthClientInformationFull

    async def get_tokens(self) -> OAuthToken | None:
        return await self.storage.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self.storage.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return await self.storage.get_client_info() or self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self.storage.set_client_info(client_info)


def upstream_auth(
    url: str,
    settings: UpstreamAuth,
    storage: TokenStorage,
    *,
    secret: str | None,
    redirect_uri: str,
    client_metadata_url: str | None,
    authorizer: Authorizer | None = None,
) -> httpx2.Auth | None:
    """The ``httpx2.Auth`` of a link to ``url`` in ``settings``'s mode; None for ``static``.

    Args:
        storage: where the grant is read and kept.
        secret: the client secret or private key (PEM), opened; None if none.
        redirect_uri: agentws's callback, where the upstream sends the person back.
        client_metadata_url: agentws's Client ID Metadata Document (an https
            URL), used as the client id where the upstream supports it; None: not offered.
        authorizer: the person who authorizes; None (a link): a missing
            grant is :class:`NeedsAuthorization`.
    """
    if settings.mode == "static":
        return None
    if settings.mode == "client_credentials":
        return _client_credentials(url, settings, storage, secret)
    pre_registered = _pre_registered(settings, secret, redirect_uri)
    if pre_registered is not None:
        storage = _PreRegistered(storage, pre_registered)
    redirect: Callable[[str], Awaitable[None]] = _no_person
    callback: Callable[[], Awaitable[AuthorizationCodeResult]] = _no_callback
    if authorizer is not None:
        redirect, callback = authorizer.redirect, authorizer.callback
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=settings.scope,
        # Registered as a public client (PKCE), as its metadata document says:
        # an authorization server that issues a secret anyway gets it used.
        token_endpoint_auth_method="none",  # noqa: S106 - a method's name
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=client_metadata_url if pre_registered is None else None,
    )


def _client_credentials(
    url: str, settings: UpstreamAuth, storage: TokenStorage, secret: str | None
) -> httpx2.Auth:
    if not settings.client_id or not secret:
        raise ValidationError("client credentials need the client's id and secret")
    # Without an issuer the SDK warns that 3.0 will want one; agentws then
    # takes the authorization server discovery finds, as the admin asked.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if settings.client_auth == "private_key_jwt":
            signed = SignedJWTParameters(
                issuer=settings.client_id,
                subject=settings.client_id,
                signing_key=secret,
                signing_algorithm=settings.signing_algorithm,
            )
            return PrivateKeyJWTOAuthProvider(
                server_url=url,
                storage=storage,
                client_id=settings.client_id,
                assertion_provider=signed.create_assertion_provider(),
                scope=settings.scope,
                issuer=settings.issuer,
            )
        method = settings.client_auth or "client_secret_basic"
        if method not in ("client_secret_basic", "client_secret_post"):
            raise ValidationError(f"client credentials cannot authenticate with {method!r}")
        return ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=settings.client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            scope=settings.scope,
            issuer=settings.issuer,
        )
