"""Which group endpoint an RFC 8707 ``resource`` names, and each endpoint's URLs.

A token is issued for one group endpoint: the ``resource`` a client asks
for must be this service's ``…/mcp/g/<workspace>/<group>`` (same origin as
the authorization server the client talks to, so a token asked for
another server's URL is never made here). Whether that group exists is
not told to whoever asks (:meth:`GroupResolver.endpoint` checks the form
alone): only the consent page, to a signed-in administrator, says so.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import attrs

from agentws.core.errors import NotFoundError
from agentws.domain.models import Capability
from agentws.store.sql_records import RecordStore

__all__ = ["GroupResolver", "bearer_challenge", "endpoint_path", "resource_metadata_url"]

_ENDPOINT = re.compile(r"/mcp/g/(?P<workspace>[a-z0-9][a-z0-9-]*)/(?P<group>[a-z0-9][a-z0-9-]*)/?")
#: RFC 9728 §3.1: the metadata of resource ``/p`` is at this path followed by ``/p``.
PRM_PATH = "/.well-known/oauth-protected-resource"
# Every scope an endpoint has: a client asks for them, the administrator grants what it chooses.
_SCOPE = " ".join(c.value for c in Capability)


def endpoint_path(path: str) -> tuple[str, str] | None:
    """``(workspace, group)`` if ``path`` is a group endpoint's path."""
    found = _ENDPOINT.fullmatch(path)
    return (found["workspace"], found["group"]) if found else None


def resource_metadata_url(base_url: str, workspace: str, group: str) -> str:
    """Where a group endpoint's protected-resource metadata is (path-suffixed form)."""
    return f"{base_url.rstrip('/')}{PRM_PATH}/mcp/g/{workspace}/{group}"


def bearer_challenge(
    base_url: str, workspace: str, group: str, invalid_token: str | None = None
) -> str:
    """The ``WWW-Authenticate`` of a group endpoint's 401 (RFC 6750 §3, RFC 9728 §5.1).

    It names where the endpoint's protected-resource metadata is, so that a
    client with no token can discover the authorization server, and the
    scopes there are; ``invalid_token`` says why a token presented was refused.
    """
    metadata = resource_metadata_url(base_url, workspace, group)
    challenge = f'Bearer realm="agentws", resource_metadata="{metadata}", scope="{_SCOPE}"'
    if invalid_token is not None:
        description = invalid_token.replace('"', "'").replace("\\", "/")
        challenge += f', error="invalid_token", error_description="{description}"'
    return challenge


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


@attrs.frozen
class GroupResolver:
    """Finds the group a ``resource`` URL names, on this service at ``base_url``."""

    store: RecordStore
    base_url: str

    def endpoint(self, resource: str) -> tuple[str, str] | None:
        """``(workspace, group)`` if ``resource`` has the form of this service's group
        endpoints (whether that group exists or not), else None."""
        try:
            parts = urlsplit(resource)
        except ValueError:
            return None
        if _origin(resource) != _origin(self.base_url) or parts.query or parts.fragment:
            return None
        return endpoint_path(parts.path)

    async def group_for_resource(self, resource: str) -> str | None:
        """The group id, or None if ``resource`` is not one of this service's group endpoints."""
        named = self.endpoint(resource)
        if named is None:
            return None
        try:
            group = await self.store.group_by_slug(*named)
        except NotFoundError:
            return None
        return group.id
