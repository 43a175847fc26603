"""OAuth's constants and settings: token prefixes, the scopes, lifetimes, registration policy.

Scopes are agentws's capabilities: ``read``, ``write``, ``destructive``. A
token granted one may use tools of that capability and below, as a static
token of that scope may; the scope string a client sees lists them all
(``read write`` for a write grant).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from agentws.domain.models import Capability, ClientKind
from agentws.settings.config import Settings

__all__ = [
    "ACCESS_TOKEN_PREFIX",
    "CODE_PREFIX",
    "ISSUER_PATH",
    "REFRESH_TOKEN_PREFIX",
    "SCOPES",
    "OAuthSettings",
    "highest_scope",
    "scopes_up_to",
]

# Recognisable prefixes, for secret scanners and for telling them apart.
ACCESS_TOKEN_PREFIX = "agwo_"  # noqa: S105 - a prefix, not a secret
REFRESH_TOKEN_PREFIX = "agwor_"  # noqa: S105 - a prefix, not a secret
CODE_PREFIX = "agwoc_"

#: The authorization server's path under the base URL (its issuer).
ISSUER_PATH = "/oauth"

SCOPES: tuple[str, ...] = tuple(c.value for c in Capability)


def highest_scope(scopes: Iterable[str] | None) -> Capability:
    """The highest capability named in ``scopes``; ``read`` when none is (least privilege)."""
    named = [Capability(s) for s in scopes or () if s in SCOPES]
    return max(named, key=lambda c: c.rank, default=Capability.READ)


def scopes_up_to(scope: Capability) -> list[str]:
    """The scope strings a grant of ``scope`` carries: it and every lower one."""
    return [c.value for c in Capability if c.within(scope)]


@attrs.frozen(kw_only=True)
class OAuthSettings:
    """What the authorization server is told (from :class:`~agentws.settings.config.Settings`)."""

    registration: str = "open"
    access_token_ttl_s: float = 3600.0
    refresh_token_ttl_s: float = 30 * 86400.0
    #: How long a browser has between ``/authorize`` and the administrator's answer.
    consent_ttl_s: float = 600.0
    #: How long a code lives between consent and its exchange.
    code_ttl_s: float = 300.0
    max_clients: int = 1000

    @classmethod
    def from_settings(cls, settings: Settings) -> OAuthSettings:
        return cls(
            registration=settings.oauth_registration,
            access_token_ttl_s=settings.oauth_access_ttl_s,
            refresh_token_ttl_s=settings.oauth_refresh_ttl_s,
            max_clients=settings.oauth_max_clients,
        )

    @property
    def dynamic_registration(self) -> bool:
        """Whether clients may register themselves (RFC 7591)."""
        return self.registration == "open"

    @property
    def metadata_documents(self) -> bool:
        """Whether a client may be known by its metadata document's URL."""
        return self.registration in ("open", "metadata-only")

    def admits(self, kind: ClientKind) -> bool:
        """Whether a client of ``kind`` is served now: may ask for consent and refresh.

        What a registration policy closes, it closes for the clients that came
        in while it was open too: ``metadata-only`` serves no client that
        registered itself, ``closed`` only the clients an operator registered.
        """
        if kind is ClientKind.OPERATOR:
            return True
        if kind is ClientKind.METADATA:
            return self.metadata_documents
        return self.dynamic_registration
