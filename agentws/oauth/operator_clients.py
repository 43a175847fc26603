"""OAuth clients an operator registers, lists and removes (the CLI's and the admin API's).

For operators who want an allow-list (``AGENTWS_OAUTH_REGISTRATION=closed``)
or a confidential client: the operator names the client and its redirect
URIs and gets its client id (and, for a confidential client, its secret,
shown once). Removing a client revokes every token it holds, at once.
"""

from __future__ import annotations

import secrets
from typing import Protocol

import attrs

from agentws.common.audit import record, record_removed
from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.models import ClientKind, OAuthClient
from agentws.domain.rules import utcnow
from agentws.oauth.client_rules import (
    MAX_NAME_CHARS,
    MAX_REDIRECT_URIS,
    name_problem,
    redirect_uri_problem,
)
from agentws.oauth.settings import SCOPES
from agentws.settings.secret_box import SecretBox
from agentws.store.sql_oauth import OAuthStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "CLIENT_ID_PREFIX",
    "LEGACY_CLIENT_ID_PREFIX",
    "RegisteredClient",
    "list_clients",
    "register_client",
    "remove_client",
]

#: The prefix of the client ids an operator's clients get (an id, not a secret:
#: the consent page shows it), one no secret of agentws starts with.
CLIENT_ID_PREFIX = "agwoi_"
#: What ids had before: confirm tokens had it too. Such ids are stored and looked up
#: whole, so the clients that have them keep working; none is made any more.
LEGACY_CLIENT_ID_PREFIX = "agwc_"


class _Store(RecordStore, OAuthStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class RegisteredClient:
    """A client just registered, and its secret (None for a public client), not kept."""

    client: OAuthClient
    secret: str | None


def _check_redirect_uri(index: int, uri: str) -> str:
    problem = redirect_uri_problem(uri)
    if problem is not None:
        raise ValidationError(f"redirect URI {index + 1} ({uri!r}) {problem}")
    return uri


async def register_client(
    store: RecordStore,
    box: SecretBox | None,
    *,
    name: str,
    redirect_uris: list[str],
    confidential: bool = False,
    actor: str,
) -> RegisteredClient:
    """Register a client by hand.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for a missing name, no or
        bad redirect URIs, or a confidential client without a service key.
    """
    name = name.strip()
    if not name or name_problem(name) is not None:
        raise ValidationError(
            f"a client needs a name of 1 to {MAX_NAME_CHARS} characters, without control characters"
        )
    if not redirect_uris or len(redirect_uris) > MAX_REDIRECT_URIS:
        raise ValidationError(f"give 1 to {MAX_REDIRECT_URIS} redirect URIs")
    uris = [_check_redirect_uri(i, u) for i, u in enumerate(redirect_uris)]
    secret = secrets.token_urlsafe(32) if confidential else None
    if secret is not None and box is None:
        raise ValidationError(
            "a confidential client's secret is kept sealed with the service key, and there "
            "is none: set AGENTWS_SECRET_KEY or run `agentws init` (see `agentws doctor`)"
        )
    client = OAuthClient(
        client_id=CLIENT_ID_PREFIX + secrets.token_urlsafe(16),
        kind=ClientKind.OPERATOR,
        name=name,
        metadata={
            "client_name": name,
            "redirect_uris": uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post" if secret else "none",
            "scope": " ".join(SCOPES),
        },
        sealed_secret=box.seal(secret).hex() if box is not None and secret is not None else None,
    )
    await store.insert(client)
    await record(
        store, None, actor, "oauth.client.add", client.client_id, name=name, redirect_uris=uris
    )
    return RegisteredClient(client, secret)


async def list_clients(store: RecordStore) -> list[OAuthClient]:
    """Every client agentws knows: registered by an operator, by itself, or by its document."""
    return await store.select(OAuthClient)


async def remove_client(store: _Store, client_ref: str, *, actor: str) -> OAuthClient:
    """Remove a client (by client id or record id) and revoke every token it holds.

    Error handling:
        :class:`~agentws.core.errors.NotFoundError` if there is no such client.
    """
    client = await store.find(OAuthClient, client_id=client_ref) or await store.find(
        OAuthClient, id=client_ref
    )
    if client is None:
        raise NotFoundError(f"no OAuth client {client_ref!r} (see `agentws oauth client list`)")
    revoked = await store.revoke_oauth_client(client.client_id, utcnow())
    return await record_removed(
        store,
        client,
        None,
        actor,
        "oauth.client.remove",
        client.client_id,
        name=client.name,
        revoked=revoked,
    )
