"""What a client's registration may say: a bound on every field, and the redirect URIs allowed.

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

**Bounds** (:func:`metadata_problem`): a name of at most 200 characters
without control characters, at most 10 redirect URIs, URLs of at most
2,048 characters, at most 10 contacts, grant and response types, short
strings for the rest, and a ``jwks`` of at most 8 KiB. A registration is
anyone's to send, so what one stores is small (a few KiB, at most about
45 KiB) however it is made.
"""

from __future__ import annotations

import ipaddress
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit

__all__ = [
    "KNOWN_APP_SCHEMES",
    "LOOPBACK_HOSTS",
    "MAX_NAME_CHARS",
    "MAX_REDIRECT_URIS",
    "MAX_URI_CHARS",
    "METADATA_FIELDS",
    "good_host",
    "metadata_problem",
    "name_problem",
    "redirect_uri_problem",
    "split_url",
]

#: The longest URI taken (redirect URIs, logo and policy URLs): what browsers reliably handle.
MAX_URI_CHARS = 2048
#: Hosts a plain ``http`` redirect URI may name (RFC 8252 §7.3, §8.3).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
#: Private-use schemes of MCP clients in use that are not in reverse-domain form:
#: Cursor's (``cursor://anysphere.cursor-retrieval/…``). Kept so that those
#: clients can connect; every other scheme needs a dot.
KNOWN_APP_SCHEMES = frozenset({"cursor"})
#: The longest client name: it heads the consent page.
MAX_NAME_CHARS = 200
#: The most redirect URIs a client has (a native app needs one or two).
MAX_REDIRECT_URIS = 10
# The other bounds: lists (contacts, grant and response types) and their items.
_MAX_LIST = 10
_MAX_CONTACT_CHARS = 320  # an e-mail address is at most 254
_MAX_SHORT_CHARS = 200  # software_id, software_version, scope
_MAX_WORD_CHARS = 100  # a grant or response type, an auth method, an application type
_MAX_JWKS_BYTES = 8 * 1024
_URL_FIELDS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")
_SHORT_FIELDS = ("scope", "software_id", "software_version")
_WORD_FIELDS = ("token_endpoint_auth_method", "application_type")
_LIST_FIELDS = ("grant_types", "response_types")
#: The RFC 7591 fields a client's stored metadata keeps (a document's others are dropped).
METADATA_FIELDS = frozenset(
    {
        "client_name",
        "redirect_uris",
        "contacts",
        "jwks",
        *_URL_FIELDS,
        *_SHORT_FIELDS,
        *_WORD_FIELDS,
        *_LIST_FIELDS,
    }
)
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
# A DNS label (RFC 1123): letters, digits and inner hyphens, at most 63.
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)", re.IGNORECASE)
_ALLOWED = (
    "use https, http on a loopback address (127.0.0.1, [::1], localhost), or an app's own "
    "scheme in reverse-domain form (com.example.app:/callback)"
)


def split_url(url: str) -> SplitResult | None:
    """``url``'s parts; None if it does not parse (its port too: no number, or out of range)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number or out of range
    except ValueError:
        return None
    return parts


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
    parts = split_url(uri)
    if parts is None:
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


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a client's name, or None."""
    if not isinstance(name, str):
        return "is not a string"
    if len(name) > MAX_NAME_CHARS:
        return f"is longer than {MAX_NAME_CHARS} characters"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return "has control characters"
    return None


def metadata_problem(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """The RFC 7591 error (``invalid_client_metadata`` or ``invalid_redirect_uri``) and its
    description, which starts with the field's name, for ``metadata`` over a bound; or None."""
    uris = metadata.get("redirect_uris", [])
    if not isinstance(uris, list):
        return "invalid_redirect_uri", "redirect_uris is not a list"
    if len(uris) > MAX_REDIRECT_URIS:
        return "invalid_redirect_uri", f"redirect_uris lists more than {MAX_REDIRECT_URIS} URIs"
    for index, uri in enumerate(uris):
        problem = redirect_uri_problem(uri) if isinstance(uri, str) else "is not a string"
        if problem is not None:
            return "invalid_redirect_uri", f"redirect_uris[{index}] {problem}"
    problem = _field_problem(metadata)
    return ("invalid_client_metadata", problem) if problem is not None else None


def _field_problem(metadata: Mapping[str, Any]) -> str | None:
    if "client_name" in metadata and (problem := name_problem(metadata["client_name"])):
        return f"client_name {problem}"
    for field in _URL_FIELDS:
        if (problem := _string_problem(metadata.get(field), MAX_URI_CHARS)) is not None:
            return f"{field} {problem}"
    for field in _SHORT_FIELDS:
        if (problem := _string_problem(metadata.get(field), _MAX_SHORT_CHARS)) is not None:
            return f"{field} {problem}"
    for field in _WORD_FIELDS:
        if (problem := _string_problem(metadata.get(field), _MAX_WORD_CHARS)) is not None:
            return f"{field} {problem}"
    for field, longest in (
        ("contacts", _MAX_CONTACT_CHARS),
        *((f, _MAX_WORD_CHARS) for f in _LIST_FIELDS),
    ):
        value = metadata.get(field)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"{field} is not a list"
        if len(value) > _MAX_LIST:
            return f"{field} lists more than {_MAX_LIST}"
        for index, item in enumerate(value):
            if (problem := _string_problem(item, longest)) is not None:
                return f"{field}[{index}] {problem}"
    if metadata.get("jwks") is not None:
        size = len(json.dumps(metadata["jwks"], separators=(",", ":")).encode())
        if size > _MAX_JWKS_BYTES:
            return f"jwks is larger than {_MAX_JWKS_BYTES} bytes (give jwks_uri instead)"
    return None


def _string_problem(value: object, longest: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return "is not a string"
    if len(value) > longest:
        return f"is longer than {longest} characters"
    if not value.isprintable():
        return "has control characters"
    return None
