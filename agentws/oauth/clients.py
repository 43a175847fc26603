"""How a client's redirect URI is checked: exactly, except a loopback one's port (RFC 8252).

Whatever matches must also be a redirect URI the rules allow
(:mod:`agentws.oauth.client_rules`): a client stored before a rule existed
gets no browser sent where the rule now forbids.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl

from agentws.oauth.client_rules import LOOPBACK_HOSTS, redirect_uri_problem

__all__ = ["LoopbackFriendlyClient", "same_redirect"]


def same_redirect(registered: str, given: str) -> bool:
    """Whether ``given`` is the registered redirect URI.

    Exactly the same string; except that a native app's loopback URI
    (``http://127.0.0.1``, ``[::1]`` or ``localhost``) may name any port,
    since the app binds whichever is free when it runs (RFC 8252 §7.3).
    """
    if registered == given:
        return True
    try:
        a, b = urlsplit(registered), urlsplit(given)
    except ValueError:  # not URIs (a bracket that never closes)
        return False
    return (
        a.scheme == b.scheme == "http"
        and a.hostname is not None
        and a.hostname == b.hostname
        and a.hostname in LOOPBACK_HOSTS
        and (a.path or "/") == (b.path or "/")
        and a.query == b.query
        and not a.fragment
        and not b.fragment
    )


class LoopbackFriendlyClient(OAuthClientInformationFull):
    """A client's registration, whose loopback redirect URIs accept any port."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            chosen = super().validate_redirect_uri(redirect_uri)
        elif any(same_redirect(str(r), str(redirect_uri)) for r in self.redirect_uris or ()):
            chosen = redirect_uri
        else:
            raise InvalidRedirectUriError(
                f"Redirect URI '{redirect_uri}' not registered for client"
            )
        problem = redirect_uri_problem(str(chosen))
        if problem is not None:
            raise InvalidRedirectUriError(f"the redirect URI {problem}; it is never redirected to")
        return chosen
