"""Client ID Metadata Documents: a client whose id is the HTTPS URL of its own registration.

Instead of registering, a client may use as its ``client_id`` an HTTPS URL
(with a path) where it publishes its metadata: its name, redirect URIs,
grant types. agentws fetches that document when it first meets the id,
keeps it (an :class:`~agentws.domain.models.OAuthClient` of kind
``metadata``) and fetches it again once its copy is stale: as long as the
answer's ``Cache-Control: max-age`` (less its ``Age``) or ``Expires`` says,
but at least 5 minutes (``no-store`` and ``no-cache`` included: a client
should not make agentws fetch on every request) and at most a day (a
client that changes its document is heard within a day); an hour when the
answer says nothing. A copy that is stale and cannot be fetched again is
not used (see :mod:`agentws.oauth.provider`).

The URL comes from whoever sends a browser to ``/oauth/authorize``, so the
fetch is treated as hostile: it goes through the connectors' outbound guard
(public addresses only unless ``AGENTWS_CONNECTOR_ALLOWLIST`` names the
host, no DNS rebinding, no redirects followed), within a few seconds, and
reads at most a few kilobytes. The document must name the same
``client_id`` and at least one redirect URI, describe a public client
(no secret: PKCE is its proof), and keep to the bounds and redirect URI
rules a registration keeps to (:mod:`agentws.oauth.client_rules`).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx2

from agentws.connectors.url_guard import GuardedTransport, Resolver, system_resolver
from agentws.core.deadlines import deadline
from agentws.core.errors import AgentwsError, UnsafeUrlError
from agentws.domain.allowlist import Allowlist
from agentws.domain.rules import utcnow
from agentws.oauth.client_rules import good_host, metadata_problem, split_url

__all__ = [
    "FRESH_DEFAULT_S",
    "MAX_CLIENT_ID_CHARS",
    "MetadataDocument",
    "MetadataDocumentError",
    "fetch_metadata_document",
    "fresh_for_s",
    "is_metadata_client_id",
]

log = logging.getLogger("agentws.oauth")

#: The largest document read; real ones are well under 1 KiB.
MAX_BYTES = 5 * 1024
#: The whole fetch, connecting included.
FETCH_S = 5.0
#: How long a copy is kept when the answer says nothing of it.
FRESH_DEFAULT_S = 3600.0
#: Kept at least this long, whatever the answer says: a document with
#: ``no-store`` must not make every request a fetch.
FRESH_FLOOR_S = 300.0
#: Kept at most this long, whatever the answer says: a changed document is
#: heard within a day.
FRESH_CEILING_S = 86400.0
_AUTH_METHODS = frozenset({"none"})
#: The longest client id looked at: a registered id is 43 characters, a URL rarely 200.
MAX_CLIENT_ID_CHARS = 2048


class MetadataDocumentError(AgentwsError):
    """A client metadata document that could not be fetched or is not acceptable."""


@attrs.frozen
class MetadataDocument:
    """A client metadata document as fetched, checked."""

    document: dict[str, Any]
    #: How long the copy may be used before it is fetched again (:func:`fresh_for_s`).
    fresh_for_s: float


def fresh_for_s(headers: httpx2.Headers, now: datetime) -> float:
    """How long an answer with ``headers``, received at ``now``, stays fresh (RFC 9111 §4.2),
    held between :data:`FRESH_FLOOR_S` and :data:`FRESH_CEILING_S`."""
    directives: dict[str, str] = {}
    for part in headers.get("cache-control", "").split(","):
        name, _, value = part.partition("=")
        directives[name.strip().lower()] = value.strip().strip('"')
    lifetime = FRESH_DEFAULT_S
    if "no-store" in directives or "no-cache" in directives:
        lifetime = 0.0
    elif "max-age" in directives:
        age = headers.get("age", "").strip()
        given = directives["max-age"]
        lifetime = float(given) if given.isdigit() else 0.0
        lifetime -= float(age) if age.isdigit() else 0.0
    elif "expires" in headers:
        expires = _http_date(headers["expires"])
        sent = _http_date(headers.get("date")) or now
        lifetime = (expires - sent).total_seconds() if expires is not None else 0.0
    return min(max(lifetime, FRESH_FLOOR_S), FRESH_CEILING_S)


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # RFC 9111 §5.3: an Expires that is no date means already expired
    return parsed if parsed.tzinfo is not None else None


def is_metadata_client_id(client_id: str) -> bool:
    """Whether ``client_id`` is meant as a metadata document's URL (HTTPS, with a path).

    Whether it is a good one is :func:`fetch_metadata_document`'s to say.
    """
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return client_id.startswith("https://")
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")


def _url_problem(client_id: str) -> str | None:
    """Why ``client_id`` cannot be fetched as a URL, or None."""
    if len(client_id) > MAX_CLIENT_ID_CHARS:
        return f"a client id URL is at most {MAX_CLIENT_ID_CHARS} characters"
    if not client_id.isprintable() or " " in client_id or not client_id.isascii():
        return "a client id URL has no spaces, control or non-ASCII characters"
    parts = split_url(client_id)
    if parts is None:
        return "the client id is not a URL"
    if parts.username is not None or parts.password is not None or parts.fragment:
        return "a client id URL has no credentials and no fragment"
    if not good_host(parts):
        return "the client id URL's host is not a host name or an IP address"
    return None


async def fetch_metadata_document(
    client_id: str, allowlist: Allowlist, resolve: Resolver = system_resolver
) -> MetadataDocument:
    """The metadata document at ``client_id``, checked, and how long to keep it.

    Error handling:
        :class:`MetadataDocumentError` saying what was wrong (a refused
        address, a timeout, an answer too large or not JSON, a document
        naming another client id or no redirect URI, a confidential client, a
        field over its bound or a redirect URI the rules refuse),
        or a URL that is no good (too long, control characters, no host name).
    """
    problem = _url_problem(client_id)
    if problem is not None:
        raise MetadataDocumentError(problem)
    transport = GuardedTransport(
        allowlist, resolve=resolve, inner=httpx2.AsyncHTTPTransport(verify=_ssl_context())
    )
    try:
        with deadline(FETCH_S, _too_slow):
            async with (
                httpx2.AsyncClient(transport=transport, follow_redirects=False) as http,
                http.stream("GET", client_id, headers={"Accept": "application/json"}) as answer,
            ):
                if answer.status_code != 200:
                    raise MetadataDocumentError(
                        f"the client's metadata document answered HTTP {answer.status_code}"
                    )
                fresh_s = fresh_for_s(answer.headers, utcnow())
                body = b""
                async for chunk in answer.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BYTES:
                        raise MetadataDocumentError(
                            f"the client's metadata document is over {MAX_BYTES} bytes"
                        )
    except UnsafeUrlError as exc:
        raise MetadataDocumentError(
            f"the client's metadata URL is refused: {exc.message}"
        ) from None
    except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
        raise MetadataDocumentError(f"the client's metadata document: {exc}") from None
    return MetadataDocument(_checked(client_id, body), fresh_s)


def _too_slow() -> MetadataDocumentError:
    return MetadataDocumentError(
        f"the client's metadata document did not arrive within {FETCH_S:g} s"
    )


def _checked(client_id: str, body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        raise MetadataDocumentError("the client's metadata document is not JSON") from None
    if not isinstance(document, dict):
        raise MetadataDocumentError("the client's metadata document is not a JSON object")
    if document.get("client_id") != client_id:
        raise MetadataDocumentError("the client's metadata document names another client_id")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise MetadataDocumentError("the client's metadata document lists no redirect_uris")
    refused = metadata_problem(document)
    if refused is not None:
        raise MetadataDocumentError(f"the client's metadata document: {refused[1]}")
    method = document.get("token_endpoint_auth_method", "none")
    if method not in _AUTH_METHODS or "client_secret" in document:
        raise MetadataDocumentError(
            "a client known by its metadata document is a public client "
            "(token_endpoint_auth_method 'none', no client_secret)"
        )
    return document


def _ssl_context() -> Any:
    # Made per fetch (fetches are rare: documents are kept minutes to a day), so that
    # SSL_CERT_FILE is read as it is now.
    return httpx2.create_ssl_context()
