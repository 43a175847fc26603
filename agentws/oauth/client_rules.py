"""What a client's registration may say: the redirect URIs allowed, and a bound on every field.

One set of rules for every way a client comes to be known (it registers
itself, an operator registers it, or agentws fetches its metadata
document), checked when it comes and again whenever a stored client is
used, so that nothing stored before a rule existed escapes it.

**Redirect URIs** (RFC 8252 §7, the MCP authorization specification's
"Communication Security"): where the browser is sent with a code, so only

- ``https://`` with a host;
- ``http://`` on a loopback host (``127.0.0.1``, ``[::1]``, ``localhost``),
  where a native app listens;
- a native app's own scheme in reverse-domain form, containing a dot
  (``com.example.app:/callback``), with a path; besides those, the few
  schemes of known MCP clients that predate the rule (:data:`KNOWN_APP_SCHEMES`).

Never user info (it would be shown on the consent page and put in the
``Location``), never a fragment (RFC 6749 §3.1.2), nothing over
:data:`MAX_URI_CHARS`, no spaces or control characters. ``javascript:``,
``data:``, ``file:`` and the like are refused by these rules as a
consequence: they are no scheme an app registers.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import SplitResult, urlsplit

__all__ = [
    "KNOWN_APP_SCHEMES",
    "LOOPBACK_HOSTS",
    "MAX_URI_CHARS",
    "good_host",
    "redirect_uri_problem",
]

#: The longest URI taken (redirect URIs, logo and policy URLs): what browsers reliably handle.
MAX_URI_CHARS = 2048
#: Hosts a plain ``http`` redirect URI may name (RFC 8252 §7.3, §8.3).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
#: Private-use schemes of MCP clients in use that are not in reverse-domain form:
#: Cursor's (``cursor://anysphere.cursor-retrieval/…``). Kept so that those
#: clients can connect; every other scheme needs a dot.
KNOWN_APP_SCHEMES = frozenset({"cursor"})
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
# A DNS label (RFC 1123): letters, digits and inner hyphens, at most 63.
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)", re.IGNORECASE)
_ALLOWED = (
    "use https, http on a loopback address (127.0.0.1, [::1], localhost), or an app's own "
    "scheme in reverse-domain form (com.example.app:/callback)"
)


def good_host(parts: SplitResult) -> bool:
    """Whether ``parts`` names a host: an IP address or a DNS name (ASCII labels)."""
    host = parts.hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    name = host.removesuffix(".")
    return 0 < len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI (a sentence), or None if it may."""
    if len(uri) > MAX_URI_CHARS:
        return f"is longer than {MAX_URI_CHARS} characters"
    if not uri.isascii() or not uri.isprintable() or " " in uri:
        return "has spaces, control or non-ASCII characters (percent-encode them)"
    if "#" in uri:
        return "has a fragment (RFC 6749 §3.1.2)"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number or out of range
    except ValueError:
        return "is not a URI"
    scheme = parts.scheme.lower()
    if not scheme or not _SCHEME.fullmatch(scheme):
        return f"is not an absolute URI: {_ALLOWED}"
    if "@" in parts.netloc:
        return "has user info (user@ or user:password@ before the host)"
    if scheme == "https":
        return None if good_host(parts) else "has no host name or IP address"
    if scheme == "http":
        if parts.hostname not in LOOPBACK_HOSTS:
            return f"uses plain http on a host that is not loopback: {_ALLOWED}"
        return None
    if "." not in scheme and scheme not in KNOWN_APP_SCHEMES:
        return f"uses the scheme {scheme}:, which is not one: {_ALLOWED}"
    if not parts.path.startswith("/") and not parts.netloc:
        return f"names no path ({scheme}:/callback, not {scheme}:callback)"
    return None
