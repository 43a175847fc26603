"""A remote MCP connector's own authorization upstream: its grant, and flows under way.

A connector whose auth mode is ``oauth`` or ``client_credentials``
(:mod:`agentws.connectors.upstream_auth`) holds one :class:`ConnectorGrant`:
what the upstream's authorization server issued it (tokens, the client it
registered as), sealed with the service key, and whether it is usable. A
:class:`ConnectorAuthorization` is one authorization an admin started and
the upstream has not yet answered: its ``state`` (kept as a hash), who
started it and from which dashboard session, and, once the upstream sent
the person back, the code (sealed) for whoever waits on it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import attrs

from agentws.domain.record_fields import id_field, now_field

__all__ = ["ConnectorAuthorization", "ConnectorGrant", "GrantState"]


class GrantState(StrEnum):
    """Whether a connector's grant lets its link reach the upstream."""

    CONNECTED = "connected"
    #: No grant yet, or it was refused, revoked or lost: an admin must authorize.
    NEEDS_AUTHORIZATION = "needs_authorization"


@attrs.frozen(kw_only=True)
class ConnectorGrant:
    """What a connector's upstream authorization server issued it, sealed."""

    id: str = id_field("cgr")
    connector_id: str
    #: The tokens (the SDK's ``OAuthToken`` as JSON), sealed with the service key.
    tokens: bytes | None = attrs.field(default=None, repr=False)
    #: The client agentws is registered as there (``OAuthClientInformationFull``), sealed.
    client_info: bytes | None = attrs.field(default=None, repr=False)
    #: Where tokens are refreshed and revoked (RFC 7009, when the upstream has
    #: it), and for which resource (RFC 8707): not secret.
    token_endpoint: str | None = None
    revocation_endpoint: str | None = None
    resource: str | None = None
    #: When the access token expires; None: the upstream did not say.
    expires_at: datetime | None = None
    scope: str | None = None
    #: A scope the upstream asked for that the grant lacked (``403
    #: insufficient_scope``): asked for too when it is authorized again.
    wanted_scope: str | None = None
    state: GrantState = GrantState.NEEDS_AUTHORIZATION
    #: Why it needs authorization (refresh refused, access revoked, scope missing).
    reason: str | None = None
    #: Which instance refreshes the tokens until when (one at a time per connector).
    lease_holder: str | None = None
    lease_until: datetime | None = None
    #: Bumped by every change of the tokens: instances reload on a new version.
    version: int = 0
    updated_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class ConnectorAuthorization:
    """One authorization of a connector an admin started: pending, then answered."""

    id: str = id_field("cau")
    connector_id: str
    #: SHA-256 of the ``state`` sent upstream: single use, looked up by the callback.
    state_hash: str
    started_by: str
    #: SHA-256 of the dashboard session that started it (None: the CLI or the API).
    session_hash: str | None = None
    #: The code the upstream sent back, sealed; then ``iss`` (RFC 9207) as given.
    code: bytes | None = attrs.field(default=None, repr=False)
    iss: str | None = None
    #: The upstream's ``error`` (and description) when it refused.
    error: str | None = None
    created_at: datetime = now_field()
    expires_at: datetime
