"""OAuth 2.1 for MCP clients: the clients agentws knows, the grants it made, and refresh tokens.

Access tokens are :class:`~agentws.domain.workspace_records.McpToken` rows
with an expiry and the client that holds them, so that everything a static
token gets (hashing, revocation reaching open streams on every instance,
the Connect page, the audit log) an OAuth token gets too. What OAuth adds
is kept here:

- :class:`OAuthClient`: a client registered dynamically (RFC 7591), one
  whose id is the URL of its metadata document (fetched and cached), or
  one an operator registered;
- :class:`OAuthGrant`: an authorization request, from the moment a client
  sends a browser to ``/authorize`` through an administrator's consent to
  the code's single exchange;
- :class:`OAuthRefreshToken`: refresh tokens of a family (one consent);
  each is spent by its use, and presenting a spent one revokes the family.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import attrs

from agentws.domain.record_fields import id_field, now_field
from agentws.domain.tool_records import Capability

__all__ = [
    "ClientKind",
    "GrantStatus",
    "OAuthClient",
    "OAuthGrant",
    "OAuthRefreshToken",
]


class ClientKind(StrEnum):
    """How agentws came to know a client."""

    #: Registered by the client itself (RFC 7591 dynamic registration).
    DYNAMIC = "dynamic"
    #: Its client id is an HTTPS URL whose metadata document agentws fetched.
    METADATA = "metadata"
    #: Registered by an operator (CLI or admin API).
    OPERATOR = "operator"


class GrantStatus(StrEnum):
    """Where an authorization request stands."""

    #: Waiting for an administrator's consent.
    PENDING = "pending"
    #: Consented: its code was issued and not yet exchanged.
    APPROVED = "approved"
    #: Its code was exchanged for tokens (a second exchange revokes them).
    USED = "used"
    #: Refused by an administrator.
    DENIED = "denied"


@attrs.frozen(kw_only=True)
class OAuthClient:
    """An OAuth client: its id, its name and redirect URIs, its registration metadata."""

    id: str = id_field("ocl")
    client_id: str
    kind: ClientKind
    name: str
    #: The client's metadata as registered or fetched (RFC 7591 field names).
    metadata: dict[str, Any] = attrs.field(factory=dict)
    #: A confidential client's secret, sealed with the service key (hex of the
    #: Fernet token: the SDK compares secrets in the clear); None for a public client.
    sealed_secret: str | None = attrs.field(default=None, repr=False)
    created_at: datetime = now_field()
    #: When a metadata document was last fetched (clients of kind METADATA).
    fetched_at: datetime | None = None
    #: Until when that copy may be used without fetching it again (its cache
    #: headers, within bounds); None for other kinds, and for copies kept
    #: before it was recorded (then an hour after ``fetched_at``).
    fresh_until: datetime | None = None


@attrs.frozen(kw_only=True)
class OAuthGrant:
    """One authorization request to one group endpoint, and the code it led to."""

    id: str = id_field("ogr")
    client_id: str
    #: None when ``resource`` names a group endpoint that does not exist: the
    #: request is kept all the same, so that ``/authorize`` answers alike
    #: whether it exists or not; only a signed-in administrator learns which.
    group_id: str | None
    #: The highest capability asked for (the administrator may grant less).
    scope: Capability
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    #: The RFC 8707 resource: the group endpoint's URL.
    resource: str
    state: str | None = None
    status: GrantStatus = GrantStatus.PENDING
    #: SHA-256 of the authorization code, once consented.
    code_hash: str | None = attrs.field(default=None, repr=False)
    #: The refresh-token family its exchange started (to revoke on code reuse).
    family_id: str | None = None
    #: The administrator who decided.
    decided_by: str | None = None
    created_at: datetime = now_field()
    expires_at: datetime


@attrs.frozen(kw_only=True)
class OAuthRefreshToken:
    """A refresh token; only its SHA-256 is kept. Used once, then spent."""

    id: str = id_field("ort")
    token_hash: str = attrs.field(repr=False)
    #: Every token of one consent shares it; reuse of a spent one revokes them all.
    family_id: str
    client_id: str
    group_id: str
    scope: Capability
    resource: str
    created_at: datetime = now_field()
    expires_at: datetime
    spent_at: datetime | None = None
    revoked_at: datetime | None = None
