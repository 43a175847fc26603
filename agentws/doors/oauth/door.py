"""The OAuth door: discovery documents and the authorization server's endpoints.

Plain ASGI in front of the MCP door and Quart, taking only its own paths:

- ``/.well-known/oauth-protected-resource/mcp/g/<workspace>/<group>``: a group
  endpoint's protected-resource metadata (RFC 9728, the path-suffixed form
  the endpoint's 401 points to), and ``/.well-known/oauth-protected-resource``
  for the service's root;
- ``/.well-known/oauth-authorization-server[/oauth]`` and the OpenID paths
  clients also try: the authorization server's metadata (RFC 8414);
- ``/oauth/authorize``, ``/oauth/token``, ``/oauth/register`` (RFC 7591) and
  ``/oauth/revoke`` (RFC 7009): the ``mcp`` SDK's own handlers over
  :class:`~agentws.oauth.provider.Provider`.

The issuer is ``<base URL>/oauth``: ``AGENTWS_BASE_URL`` when set (always
behind a proxy), else the scheme and ``Host`` the request came with, so a
service on a loopback port for one developer needs no setting. One set of
handlers is kept per base URL. Every request's body is read whole, within
the body-read deadline and a size cap, before a handler sees it
(:mod:`agentws.doors.oauth.bodies`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import attrs
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.routes import (
    REVOCATION_PATH,
    TOKEN_PATH,
    build_metadata,
    cors_middleware,
    create_auth_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router

from agentws.core.errors import error_body
from agentws.doors.oauth.bodies import read_whole_body
from agentws.doors.oauth.revocation import Revocation
from agentws.doors.oauth.token_target import TokenTarget
from agentws.http.asgi import (
    ASGIApp,
    BodyReader,
    Receive,
    Scope,
    Send,
    base_url_of,
    header,
    respond_json,
)
from agentws.oauth.provider import Provider
from agentws.oauth.resources import PRM_PATH, GroupResolver, endpoint_path
from agentws.oauth.settings import ISSUER_PATH, SCOPES, OAuthSettings
from agentws.settings.config import Settings
from agentws.settings.secret_box import SecretBox
from agentws.store.sql_oauth import OAuthStore
from agentws.store.sql_records import RecordStore
from agentws.store.sql_tokens import TokenStore

__all__ = ["OAuthDoor"]

#: The dashboard's consent page for a grant (see agentws.doors.dashboard.consent).
CONSENT_PATH = "/dashboard/oauth/consent/"
_AS_METADATA = "/.well-known/oauth-authorization-server"
_OIDC = "/.well-known/openid-configuration"
# Every path where clients look for the authorization server's metadata:
# RFC 8414 path-inserted and root, and the OpenID Connect forms.
_METADATA_PATHS = (
    _AS_METADATA + ISSUER_PATH,
    _AS_METADATA,
    _OIDC + ISSUER_PATH,
    ISSUER_PATH + _OIDC,
    _OIDC,
)
_PREFIXES = (ISSUER_PATH + "/", "/.well-known/")
# Keeps the handler sets of this many base URLs (one, unless Host varies).
_MAX_BASES = 16


class _Store(RecordStore, OAuthStore, TokenStore, Protocol):
    """The areas of the store this module uses."""


@attrs.define(eq=False)
class OAuthDoor:
    """Answers OAuth's paths; passes every other request to ``app``."""

    app: ASGIApp
    settings: Settings
    store: _Store
    secret_box: SecretBox | None
    #: Why a request's ``Host`` is refused (the MCP door's DNS-rebinding guard), or None;
    #: given the header and the address the request arrived on (``scope["server"]``).
    host_refusal: Callable[[str | None, object], str | None] | None = None
    _routers: dict[str, Router] = attrs.field(factory=dict, init=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(_PREFIXES):
            await self.app(scope, receive, send)
            return
        refusal = (
            self.host_refusal(header(scope, b"host"), scope.get("server"))
            if self.host_refusal
            else None
        )
        if refusal is not None:
            # The issuer and every URL served here are made from Host when no
            # AGENTWS_BASE_URL is set: only a Host the service answers to counts.
            # Answered before its body is read: the rest is dropped as the answer goes.
            unread = BodyReader(receive, self.settings.body_read_timeout_s)
            answer = error_body("forbidden", refusal, oauth=True)
            await respond_json(unread.answering(scope, send), 403, answer)
            return
        whole = await read_whole_body(scope, receive, send, self.settings.body_read_timeout_s)
        if whole is None:
            return  # refused, and answered
        router = self._router(base_url_of(self.settings, scope))
        await router(cast(Any, scope), cast(Any, whole), cast(Any, send))

    def _router(self, base_url: str) -> Router:
        router = self._routers.get(base_url)
        if router is None:
            if len(self._routers) >= _MAX_BASES:
                self._routers.clear()
            router = self._routers[base_url] = self._build(base_url)
        return router

    def _build(self, base_url: str) -> Router:
        oauth = OAuthSettings.from_settings(self.settings)
        provider = Provider(
            store=self.store,
            settings=oauth,
            groups=GroupResolver(self.store, base_url),
            secret_box=self.secret_box,
            consent_url=lambda grant_id: f"{base_url}{CONSENT_PATH}{grant_id}",
            allowlist=self.settings.connector_allowlist,
        )
        issuer = AnyHttpUrl(base_url + ISSUER_PATH)
        registration = ClientRegistrationOptions(
            enabled=oauth.dynamic_registration,
            valid_scopes=list(SCOPES),
            default_scopes=list(SCOPES),
        )
        revocation = RevocationOptions(enabled=True)
        routes = create_auth_routes(
            cast(Any, provider),
            issuer_url=issuer,
            client_registration_options=registration,
            revocation_options=revocation,
        )
        document = build_metadata(issuer, None, registration, revocation)
        document.client_id_metadata_document_supported = oauth.metadata_documents
        # Both answers to a browser (a code, an error) carry ``iss`` (RFC 9207).
        document.authorization_response_iss_parameter_supported = True
        # Public clients (PKCE, no secret) are the usual MCP client: say they are welcome.
        methods = ["none", "client_secret_post", "client_secret_basic"]
        document.token_endpoint_auth_methods_supported = methods
        document.revocation_endpoint_auth_methods_supported = methods
        metadata = cors_middleware(MetadataHandler(document).handle, ["GET", "OPTIONS"])
        endpoints: list[BaseRoute] = list(routes[1:])
        revoke = Revocation(provider)
        endpoints = [_replaced(route, revoke, self.store) for route in endpoints]
        fallback = Route("/{rest:path}", endpoint=_not_found, methods=["GET", "POST", "OPTIONS"])
        return Router(
            routes=[
                *(
                    Route(path, endpoint=metadata, methods=["GET", "OPTIONS"])
                    for path in _METADATA_PATHS
                ),
                Route(
                    PRM_PATH + "/mcp/g/{workspace}/{group}",
                    endpoint=cors_middleware(
                        self._group_metadata(base_url, issuer), ["GET", "OPTIONS"]
                    ),
                    methods=["GET", "OPTIONS"],
                ),
                Route(
                    PRM_PATH,
                    endpoint=cors_middleware(
                        self._root_metadata(base_url, issuer), ["GET", "OPTIONS"]
                    ),
                    methods=["GET", "OPTIONS"],
                ),
                Mount(ISSUER_PATH, routes=[*endpoints, fallback]),
                fallback,
            ]
        )

    def _group_metadata(self, base_url: str, issuer: AnyHttpUrl) -> Callable[[Request], Any]:
        async def handle(request: Request) -> Response:
            path = f"/mcp/g/{request.path_params['workspace']}/{request.path_params['group']}"
            named = endpoint_path(path)
            if named is None:
                return await _not_found(request)
            metadata = ProtectedResourceMetadata(
                resource=AnyHttpUrl(base_url + path),
                authorization_servers=[issuer],
                scopes_supported=list(SCOPES),
                resource_name=f"agentws {named[0]}/{named[1]}",
            )
            return await ProtectedResourceMetadataHandler(metadata).handle(request)

        return handle

    def _root_metadata(self, base_url: str, issuer: AnyHttpUrl) -> Callable[[Request], Any]:
        metadata = ProtectedResourceMetadata(
            resource=AnyHttpUrl(base_url + "/"),
            authorization_servers=[issuer],
            scopes_supported=list(SCOPES),
            resource_name="agentws",
        )
        return ProtectedResourceMetadataHandler(metadata).handle


def _replaced(route: BaseRoute, revoke: Revocation, store: RecordStore) -> BaseRoute:
    """The SDK's route, or ours where ours does more (see the modules named)."""
    path = getattr(route, "path", None)
    if path == REVOCATION_PATH:  # public clients too (agentws.doors.oauth.revocation)
        endpoint: Any = cors_middleware(revoke.handle, ["POST", "OPTIONS"])
        return Route(path, endpoint=endpoint, methods=["POST", "OPTIONS"])
    if path == TOKEN_PATH and isinstance(
        route, Route
    ):  # RFC 8707 (agentws.doors.oauth.token_target)
        endpoint = TokenTarget(cast(Any, route.endpoint), store)
        return Route(path, endpoint=endpoint, methods=["POST", "OPTIONS"])
    return route


async def _not_found(request: Request) -> Response:
    return JSONResponse(error_body("not_found", "no such OAuth endpoint", oauth=True), 404)
