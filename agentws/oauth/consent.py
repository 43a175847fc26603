"""An administrator's consent to an authorization request: what the page shows, what it decides.

``/oauth/authorize`` (the SDK's handler) leaves a pending grant and sends
the browser to the dashboard's consent page, where a signed-in
administrator sees who asks (the client's name, the host of its logo, the
redirect URI the code will go to) for what (the group endpoint, the scope
asked for) and approves with a scope no higher than that, or denies. Either
way the browser goes back to the client: with a single-use code (and the
issuer, RFC 9207, against mix-up attacks) or with ``error=access_denied``.
A request for a group endpoint that does not exist (``/authorize`` does
not tell) can only be sent back, with ``error=invalid_target``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol
from urllib.parse import urlsplit

import attrs
from mcp.server.auth.provider import construct_redirect_uri

from agentws.common.audit import record
from agentws.core.errors import ConflictError, NotFoundError
from agentws.domain.models import (
    Capability,
    GrantStatus,
    Group,
    OAuthClient,
    OAuthGrant,
    Workspace,
)
from agentws.domain.rules import hash_secret, new_secret, utcnow
from agentws.oauth.client_rules import redirect_uri_problem
from agentws.oauth.resources import endpoint_path
from agentws.oauth.settings import CODE_PREFIX, OAuthSettings
from agentws.store.sql_oauth import OAuthStore
from agentws.store.sql_records import RecordStore

__all__ = ["ConsentRequest", "consent_request", "decide"]


class _Store(RecordStore, OAuthStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen(kw_only=True)
class ConsentRequest:
    """What the consent page shows of one authorization request."""

    grant: OAuthGrant
    client_name: str
    #: The host of the client's logo (never the image: it would call home).
    logo_host: str | None
    #: The client's own page, if its registration names one.
    client_uri: str | None
    #: The group endpoint asked for; None if it does not exist (the request
    #: was kept so that ``/authorize`` told nobody): it can only be sent back.
    workspace: Workspace | None
    group: Group | None
    #: ``<workspace>/<group>`` as the request's ``resource`` names them.
    endpoint: str
    #: The scopes the administrator may grant: up to the one asked for.
    scopes: list[str]
    #: Whether it can still be decided (pending and not expired).
    open: bool


async def consent_request(store: RecordStore, grant_id: str) -> ConsentRequest:
    """The request ``grant_id`` names, as the consent page shows it.

    Error handling:
        :class:`~agentws.core.errors.NotFoundError` if there is no such request.
    """
    grant = await store.find(OAuthGrant, id=grant_id)
    if grant is None:
        raise NotFoundError("no such authorization request (it may have expired): start again")
    client = await store.find(OAuthClient, client_id=grant.client_id)
    metadata = client.metadata if client is not None else {}
    logo = metadata.get("logo_uri")
    group = await store.find(Group, id=grant.group_id) if grant.group_id is not None else None
    workspace = await store.get(Workspace, group.workspace_id) if group is not None else None
    named = endpoint_path(urlsplit(grant.resource).path)
    return ConsentRequest(
        grant=grant,
        client_name=client.name if client is not None else grant.client_id,
        logo_host=urlsplit(logo).hostname if isinstance(logo, str) else None,
        client_uri=metadata.get("client_uri")
        if isinstance(metadata.get("client_uri"), str)
        else None,
        workspace=workspace,
        group=group,
        endpoint="/".join(named) if named is not None else grant.resource,
        scopes=[c.value for c in Capability if c.within(grant.scope)],
        open=grant.status is GrantStatus.PENDING and grant.expires_at > utcnow(),
    )


async def decide(
    store: _Store,
    settings: OAuthSettings,
    grant_id: str,
    *,
    approve: bool,
    scope: Capability,
    actor: str,
    issuer: str,
) -> str:
    """Approve (at ``scope``) or deny a pending request; the URL to send the browser to.

    Error handling:
        :class:`~agentws.core.errors.NotFoundError` if there is no such request;
        :class:`~agentws.core.errors.ConflictError` if it was decided already or
        has expired (the client must start again).
    """
    request = await consent_request(store, grant_id)
    grant = request.grant
    if not request.open:
        raise ConflictError("this request was decided already or has expired: start again")
    problem = redirect_uri_problem(grant.redirect_uri)
    if problem is not None:  # asked for before the rules: the browser is never sent there
        raise ConflictError(f"the client's redirect URI {problem}: this request cannot go on")
    if request.group is None:
        approve = False  # nothing to approve: the client is told the endpoint is wrong
    granted = scope if scope.within(grant.scope) else grant.scope
    code = new_secret(CODE_PREFIX) if approve else None
    decided = await store.decide_oauth_grant(
        grant_id,
        approve=approve,
        scope=granted,
        code_hash=hash_secret(code) if code is not None else None,
        decided_by=actor,
        expires_at=utcnow() + timedelta(seconds=settings.code_ttl_s),
    )
    if not decided:
        raise ConflictError("this request was decided already: start again")
    await record(
        store,
        request.workspace.id if request.workspace is not None else None,
        actor,
        "oauth.consent" if approve else "oauth.deny",
        grant.id,
        client=grant.client_id,
        client_name=request.client_name,
        group=request.endpoint,
        scope=granted.value if approve else None,
    )
    if code is not None:
        return construct_redirect_uri(grant.redirect_uri, code=code, state=grant.state, iss=issuer)
    if request.group is None:
        return construct_redirect_uri(
            grant.redirect_uri,
            error="invalid_target",
            error_description=f"there is no MCP endpoint {request.endpoint} on this service",
            state=grant.state,
            iss=issuer,
        )
    return construct_redirect_uri(
        grant.redirect_uri,
        error="access_denied",
        error_description="an administrator declined the request",
        state=grant.state,
        iss=issuer,
    )
