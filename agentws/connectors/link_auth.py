"""How a link authenticates upstream, by its connector's auth mode (see :mod:`.upstream_auth`).

- ``static``: no ``httpx2.Auth``; the secret goes as a header
  (:func:`~agentws.connectors.admin.connector_headers`);
- ``oauth``: the grant an admin authorized, its token kept fresh by one
  instance at a time (:class:`~agentws.connectors.grants.GrantAuth`);
- ``client_credentials``: the SDK's client-credentials flow, a token of
  this instance's own fetched when needed (no person, nothing to share).

The token requests go through the URL guard, plain HTTP only to
allow-listed hosts, on a client that lives as long as the link's connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import attrs
import httpx2

from agentws.connectors.authorize import redirect_uri, upstream_settings
from agentws.connectors.grants import GrantAuth, GrantKeeper, GrantsStore
from agentws.connectors.upstream_auth import MemoryGrant, auth_transport, upstream_auth
from agentws.connectors.url_guard import Resolver
from agentws.domain.models import Connector
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys

__all__ = ["LinkAuth", "Lost"]

#: Told once per loss that ``connector`` needs authorization, and why.
Lost = Callable[[Connector, str], Awaitable[None]]
# A token request's own limit (the link's deadline bounds the call around it).
_TOKEN_S = 30.0


@attrs.frozen
class LinkAuth:
    """Makes the ``httpx2.Auth`` of a link's connection to a connector."""

    store: GrantsStore
    settings: Settings
    keys: Keys
    resolve: Resolver
    on_lost: Lost | None = None

    @asynccontextmanager
    async def of(self, connector: Connector) -> AsyncIterator[httpx2.Auth | None]:
        """The auth for one connection to ``connector``'s remote (None: ``static``)."""
        if connector.auth == "static" or connector.url is None:
            yield None
            return
        box = self.keys.box()
        if connector.auth == "client_credentials":
            yield upstream_auth(
                connector.url,
                upstream_settings(connector),
                MemoryGrant(),
                secret=box.open(connector.secret) if connector.secret else None,
                redirect_uri=redirect_uri(self.settings.public_base_url),  # unused: no person
                client_metadata_url=None,
            )
            return
        transport = auth_transport(self.settings.connector_allowlist, self.resolve)
        async with httpx2.AsyncClient(transport=transport, timeout=_TOKEN_S) as http:
            keeper = GrantKeeper(
                self.store,
                box,
                connector,
                http,
                holder=self.settings.instance_id,
                on_lost=self.on_lost,
            )
            yield GrantAuth(keeper)
