"""How a client's redirect URI is checked: exactly, except a loopback one's port (RFC 8252)."""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl

__all__ = ["LoopbackFriendlyClient", "same_redirect"]

_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "[::1]", "::1", "localhost"})


def same_redirect(registered: str, given: str) -> bool:
    """Whether ``given`` is the registered redirect URI.

    Exactly the same string; except that a native app's loopback URI
    (``http://127.0.0.1``, ``[::1]`` or ``localhost``) may name any port,
    since the app binds whichever is free when it runs (RFC 8252 §7.3).
    """
    if registered == given:
        return True
    a, b = urlsplit(registered), urlsplit(given)
    return (
        a.scheme == b.scheme == "http"
        and a.hostname is not None
        and a.hostname == b.hostname
        and (a.hostname in _LOOPBACK_HOSTS or f"[{a.hostname}]" in _LOOPBACK_HOSTS)
        and (a.path or "/") == (b.path or "/")
        and a.query == b.query
        and not a.fragment
        and not b.fragment
    )


class LoopbackFriendlyClient(OAuthClientInformationFull):
    """A client's registration, whose loopback redirect URIs accept any port."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            return super().validate_redirect_uri(redirect_uri)
        given = str(redirect_uri)
        if any(same_redirect(str(r), given) for r in self.redirect_uris or ()):
            return redirect_uri
        raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' not registered for client")
