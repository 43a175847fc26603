"""Connecting an OAuth connector: the admin consents upstream, agentws keeps the grant.

:func:`authorize_connector` runs the MCP authorization flow of
:mod:`agentws.connectors.upstream_auth` once, in whichever process an admin
started it (the service for the dashboard's Connect and the admin API, the
CLI for ``agentws connector authorize``):

1. discovery and registration (a Client ID Metadata Document agentws serves
   at :func:`client_document_url` when its base URL is https, else dynamic
   registration, else the client an admin entered);
2. the authorization URL is shown to the admin (:class:`Authorizer`); its
   ``state`` is kept as a hash in a :class:`~agentws.domain.models.ConnectorAuthorization`
   row, valid :data:`AUTHORIZATION_S`, with who started it and from which
   dashboard session; the PKCE verifier never leaves the flow's memory;
3. the upstream sends the admin's browser back to :data:`CALLBACK_PATH`
   under agentws's base URL, on any instance: :func:`answer_callback` writes
   the code into the row, once (a signed-in admin, the same dashboard
   session when one started it);
4. the flow, polling its row, takes the code, exchanges it (``resource``
   and ``iss`` checked by the SDK), lists the upstream's tools, and keeps
   the grant sealed (:func:`~agentws.connectors.grants.store_grant`).

A ``client_credentials`` connector needs no person: authorizing it fetches
a token and lists the tools the same way.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

import attrs
import httpx2
import mcp_types as types
import trio
from mcp.client.auth import (
    AuthorizationCodeResult,
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from mcp.client.session import ClientSession
from mcp.shared.auth import OAuthToken

from agentws.common.audit import record
from agentws.connectors.grants import (
    GrantsStore,
    client_auth,
    client_of,
    open_tokens,
    store_grant,
)
from agentws.connectors.remote_mcp import (
    RemoteError,
    describe,
    list_all_tools,
    negotiate,
    open_transport,
)
from agentws.connectors.upstream_auth import (
    CLIENT_NAME,
    MemoryGrant,
    NeedsAuthorization,
    UpstreamAuth,
    auth_transport,
    upstream_auth,
)
from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.core.errors import AgentwsError, ValidationError, sole_exception
from agentws.core.redaction import redact_url, upstream_excerpt
from agentws.domain.models import Connector, ConnectorAuthorization, ConnectorGrant
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.settings.secret_box import SecretBox

__all__ = [
    "AUTHORIZATION_S",
    "CALLBACK_PATH",
    "CLIENT_DOCUMENT_PATH",
    "answer_callback",
    "authorize_connector",
    "client_document",
    "client_document_url",
    "disconnect_connector",
    "redirect_uri",
    "state_hash",
    "upstream_settings",
]

log = logging.getLogger("agentws.connectors")

#: Where the upstream sends the admin back (under agentws's base URL).
CALLBACK_PATH = "/dashboard/connectors/authorized"
#: agentws's Client ID Metadata Document (under its base URL).
CLIENT_DOCUMENT_PATH = "/dashboard/connectors/client.json"
#: How long an admin has to consent on the upstream's page.
AUTHORIZATION_S = 600.0
# How often a flow looks for its answer in the store (any instance may take the callback).
_POLL_S = 0.2
# Deleting an authorization's row when its flow ends, cancelled or not.
_CLEANUP_S = 5.0
# One request of the flow (discovery, registration, token): the upstream's time.
_REQUEST_S = 30.0


def redirect_uri(base_url: str) -> str:
    return base_url.rstrip("/") + CALLBACK_PATH


def client_document_url(base_url: str) -> str | None:
    """agentws's Client ID Metadata Document, if it can be one (an https base URL)."""
    if not base_url.startswith("https://"):
        return None
    return base_url.rstrip("/") + CLIENT_DOCUMENT_PATH


def client_document(base_url: str) -> dict[str, object]:
    """The Client ID Metadata Document itself: who agentws is as an OAuth client."""
    return {
        "client_id": client_document_url(base_url) or "",
        "client_name": CLIENT_NAME,
        "client_uri": base_url,
        "redirect_uris": [redirect_uri(base_url)],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8")).hexdigest()


def upstream_settings(connector: Connector) -> UpstreamAuth:
    """The connector's auth mode and settings, as :func:`upstream_auth` takes them."""
    given = connector.auth_settings
    return UpstreamAuth(
        mode=connector.auth,  # type: ignore[arg-type]  # checked when saved
        client_id=given.get("client_id"),
        client_auth=given.get("client_auth"),
        scope=given.get("scope"),
        issuer=given.get("issuer"),
        signing_algorithm=given.get("signing_algorithm", "RS256"),
    )


@attrs.define(eq=False)
class _StoredAuthorizer:
    """Shows the admin the upstream's page; takes the answer the callback stored."""

    store: GrantsStore
    box: SecretBox
    connector: Connector
    started_by: str
    session_hash: str | None
    show: Callable[[str], Awaitable[None]]
    #: Scopes asked for besides what the flow chose (it picks the upstream's challenge).
    extra_scope: list[str] = attrs.field(factory=list)
    _row: ConnectorAuthorization | None = None
    _state: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        authorization_url = _with_scope(authorization_url, self.extra_scope)
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        if not states:
            raise RemoteError("the authorization URL carries no state")
        self._state = states[0]
        now = utcnow()
        self._row = await self.store.insert(
            ConnectorAuthorization(
                connector_id=self.connector.id,
                state_hash=state_hash(self._state),
                started_by=self.started_by,
                session_hash=self.session_hash,
                created_at=now,
                expires_at=now + timedelta(seconds=AUTHORIZATION_S),
            )
        )
        await self.show(authorization_url)

    async def callback(self) -> AuthorizationCodeResult:
        row = self._row
        if row is None or self._state is None:
            raise RemoteError("no authorization was started")
        try:
            with trio.fail_after(AUTHORIZATION_S):
                while (
                    answered := await self.store.get(ConnectorAuthorization, row.id)
                ).code is None:
                    if answered.error is not None:
                        raise NeedsAuthorization(
                            f"connector {self.connector.name!r}: the upstream refused the "
                            f"authorization ({answered.error})"
                        )
                    await trio.sleep(_POLL_S)
        except trio.TooSlowError:
            raise NeedsAuthorization(
                f"connector {self.connector.name!r}: nobody consented within "
                f"{AUTHORIZATION_S / 60:g} minutes; authorize it again"
            ) from None
        finally:
            # Single use, even when the flow is cancelled; a bound on a store that hangs.
            with trio.move_on_after(_CLEANUP_S, shield=True):
                await self.store.delete(ConnectorAuthorization, row.id)
        code = answered.code
        assert code is not None  # noqa: S101 - the loop ends on a code
        return AuthorizationCodeResult(
            code=self.box.open(code), state=self._state, iss=answered.iss
        )


def _with_scope(url: str, extra: list[str]) -> str:
    """``url`` asking for ``extra`` scopes too (an authorization request's ``scope``)."""
    if not extra:
        return url
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    asked = next((value for key, value in query if key == "scope"), "")
    scope = " ".join(dict.fromkeys([*asked.split(), *extra]))
    kept = [(key, value) for key, value in query if key != "scope"]
    return urlunsplit(parts._replace(query=urlencode([*kept, ("scope", scope)])))


async def authorize_connector(
    store: GrantsStore,
    box: SecretBox,
    settings: Settings,
    connector: Connector,
    *,
    workspace_slug: str,
    started_by: str,
    show: Callable[[str], Awaitable[None]],
    base_url: str,
    session_hash: str | None = None,
    resolve: Resolver = system_resolver,
) -> list[types.Tool]:
    """Authorize ``connector`` upstream and keep its grant; the tools it lists now.

    Args:
        show: given the upstream's authorization URL, for the admin to open
            (``oauth``); never called for ``client_credentials``.
        base_url: agentws's own, as the admin's browser reaches it: the
            callback and the client metadata document are under it.
        session_hash: the dashboard session that started it, which alone
            may then complete it.

    Error handling:
        ValidationError for a ``static`` connector; NeedsAuthorization when
        the upstream refused or nobody consented in time; RemoteError and
        UnsafeUrlError as for any connection to it.
    """
    if connector.auth == "static" or connector.url is None:
        raise ValidationError(
            f"connector {connector.name!r} authenticates with a static secret: nothing to authorize"
        )
    base = base_url
    settings_ = upstream_settings(connector)
    held = await store.find(ConnectorGrant, connector_id=connector.id)
    # Registered afresh each time (dynamic registration), or its metadata document
    # is the client: one removed at the upstream (a revocation) never blocks it.
    grant = MemoryGrant()
    # What the admin set, and what the upstream asked for that the last grant
    # lacked (403 insufficient_scope), besides the scope the flow chooses.
    wanted = held.wanted_scope if held is not None else None
    extra = f"{settings_.scope or ''} {wanted or ''}".split()
    authorizer = _StoredAuthorizer(store, box, connector, started_by, session_hash, show, extra)
    auth = upstream_auth(
        connector.url,
        settings_,
        grant,
        secret=box.open(connector.secret) if connector.secret else None,
        redirect_uri=redirect_uri(base),
        client_metadata_url=client_document_url(base),
        authorizer=authorizer,
    )
    allowlist = settings.connector_allowlist
    guard = auth_transport(allowlist, resolve)
    try:
        async with (
            open_transport(
                "streamable_http",
                connector.url,
                {},
                guard,
                timeout_s=_REQUEST_S,
                stream_read_timeout_s=_REQUEST_S,
                auth=auth,
            ) as (read, write),
            ClientSession(read, write) as session,
        ):
            await negotiate(session, "streamable_http", connector.protocol)
            tools = await list_all_tools(session)
    except Exception as exc:
        raise _failure(connector, exc) from None
    if grant.tokens is None:
        raise NeedsAuthorization(f"connector {connector.name!r}: the upstream issued no token")
    metadata = auth.context.oauth_metadata if isinstance(auth, OAuthClientProvider) else None
    resource = auth.context.get_resource_url() if isinstance(auth, OAuthClientProvider) else None
    await store_grant(
        store,
        box,
        connector,
        tokens=grant.tokens,
        client=grant.client_info,
        token_endpoint=str(metadata.token_endpoint) if metadata else None,
        resource=resource,
        revocation_endpoint=(
            str(metadata.revocation_endpoint) if metadata and metadata.revocation_endpoint else None
        ),
    )
    target = f"{workspace_slug}/{connector.name}"
    await record(store, connector.workspace_id, started_by, "connector.authorize", target)
    return tools


async def disconnect_connector(
    store: GrantsStore,
    box: SecretBox,
    settings: Settings,
    connector: Connector,
    *,
    workspace_slug: str,
    actor: str,
    resolve: Resolver = system_resolver,
) -> bool:
    """Revoke ``connector``'s tokens at the upstream (RFC 7009, when it offers revocation)
    and delete its grant; audited as ``connector.disconnect``. Whether the upstream
    confirmed the revocation (the grant is deleted either way)."""
    grant = await store.find(ConnectorGrant, connector_id=connector.id)
    if grant is None:
        return False
    revoked = False
    tokens = open_tokens(box, grant)
    if tokens is not None and grant.revocation_endpoint:
        transport = auth_transport(settings.connector_allowlist, resolve)
        async with httpx2.AsyncClient(transport=transport, timeout=_REQUEST_S) as http:
            revoked = await _revoke(http, box, grant, tokens)
    await store.delete(ConnectorGrant, grant.id)
    target = f"{workspace_slug}/{connector.name}"
    await record(
        store, connector.workspace_id, actor, "connector.disconnect", target, revoked=revoked
    )
    return revoked


async def _revoke(
    http: httpx2.AsyncClient, box: SecretBox, grant: ConnectorGrant, tokens: OAuthToken
) -> bool:
    """Each token revoked at the grant's revocation endpoint; whether every one was."""
    endpoint = grant.revocation_endpoint or ""
    client = client_of(box, grant)
    every = True
    pairs = [(tokens.refresh_token, "refresh_token"), (tokens.access_token, "access_token")]
    for token, hint in pairs:
        if not token:
            continue
        data = {"token": token, "token_type_hint": hint}
        headers = client_auth(client, data)
        try:
            answer = await http.post(endpoint, data=data, headers=headers)
        except (httpx2.HTTPError, AgentwsError) as exc:
            log.warning("cannot revoke a connector token at %s: %s", endpoint, exc)
            every = False
            continue
        every = every and answer.status_code == 200
    return every


def _failure(connector: Connector, exc: Exception) -> AgentwsError:
    """What a failed authorization is reported as: the cause, in the connector's words."""
    leaf = sole_exception(exc, first_of_several=True)
    if isinstance(leaf, AgentwsError):
        return leaf
    if isinstance(leaf, OAuthFlowError | OAuthRegistrationError | OAuthTokenError):
        return NeedsAuthorization(
            f"connector {connector.name!r}: the upstream's authorization failed: "
            f"{upstream_excerpt(str(leaf))}"
        )
    return RemoteError(
        f"connector {connector.name!r}: cannot authorize at {redact_url(connector.url or '')}: "
        f"{describe(leaf)}"
    )


async def answer_callback(
    store: GrantsStore,
    box: SecretBox,
    *,
    state: str,
    code: str | None,
    iss: str | None,
    error: str | None,
    session_hash: str,
) -> ConnectorAuthorization | None:
    """Hand the upstream's answer to the flow waiting on ``state``; the authorization
    answered, or None if no flow waits on it (used, expired, another session's, unknown)."""
    pending = await store.find(ConnectorAuthorization, state_hash=state_hash(state))
    if pending is None or (
        pending.session_hash is not None and pending.session_hash != session_hash
    ):
        return None
    if code is None and error is None:
        error = "the upstream sent neither a code nor an error"
    return await store.answer_authorization(
        pending.state_hash,
        now=utcnow(),
        code=box.seal(code) if code is not None else None,
        iss=iss,
        error=error,
    )
