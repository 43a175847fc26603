"""A connector's grant upstream: stored sealed, refreshed ahead of expiry by one instance at a time.

After an admin authorized an ``oauth`` connector, its link does not run the
authorization flow again: :class:`GrantAuth` (the link's ``httpx2.Auth``)
puts the grant's access token on every request, and :class:`GrantKeeper`
keeps that token fresh:

- a token within ``REFRESH_AHEAD_S`` of its expiry (or, for one that lives
  less than twice that, past half its life) is refreshed before it is sent,
  and a 401 to a token sends the request once more with a fresh one;
- a refresh is one instance's: it takes the grant's lease in the store
  (:class:`~agentws.store.sql_connector_grants.GrantStore`), so two
  instances never both spend a rotating refresh token; an instance that
  finds the lease taken waits for the holder's new version, and every
  instance reads the new token from the store;
- a rotated refresh token replaces the old one; an upstream that sends none
  keeps the old one valid;
- the grant is read from the store at most every few seconds (and at once
  when due or refused), its tokens opened once per version;
- a refresh the authorization server refuses (``invalid_grant``: revoked or
  expired) marks the grant *needs authorization* with why, once, for every
  instance; calls then fail at once with :class:`NeedsAuthorization` naming
  the connector, never hang. A transport failure is not a verdict: it is a
  :class:`~agentws.connectors.remote_mcp.RemoteError` and the grant stays.

Every refresh request goes through the link's guarded transport. Tokens are
opened for the request that needs them and never logged.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import AsyncGenerator
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import quote

import attrs
import httpx2
import trio
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError as PydanticValidationError

from agentws.connectors.upstream_auth import NeedsAuthorization
from agentws.core.errors import UpstreamError
from agentws.core.redaction import upstream_excerpt
from agentws.domain.models import Connector, ConnectorGrant, GrantState
from agentws.domain.rules import utcnow
from agentws.settings.secret_box import SecretBox
from agentws.store.sql_connector_grants import GrantStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "REFRESH_AHEAD_S",
    "GrantAuth",
    "GrantKeeper",
    "GrantsStore",
    "client_auth",
    "client_of",
    "lose_grant",
    "open_tokens",
    "store_grant",
]

log = logging.getLogger("agentws.connectors")

#: A token this close to its expiry is refreshed before it is sent.
REFRESH_AHEAD_S = 30.0
# How long a refresh lease lasts: longer than a token request may take.
_LEASE_S = 30.0
# An instance that finds the lease taken looks for the holder's result this often.
_WAIT_STEP_S = 0.1
# The grant is read again at least this often: another instance's refresh, a
# loss or a disconnect reaches every instance within it.
_RELOAD_S = 5.0


class GrantsStore(RecordStore, GrantStore, Protocol):
    """The areas of the store grants use."""


def open_tokens(box: SecretBox, grant: ConnectorGrant) -> OAuthToken | None:
    """The grant's tokens, opened; None if it has none."""
    if grant.tokens is None:
        return None
    return OAuthToken.model_validate_json(box.open(grant.tokens))


def client_of(box: SecretBox, grant: ConnectorGrant) -> OAuthClientInformationFull | None:
    if grant.client_info is None:
        return None
    return OAuthClientInformationFull.model_validate_json(box.open(grant.client_info))


def _expiry(tokens: OAuthToken, now: datetime) -> datetime | None:
    return now + timedelta(seconds=tokens.expires_in) if tokens.expires_in else None


async def store_grant(
    store: GrantsStore,
    box: SecretBox,
    connector: Connector,
    *,
    tokens: OAuthToken,
    client: OAuthClientInformationFull | None,
    token_endpoint: str | None,
    resource: str | None,
    revocation_endpoint: str | None = None,
) -> ConnectorGrant:
    """Keep what an authorization brought as ``connector``'s grant, connected, sealed."""
    now = utcnow()
    existing = await store.find(ConnectorGrant, connector_id=connector.id)
    grant = ConnectorGrant(
        id=existing.id if existing else ConnectorGrant(connector_id=connector.id).id,
        connector_id=connector.id,
        tokens=box.seal(tokens.model_dump_json(exclude_none=True)),
        client_info=box.seal(client.model_dump_json(exclude_none=True)) if client else None,
        token_endpoint=token_endpoint,
        revocation_endpoint=revocation_endpoint,
        resource=resource,
        expires_at=_expiry(tokens, now),
        scope=tokens.scope,
        state=GrantState.CONNECTED,
        version=existing.version + 1 if existing else 1,
        updated_at=now,
    )
    return await (store.update(grant) if existing else store.insert(grant))


async def lose_grant(
    store: GrantsStore, grant: ConnectorGrant, reason: str, wanted_scope: str | None = None
) -> bool:
    """Mark ``grant`` *needs authorization* for ``reason``, its tokens deleted.

    Returns:
        Whether this call made the change (False: it needed authorization
        already, whichever instance found out first).
    """
    return await store.lose_grant(grant.id, reason=reason, now=utcnow(), wanted_scope=wanted_scope)


@attrs.define(eq=False)
class GrantKeeper:
    """Hands out ``connector``'s access token, refreshed as the module says.

    Args:
        http: the client refresh requests go through (the link's guarded transport).
        holder: this instance's name, for the refresh lease.
        on_lost: told (once per loss) that the connector needs authorization.
    """

    store: GrantsStore
    box: SecretBox
    connector: Connector
    http: httpx2.AsyncClient
    holder: str
    on_lost: Any = None
    _grant: ConnectorGrant | None = None
    #: The grant's tokens, opened once per version (not per request).
    _tokens: OAuthToken | None = None
    _loaded_at: float = -math.inf
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def access_token(self, *, refused: str | None = None) -> str:
        """A usable access token; ``refused``: the token the upstream just answered 401 to.

        Error handling:
            :class:`NeedsAuthorization` when there is no usable grant;
            :class:`UpstreamError` when the authorization server cannot be reached.
        """
        grant, tokens = self._grant, self._tokens
        fresh_s = trio.current_time() - self._loaded_at
        if (
            refused is None
            and grant is not None
            and tokens is not None
            and fresh_s < _RELOAD_S
            and not self._due(grant)
        ):
            return tokens.access_token  # the common case: no lock, no store
        async with self._lock:
            grant = self._grant
            # A lost grant is read again: another instance (or an admin) may have
            # authorized it meanwhile.
            stale = trio.current_time() - self._loaded_at >= _RELOAD_S
            if (
                grant is None
                or refused is not None
                or grant.tokens is None
                or stale
                or self._due(grant)
            ):
                grant = await self._load()
            tokens = self._tokens
            if tokens is None:
                raise self._needs(grant)
            if refused is None and not self._due(grant):
                return tokens.access_token
            if refused is not None and tokens.access_token != refused and not self._due(grant):
                return tokens.access_token  # another instance refreshed it meanwhile
            grant = await self._refresh(grant, tokens)
            fresh = self._tokens
            if fresh is None:
                raise self._needs(grant)
            return fresh.access_token

    async def _load(self) -> ConnectorGrant:
        grant = await self.store.find(ConnectorGrant, connector_id=self.connector.id)
        if grant is None:
            raise NeedsAuthorization(
                f"connector {self.connector.name!r} needs authorization: it was never "
                "connected (the Connect button on its page, or `agentws connector authorize`)"
            )
        if self._grant is None or grant.version != self._grant.version or self._tokens is None:
            self._tokens = open_tokens(self.box, grant)
        self._grant = grant
        self._loaded_at = trio.current_time()
        return grant

    def _due(self, grant: ConnectorGrant) -> bool:
        if grant.expires_at is None:
            return False
        # A short-lived token is refreshed halfway through its life, not on every request.
        lifetime = grant.expires_at - grant.updated_at
        ahead = min(timedelta(seconds=REFRESH_AHEAD_S), lifetime / 2)
        return grant.expires_at - ahead <= utcnow()

    def _needs(self, grant: ConnectorGrant) -> NeedsAuthorization:
        why = grant.reason or "it has no tokens"
        return NeedsAuthorization(
            f"connector {self.connector.name!r} needs authorization: {why} (the Connect "
            "button on its page, or `agentws connector authorize`)"
        )

    async def _refresh(self, grant: ConnectorGrant, tokens: OAuthToken) -> ConnectorGrant:
        """The grant with fresh tokens: refreshed here under the lease, or by the holder."""
        deadline = trio.current_time() + _LEASE_S
        while True:
            now = utcnow()
            until = now + timedelta(seconds=_LEASE_S)
            if await self.store.take_grant_lease(
                grant.id, holder=self.holder, now=now, until=until
            ):
                current = await self._load()
                if current.version != grant.version:
                    # The holder before us refreshed it: nothing left to do.
                    await self.store.release_grant_lease(grant.id, holder=self.holder)
                    return current
                return await self._refresh_held(current, tokens)
            await trio.sleep(_WAIT_STEP_S)
            current = await self._load()
            if current.version != grant.version or trio.current_time() > deadline:
                return current

    async def _refresh_held(self, grant: ConnectorGrant, tokens: OAuthToken) -> ConnectorGrant:
        if not tokens.refresh_token or not grant.token_endpoint:
            await self._lose(
                grant, "the access token expired and the upstream gave no refresh token"
            )
            raise self._needs(await self._load())
        client = client_of(self.box, grant)
        data = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        if grant.resource:
            data["resource"] = grant.resource
        headers = client_auth(client, data)
        try:
            response = await self.http.post(grant.token_endpoint, data=data, headers=headers)
        except httpx2.HTTPError as exc:
            raise UpstreamError(
                f"connector {self.connector.name!r}: cannot refresh its token at "
                f"{grant.token_endpoint}: {type(exc).__name__}"
            ) from None
        if response.status_code in (400, 401):
            await self._lose(grant, f"the upstream refused to refresh the token ({_why(response)})")
            raise self._needs(await self._load())
        if response.status_code != 200:
            raise UpstreamError(
                f"connector {self.connector.name!r}: its token refresh got HTTP "
                f"{response.status_code} from {grant.token_endpoint}"
            )
        try:
            fresh = OAuthToken.model_validate_json(response.content)
        except PydanticValidationError:
            raise UpstreamError(
                f"connector {self.connector.name!r}: the upstream's token answer is not one"
            ) from None
        if fresh.refresh_token is None:
            fresh = fresh.model_copy(update={"refresh_token": tokens.refresh_token})
        if fresh.scope is None:
            fresh = fresh.model_copy(update={"scope": tokens.scope})
        now = utcnow()
        refreshed = attrs.evolve(
            grant,
            tokens=self.box.seal(fresh.model_dump_json(exclude_none=True)),
            expires_at=_expiry(fresh, now),
            scope=fresh.scope,
            version=grant.version + 1,
            updated_at=now,
        )
        await self.store.save_refreshed_grant(refreshed, holder=self.holder)
        log.info("connector %s: its access token was refreshed", self.connector.name)
        return await self._load()

    async def scope_missing(self, scope: str | None) -> NeedsAuthorization:
        """The upstream answered ``403 insufficient_scope`` (asking for ``scope``): the
        grant needs authorization again, with that scope; the error to raise."""
        async with self._lock:
            grant = await self._load()
            wanted = f"scope {scope!r}" if scope else "a scope"
            await self._lose(grant, f"the upstream asks for {wanted}, which its grant lacks", scope)
            return self._needs(await self._load())

    async def _lose(
        self, grant: ConnectorGrant, reason: str, wanted_scope: str | None = None
    ) -> None:
        if await lose_grant(self.store, grant, reason, wanted_scope):
            log.warning("connector %s needs authorization: %s", self.connector.name, reason)
            if self.on_lost is not None:
                await self.on_lost(self.connector, reason)


def _why(response: httpx2.Response) -> str:
    try:
        body = json.loads(response.content)
    except ValueError:
        return f"HTTP {response.status_code}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    error = str(body.get("error") or f"HTTP {response.status_code}")
    described = body.get("error_description")
    return f"{error}: {upstream_excerpt(str(described))}" if described else error


def client_auth(client: OAuthClientInformationFull | None, data: dict[str, str]) -> dict[str, str]:
    """How the client authenticates at the token or revocation endpoint: ``data``
    gains its fields; the headers to send."""
    if client is None:
        return {}
    method = client.token_endpoint_auth_method
    if method == "client_secret_basic" and client.client_secret:
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        return {"Authorization": f"Basic {base64.b64encode(pair.encode()).decode()}"}
    data["client_id"] = client.client_id
    if method == "client_secret_post" and client.client_secret:
        data["client_secret"] = client.client_secret
    return {}


@attrs.define(eq=False)
class GrantAuth(httpx2.Auth):
    """A link's auth for an authorized ``oauth`` connector: the grant's bearer token."""

    keeper: GrantKeeper

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self.keeper.access_token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            await response.aread()
            token = await self.keeper.access_token(refused=token)
            request.headers["Authorization"] = f"Bearer {token}"
            response = yield request
        if response.status_code == 403 and _challenge(response, "error") == "insufficient_scope":
            # Step-up needs a person's consent: an admin authorizes it again, with the scope.
            await response.aread()
            raise await self.keeper.scope_missing(_challenge(response, "scope"))


def _challenge(response: httpx2.Response, field: str) -> str | None:
    """A field of the response's ``WWW-Authenticate`` challenge (the SDK's parser)."""
    return extract_field_from_www_auth(response, field)
