"""Bearer-token authentication of MCP requests.

Static tokens (``agws_…``) and OAuth access tokens (``agwo_…``, which also
expire) are the same records and are checked alike. Every request to a
group endpoint is authenticated afresh: the token's
SHA-256 is looked up in the store (so a revocation made by any process
applies to the very next request), then the token's group must be the one
in the URL. A lookup is answered from memory only while the store's data
version is unchanged since it was made, that is, while nobody has
committed anything at all (SQLite's ``PRAGMA data_version``); any commit,
a revocation included, sends the next request to the store again.

The path's workspace and group are never looked up on their own, so an
unauthenticated caller learns nothing about which exist.
"""

from __future__ import annotations

from typing import Protocol

import attrs
import trio

from agentws.core.errors import UnauthorizedError
from agentws.domain.models import ClientKind, Group, McpToken, OAuthClient, Workspace
from agentws.domain.rules import MCP_TOKEN_PREFIX, hash_secret, utcnow
from agentws.oauth.settings import ACCESS_TOKEN_PREFIX
from agentws.store.sql_changes import ChangeStore
from agentws.store.sql_records import RecordStore
from agentws.store.sql_tokens import TokenStore

__all__ = ["Authenticator", "Caller"]

# Recording last use is a write; once a minute per token is precise enough.
_TOUCH_INTERVAL_S = 60.0
# Tokens remembered between commits; more than this many starts afresh.
_MAX_CACHED_TOKENS = 10_000


class _Store(RecordStore, ChangeStore, TokenStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class Caller:
    """Who is calling: a live token and the group it opens."""

    token: McpToken
    group: Group
    workspace: Workspace

    @property
    def token_id(self) -> str:
        return self.token.id


@attrs.define(eq=False)
class Authenticator:
    """Resolves ``Authorization`` headers to callers, for one store.

    Groups and workspaces are cached by id: their slugs never change, and a
    deleted one leaves its tokens unusable anyway (the token lookup fails).
    """

    store: _Store
    _groups: dict[str, tuple[Group, Workspace]] = attrs.field(factory=dict, init=False)
    _touched: dict[str, float] = attrs.field(factory=dict, init=False)
    # token hash -> (token, the store's data version when it was read)
    _tokens: dict[str, tuple[McpToken, int]] = attrs.field(factory=dict, init=False)
    # token hash -> (data version it was started at, set when done): lookups in flight
    _lookups: dict[str, tuple[int, trio.Event]] = attrs.field(factory=dict, init=False)

    async def authenticate(
        self, authorization: str | None, workspace_slug: str, group_slug: str
    ) -> Caller:
        """The caller presenting ``authorization`` to ``/mcp/g/<workspace>/<group>``.

        Error handling:
            :class:`~agentws.core.errors.UnauthorizedError` when the header is
            missing or malformed, or the token is unknown, revoked or for
            another group. Store errors propagate (the door answers 503).
        """
        scheme, _, secret = (authorization or "").strip().partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            raise UnauthorizedError(
                "this endpoint needs an 'Authorization: Bearer <token>' header "
                "(create a token with `agentws token create`)"
            )
        if not secret.startswith((MCP_TOKEN_PREFIX, ACCESS_TOKEN_PREFIX)):
            raise UnauthorizedError("invalid token")
        token = await self._token(hash_secret(secret))
        if token is None:
            raise UnauthorizedError("invalid token")
        if token.revoked:
            raise UnauthorizedError("this token has been revoked")
        if token.expires_at is not None and token.expires_at <= utcnow():
            raise UnauthorizedError("this token has expired: refresh it")
        group, workspace = await self._group(token.group_id)
        if group.slug != group_slug or workspace.slug != workspace_slug:
            raise UnauthorizedError("this token is not valid for this endpoint")
        await self._touch(token)
        return Caller(token, group, workspace)

    async def continues(self, caller: Caller, holder: Caller) -> bool:
        """Whether ``caller`` may carry on ``holder``'s sessions with its own token.

        Only a newer token of the same OAuth client for the same group does,
        and only when it is the same installation of that client: a token of
        the same consent (refreshed), or of a client that registered itself
        (RFC 7591: one registration per installation). A client known by its
        metadata document, or registered by an operator, may be shared by
        many people, whose sessions stay their own.
        """
        mine, theirs = caller.token, holder.token
        if (
            mine.oauth_client_id is None
            or mine.oauth_client_id != theirs.oauth_client_id
            or mine.group_id != theirs.group_id
            or mine.id == theirs.id
        ):
            return False
        if mine.oauth_family_id is not None and mine.oauth_family_id == theirs.oauth_family_id:
            return True
        client = await self.store.find(OAuthClient, client_id=mine.oauth_client_id)
        return client is not None and client.kind is ClientKind.DYNAMIC

    async def _token(self, token_hash: str) -> McpToken | None:
        version = self.store.data_version()
        cached = self._tokens.get(token_hash)
        if version is not None and cached is not None and cached[1] == version:
            return cached[0]
        # After a commit, the concurrent requests of one token wait for one
        # lookup made since that commit instead of each making their own.
        in_flight = self._lookups.get(token_hash)
        if version is not None and in_flight is not None and in_flight[0] == version:
            await in_flight[1].wait()
            cached = self._tokens.get(token_hash)
            if cached is not None and cached[1] == version:
                return cached[0]
        done = trio.Event()
        if version is not None:
            self._lookups[token_hash] = (version, done)
        try:
            token = await self.store.token_by_hash(token_hash)
            if version is not None and token is not None and not token.revoked:
                if len(self._tokens) >= _MAX_CACHED_TOKENS:
                    self._tokens.clear()
                # Stamped with the version read *before* the lookup: a commit in
                # between makes the entry stale at once, never wrongly fresh.
                self._tokens[token_hash] = (token, version)
        finally:
            done.set()
            if self._lookups.get(token_hash, (None, None))[1] is done:
                del self._lookups[token_hash]
        return token

    async def _group(self, group_id: str) -> tuple[Group, Workspace]:
        found = self._groups.get(group_id)
        if found is None:
            group = await self.store.get(Group, group_id)
            found = (group, await self.store.get(Workspace, group.workspace_id))
            self._groups[group_id] = found
        return found

    async def _touch(self, token: McpToken) -> None:
        now = trio.current_time()
        if now - self._touched.get(token.id, -_TOUCH_INTERVAL_S) >= _TOUCH_INTERVAL_S:
            self._touched[token.id] = now
            await self.store.touch_token(token.id)
