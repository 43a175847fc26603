"""The authorization server's storage side: what the ``mcp`` SDK's OAuth handlers ask of it.

The SDK's handlers (:mod:`mcp.server.auth.handlers`) speak the protocol:
they parse and validate ``/authorize``, ``/token``, ``/register`` and
``/revoke`` requests, check PKCE (S256 only), redirect URIs and client
secrets, and answer with the specification's errors. :class:`Provider`
is what they call to remember things:

- a client is one that registered (RFC 7591), one an operator registered,
  or one whose id is the URL of its metadata document
  (:mod:`agentws.oauth.client_metadata`), fetched when first met;
- an authorization request becomes a pending :class:`OAuthGrant` for the
  group its ``resource`` names, and the browser is sent to the dashboard's
  consent page (:mod:`agentws.oauth.consent`), whether that group exists
  or not (the page tells a signed-in administrator);
- a consented grant's code is taken once; its exchange issues an access
  token (an :class:`McpToken` with an expiry, for that group only, at the
  scope the administrator granted) and a refresh token of a new family;
- a refresh token is spent by its use and replaced; a code or refresh
  token presented a second time revokes everything of its family.

Every secret is stored as its SHA-256 only, except a confidential
client's secret, which the SDK compares in the clear: that one is sealed
with the service key, as connector secrets are.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

import attrs
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.core.errors import ConflictError
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import (
    Capability,
    ClientKind,
    GrantStatus,
    McpToken,
    OAuthClient,
    OAuthGrant,
    OAuthRefreshToken,
)
from agentws.domain.rules import hash_secret, new_id, new_secret, utcnow
from agentws.oauth.client_metadata import (
    FRESH_DEFAULT_S,
    MAX_CLIENT_ID_CHARS,
    MetadataDocumentError,
    fetch_metadata_document,
    is_metadata_client_id,
)
from agentws.oauth.client_rules import MAX_NAME_CHARS, METADATA_FIELDS, metadata_problem
from agentws.oauth.clients import LoopbackFriendlyClient
from agentws.oauth.resources import GroupResolver
from agentws.oauth.settings import (
    ACCESS_TOKEN_PREFIX,
    CODE_PREFIX,
    REFRESH_TOKEN_PREFIX,
    SCOPES,
    OAuthSettings,
    highest_scope,
    scopes_up_to,
)
from agentws.settings.secret_box import SecretBox
from agentws.store.sql_oauth import OAuthStore
from agentws.store.sql_records import RecordStore
from agentws.store.sql_tokens import TokenStore

__all__ = ["Provider"]

log = logging.getLogger("agentws.oauth")

# Characters of a token kept as its hint, as static tokens keep.
_HINT_CHARS = 4


class _Store(RecordStore, OAuthStore, TokenStore, Protocol):
    """The areas of the store this module uses."""


def _timestamp(value: datetime) -> int:
    return int(value.timestamp())


@attrs.define(eq=False)
class Provider:
    """The SDK's ``OAuthAuthorizationServerProvider`` over agentws's store."""

    store: _Store
    settings: OAuthSettings
    groups: GroupResolver
    secret_box: SecretBox | None
    #: The consent page's URL for a grant id (the dashboard's).
    consent_url: Any
    #: Where client metadata documents may be fetched from beside public addresses.
    allowlist: Allowlist = attrs.field(factory=Allowlist)
    resolve: Resolver = system_resolver

    # -- clients ---------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client, if it is served now (:meth:`OAuthSettings.admits`); a metadata
        document's, fetched again when its copy is stale."""
        record = await self._stored(client_id)
        if record is not None and not self.settings.admits(record.kind):
            return None
        if is_metadata_client_id(client_id) and self.settings.metadata_documents:
            record = await self._metadata_client(client_id, record)
        return self._information(record) if record is not None else None

    async def revoking_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client as stored, whatever the registration policy is now: a client
        may always give up its own tokens (``/oauth/revoke``)."""
        record = await self._stored(client_id)
        return self._information(record) if record is not None else None

    async def _stored(self, client_id: str) -> OAuthClient | None:
        if len(client_id) > MAX_CLIENT_ID_CHARS or not client_id.isprintable():
            return None  # no client has such an id: not worth a query
        return await self.store.find(OAuthClient, client_id=client_id)

    def _information(self, record: OAuthClient) -> OAuthClientInformationFull:
        info = dict(record.metadata)
        info["client_id"] = record.client_id
        # A client that registered no scope may ask for any of ours (consent decides).
        info.setdefault("scope", " ".join(SCOPES))
        if record.sealed_secret is not None and self.secret_box is not None:
            info["client_secret"] = self.secret_box.open(bytes.fromhex(record.sealed_secret))
        return LoopbackFriendlyClient.model_validate(info)

    async def _metadata_client(
        self, client_id: str, known: OAuthClient | None
    ) -> OAuthClient | None:
        """The client a metadata document describes, fetched unless kept and fresh.

        A stale copy that cannot be fetched again is not used: the document
        may have been changed to say less (a redirect URI taken out) since.
        """
        now = utcnow()
        if known is not None and known.fetched_at is not None:
            fresh_until = known.fresh_until or known.fetched_at + timedelta(seconds=FRESH_DEFAULT_S)
            if now < fresh_until:
                return known
        try:
            fetched = await fetch_metadata_document(client_id, self.allowlist, self.resolve)
        except MetadataDocumentError as exc:
            log.warning("OAuth client %r refused: %s", client_id, exc.message)
            return None
        document = fetched.document
        name = document.get("client_name")
        client = OAuthClient(
            client_id=client_id,
            kind=ClientKind.METADATA,
            name=name if isinstance(name, str) and name else urlsplit(client_id).netloc,
            metadata={k: v for k, v in document.items() if k in METADATA_FIELDS},
            fetched_at=now,
            fresh_until=now + timedelta(seconds=fetched.fresh_for_s),
        )
        if known is not None:
            return await self.store.update(attrs.evolve(client, id=known.id))
        try:
            return await self.store.insert(client)
        except ConflictError:  # fetched by another request meanwhile
            return await self.store.find(OAuthClient, client_id=client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if not self.settings.dynamic_registration:
            raise RegistrationError(
                "invalid_client_metadata",
                "dynamic client registration is closed here: ask an administrator to register "
                "the client (`agentws oauth client add`)",
            )
        metadata = client_info.model_dump(
            mode="json", exclude_none=True, exclude={"client_id", "client_secret"}
        )
        refused = metadata_problem(metadata)
        if refused is not None:
            raise RegistrationError(*refused)  # type: ignore[arg-type]  # one of its codes
        secret = client_info.client_secret
        sealed: str | None = None
        if secret is not None:
            if self.secret_box is None:
                raise RegistrationError(
                    "invalid_client_metadata",
                    "this service cannot keep client secrets (no service key): register a "
                    "public client (token_endpoint_auth_method 'none') and use PKCE",
                )
            sealed = self.secret_box.seal(secret).hex()
        name = client_info.client_name or client_info.client_id or "OAuth client"
        client = OAuthClient(
            client_id=str(client_info.client_id),
            kind=ClientKind.DYNAMIC,
            name=name[:MAX_NAME_CHARS],
            metadata=metadata,
            sealed_secret=sealed,
        )
        if not await self.store.insert_oauth_client_within(client, limit=self.settings.max_clients):
            raise RegistrationError(
                "invalid_client_metadata",
                "too many clients are registered; an administrator can remove unused ones",
            )

    # -- authorization ----------------------------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if params.resource is None:
            raise AuthorizeError(
                "invalid_request",
                "name the MCP endpoint in the 'resource' parameter (RFC 8707): tokens here "
                "are issued for one group endpoint",
            )
        if self.groups.endpoint(params.resource) is None:
            raise AuthorizeError(
                "invalid_request",
                "'resource' is not an MCP group endpoint of this service "
                "(…/mcp/g/<workspace>/<group>)",
            )
        # A group that does not exist is answered as one that does (the consent
        # page, which tells a signed-in administrator): nobody else learns which exist.
        group_id = await self.groups.group_for_resource(params.resource)
        grant = OAuthGrant(
            client_id=str(client.client_id),
            group_id=group_id,
            scope=highest_scope(params.scopes),
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            resource=params.resource,
            state=params.state,
            expires_at=utcnow() + timedelta(seconds=self.settings.consent_ttl_s),
        )
        # What expired a day ago goes whenever a request comes: the tables hold
        # what can still be used, and a day of used codes to tell a replay.
        await self.store.forget_expired_oauth(utcnow() - timedelta(days=1))
        await self.store.insert(grant)
        return str(self.consent_url(grant.id))

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        if not authorization_code.startswith(CODE_PREFIX):
            return None
        grant = await self.store.find(OAuthGrant, code_hash=hash_secret(authorization_code))
        if grant is None or grant.client_id != client.client_id:
            return None
        if grant.status is GrantStatus.USED:
            # A second presentation: somebody has the code who should not.
            # take_oauth_code revokes what the first exchange issued.
            await self.store.take_oauth_code(hash_secret(authorization_code), "", utcnow())
            return None
        if grant.status is not GrantStatus.APPROVED:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=scopes_up_to(grant.scope),
            expires_at=grant.expires_at.timestamp(),
            client_id=grant.client_id,
            code_challenge=grant.code_challenge,
            redirect_uri=grant.redirect_uri,  # type: ignore[arg-type]  # pydantic coerces
            redirect_uri_provided_explicitly=grant.redirect_uri_explicit,
            resource=grant.resource,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        family_id = new_id("ofam")
        grant, _ = await self.store.take_oauth_code(
            hash_secret(authorization_code.code), family_id, utcnow()
        )
        if grant is None or grant.group_id is None:  # (never approved without its group)
            raise TokenError("invalid_grant", "authorization code has been used or has expired")
        return await self._issue(client, grant.group_id, grant.scope, grant.resource, family_id)

    # -- refresh ----------------------------------------------------------------

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        if not refresh_token.startswith(REFRESH_TOKEN_PREFIX):
            return None
        record = await self.store.find(OAuthRefreshToken, token_hash=hash_secret(refresh_token))
        if record is None or record.client_id != client.client_id or record.revoked_at:
            return None
        if record.spent_at is not None:
            # Reuse of a spent refresh token: the family is compromised.
            await self.store.spend_refresh_token(record.token_hash, utcnow())
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=record.client_id,
            scopes=scopes_up_to(record.scope),
            expires_at=_timestamp(record.expires_at),
            resource=record.resource,
        )

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        record, _ = await self.store.spend_refresh_token(hash_secret(refresh_token.token), utcnow())
        if record is None:
            raise TokenError("invalid_grant", "refresh token has been used, revoked or has expired")
        scope = highest_scope(scopes) if scopes else record.scope
        if not scope.within(record.scope):
            scope = record.scope
        return await self._issue(client, record.group_id, scope, record.resource, record.family_id)

    # -- access tokens and revocation -----------------------------------------

    async def load_access_token(self, token: str) -> AccessToken | None:
        if not token.startswith(ACCESS_TOKEN_PREFIX):
            return None
        record = await self.store.token_by_hash(hash_secret(token))
        if record is None or record.revoked or record.oauth_client_id is None:
            return None
        expires_at = record.expires_at
        if expires_at is not None and expires_at <= utcnow():
            return None
        return AccessToken(
            token=token,
            client_id=record.oauth_client_id,
            scopes=scopes_up_to(record.scope),
            expires_at=_timestamp(expires_at) if expires_at else None,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        if isinstance(token, RefreshToken):
            record = await self.store.find(OAuthRefreshToken, token_hash=hash_secret(token.token))
            if record is not None:
                await self.store.revoke_oauth_family(record.family_id, utcnow())
            return
        access = await self.store.token_by_hash(hash_secret(token.token))
        if access is not None and access.oauth_family_id is not None:
            # RFC 7009 §2.1: revoking an access token may revoke its grant; here it does,
            # so that a client signing out leaves nothing of its consent behind.
            await self.store.revoke_oauth_family(access.oauth_family_id, utcnow())

    async def _issue(
        self,
        client: OAuthClientInformationFull,
        group_id: str,
        scope: Capability,
        resource: str,
        family_id: str,
    ) -> OAuthToken:
        now = utcnow()
        access = new_secret(ACCESS_TOKEN_PREFIX)
        refresh = new_secret(REFRESH_TOKEN_PREFIX)
        name = (client.client_name or str(client.client_id))[:200]
        await self.store.insert(
            McpToken(
                group_id=group_id,
                name=name,
                token_hash=hash_secret(access),
                hint=access[-_HINT_CHARS:],
                scope=scope,
                created_at=now,
                expires_at=now + timedelta(seconds=self.settings.access_token_ttl_s),
                oauth_client_id=str(client.client_id),
                oauth_family_id=family_id,
            )
        )
        await self.store.insert(
            OAuthRefreshToken(
                token_hash=hash_secret(refresh),
                family_id=family_id,
                client_id=str(client.client_id),
                group_id=group_id,
                scope=scope,
                resource=resource,
                created_at=now,
                expires_at=now + timedelta(seconds=self.settings.refresh_token_ttl_s),
            )
        )
        return OAuthToken(
            access_token=access,
            expires_in=int(self.settings.access_token_ttl_s),
            scope=" ".join(scopes_up_to(scope)),
            refresh_token=refresh,
        )
