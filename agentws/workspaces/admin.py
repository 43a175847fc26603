"""Workspaces, groups and MCP tokens: creating, renaming, listing and revoking them.

The one place these operations live; the CLI, the dashboard and the admin
API call these functions. Each change is recorded in the audit log with the
acting operator. Token secrets are returned once, from :func:`create_token`,
and only their SHA-256 is stored.

Renaming changes a workspace's or group's display name only: the slug is
part of the group's MCP endpoint URL (:func:`endpoint_url`), which every
connected client has in its configuration, and of the dashboard's URLs, so
it stays what it was created as.
"""

from __future__ import annotations

import unicodedata
from typing import Protocol

import attrs

from agentws.common.audit import create_in_workspace, record, record_created, record_renamed
from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.models import Capability, Group, McpToken, Workspace
from agentws.domain.rules import MCP_TOKEN_PREFIX, check_slug, hash_secret, new_secret, utcnow
from agentws.store.sql_oauth import OAuthStore
from agentws.store.sql_records import RecordStore
from agentws.store.sql_tokens import TokenStore

__all__ = [
    "IssuedToken",
    "create_group",
    "create_token",
    "create_workspace",
    "endpoint_url",
    "list_groups",
    "list_tokens",
    "list_workspaces",
    "rename_group",
    "rename_workspace",
    "revoke_token",
]

# Long enough for "Cursor on Ada's laptop", short enough for a table column.
_MAX_NAME = 100
# Characters of the secret kept in clear so people can tell tokens apart.
_HINT_CHARS = 4


class _Store(RecordStore, OAuthStore, TokenStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class IssuedToken:
    """A newly created token: the record, and the secret shown this once."""

    token: McpToken
    secret: str = attrs.field(repr=False)


def endpoint_url(base_url: str, workspace_slug: str, group_slug: str) -> str:
    """The MCP endpoint URL of a group."""
    return f"{base_url.rstrip('/')}/mcp/g/{workspace_slug}/{group_slug}"


def _check_name(name: str, what: str) -> str:
    name = name.strip()
    if not name or len(name) > _MAX_NAME:
        raise ValidationError(f"{what} name must be 1 to {_MAX_NAME} characters")
    # One line of text: names show in menus, endpoint lists and terminals, and
    # PostgreSQL's text takes no NUL.
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise ValidationError(f"{what} name must not hold a control character (a line break, NUL)")
    return name


async def create_workspace(
    store: RecordStore, slug: str, *, name: str | None, actor: str
) -> Workspace:
    """Create a workspace addressed by ``slug``; ConflictError if it exists."""
    workspace = Workspace(
        slug=check_slug(slug, what="workspace slug"),
        name=_check_name(name or slug, "workspace"),
    )
    return await record_created(store, workspace, "workspace", workspace=None, actor=actor)


async def list_workspaces(store: RecordStore) -> list[Workspace]:
    return await store.select(Workspace)


async def rename_workspace(store: RecordStore, slug: str, *, name: str, actor: str) -> Workspace:
    """Give a workspace a new display name; its slug stays (see the module's docstring).

    Renaming to the name it has changes nothing and records nothing.

    Error handling:
        NotFoundError for an unknown workspace; ValidationError for an empty
        or too long name.
    """
    workspace = await store.workspace_by_slug(slug)
    renamed = _check_name(name, "workspace")
    return await record_renamed(store, workspace, "workspace", renamed, None, actor)


async def create_group(
    store: RecordStore, workspace_slug: str, slug: str, *, name: str | None, actor: str
) -> Group:
    """Create a group in a workspace; ConflictError if the slug is taken there."""
    return await create_in_workspace(
        store,
        Group,
        "group",
        workspace_slug,
        slug,
        name,
        lambda given: _check_name(given, "group"),
        actor=actor,
    )


async def list_groups(store: RecordStore, workspace_slug: str) -> list[Group]:
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.select(Group, workspace_id=workspace.id)


async def rename_group(
    store: RecordStore, workspace_slug: str, group_slug: str, *, name: str, actor: str
) -> Group:
    """Give a group a new display name; its slug, and so its endpoint URL, stay.

    Renaming to the name it has changes nothing and records nothing.

    Error handling:
        NotFoundError for an unknown workspace or group; ValidationError for
        an empty or too long name.
    """
    group = await store.group_by_slug(workspace_slug, group_slug)
    renamed = _check_name(name, "group")
    return await record_renamed(store, group, "group", renamed, workspace_slug, actor)


async def create_token(
    store: RecordStore,
    workspace_slug: str,
    group_slug: str,
    *,
    name: str,
    scope: Capability = Capability.WRITE,
    actor: str,
) -> IssuedToken:
    """Issue a bearer token for one group endpoint.

    Returns:
        The stored record and the secret (``agws_…``), which is not kept.
    """
    group = await store.group_by_slug(workspace_slug, group_slug)
    secret = new_secret(MCP_TOKEN_PREFIX)
    token = McpToken(
        group_id=group.id,
        name=_check_name(name, "token"),
        token_hash=hash_secret(secret),
        hint=secret[-_HINT_CHARS:],
        scope=scope,
    )
    await store.insert(token)
    await record(
        store,
        group.workspace_id,
        actor,
        "token.create",
        token.id,
        group=f"{workspace_slug}/{group_slug}",
        name=token.name,
        scope=token.scope.value,
    )
    return IssuedToken(token, secret)


async def list_tokens(store: RecordStore, workspace_slug: str, group_slug: str) -> list[McpToken]:
    group = await store.group_by_slug(workspace_slug, group_slug)
    return await store.select(McpToken, group_id=group.id)


async def revoke_token(
    store: _Store, workspace_slug: str, group_slug: str, token_ref: str, *, actor: str
) -> McpToken:
    """Revoke a group's token, named by id or by name.

    Error handling:
        NotFoundError if the group has no such token; ValidationError if a
        name matches several tokens (use the id).
    """
    group = await store.group_by_slug(workspace_slug, group_slug)
    by_id = await store.find(McpToken, id=token_ref, group_id=group.id)
    matches = [by_id] if by_id else await store.select(McpToken, group_id=group.id, name=token_ref)
    if not matches:
        raise NotFoundError(
            f"no token {token_ref!r} in {workspace_slug}/{group_slug} "
            f"(see `agentws token list {workspace_slug} {group_slug}`)"
        )
    if len(matches) > 1:
        raise ValidationError(f"{len(matches)} tokens are named {token_ref!r}: revoke by id")
    revoked = await store.revoke_token(matches[0].id)
    if revoked.oauth_family_id is not None:
        # An OAuth client would refresh its way back in: its consent goes too.
        await store.revoke_oauth_family(revoked.oauth_family_id, utcnow())
    await record(
        store,
        group.workspace_id,
        actor,
        "token.revoke",
        revoked.id,
        group=f"{workspace_slug}/{group_slug}",
        name=revoked.name,
    )
    return revoked
