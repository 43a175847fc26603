"""Who and where: workspaces, groups and their MCP tokens, admins, the audit log, instances."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from agentws.domain.record_fields import id_field, now_field, slug_validator
from agentws.domain.tool_records import Capability

__all__ = [
    "Admin",
    "AdminSession",
    "AdminToken",
    "AuditEntry",
    "Group",
    "Instance",
    "McpToken",
    "Workspace",
]


@attrs.frozen(kw_only=True)
class Workspace:
    id: str = id_field("ws")
    slug: str = attrs.field(validator=slug_validator)
    name: str
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class Group:
    """A set of connectors and libraries behind one MCP endpoint."""

    id: str = id_field("grp")
    workspace_id: str
    slug: str = attrs.field(validator=slug_validator)
    name: str
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class McpToken:
    """A bearer token for one group endpoint; only its SHA-256 is kept."""

    id: str = id_field("tok")
    group_id: str
    name: str
    token_hash: str = attrs.field(repr=False)
    #: The last characters of the token, so people can tell tokens apart.
    hint: str
    #: The highest capability this token may use.
    scope: Capability = Capability.WRITE
    created_at: datetime = now_field()
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    #: When an OAuth access token stops working; None for a static token.
    expires_at: datetime | None = None
    #: The OAuth client holding it (its client id); None for a static token.
    oauth_client_id: str | None = None
    #: The consent it comes from (see :class:`~agentws.domain.oauth_records.OAuthRefreshToken`).
    oauth_family_id: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@attrs.frozen(kw_only=True)
class AuditEntry:
    """One line of the append-only audit log."""

    id: str = id_field("aud")
    workspace_id: str | None = None
    actor: str
    action: str
    target: str
    detail: dict[str, Any] = attrs.field(factory=dict)
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class Admin:
    """A dashboard administrator; the password is kept as an argon2 hash."""

    id: str = id_field("adm")
    username: str
    password_hash: str = attrs.field(repr=False)
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class AdminSession:
    """A signed-in dashboard session; only the SHA-256 of its cookie is kept."""

    id: str = id_field("ses")
    admin_id: str
    token_hash: str = attrs.field(repr=False)
    #: The session's CSRF token: every form and unsafe API call of the session carries it.
    csrf_token: str = attrs.field(repr=False)
    created_at: datetime = now_field()
    expires_at: datetime
    last_seen_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class AdminToken:
    """A bearer token for the admin JSON API, acting as its admin; kept as a SHA-256."""

    id: str = id_field("atk")
    admin_id: str
    name: str
    token_hash: str = attrs.field(repr=False)
    created_at: datetime = now_field()
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


@attrs.frozen(kw_only=True)
class Instance:
    """A running process of the service on a shared database, as it last said."""

    #: ``AGENTWS_INSTANCE_ID``: the prefix of the ids of the MCP sessions it owns.
    id: str
    #: Where the other instances reach it to forward its sessions' requests.
    internal_url: str
    started_at: datetime = now_field()
    heartbeat_at: datetime = now_field()
    #: Finishing its sessions before it stops; it takes no new one.
    draining: bool = False
    #: Its public base URL (``AGENTWS_BASE_URL``, else its bound address): what
    #: the CLI prints in endpoint and webhook URLs. None: an older instance.
    public_url: str | None = None
