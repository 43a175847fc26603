"""The ``agentws workspace``, ``group`` and ``token`` commands.

Workspaces, their groups (one MCP endpoint each) and the bearer tokens for
those endpoints. The work is done by :mod:`agentws.workspaces.admin`.
"""

from __future__ import annotations

import argparse
from typing import Any

from agentws.cli.output import Context, Output, table
from agentws.cli.parsing import Verbs, noun
from agentws.domain.models import Capability, Group
from agentws.doors.views import group_json, token_json, workspace_json
from agentws.settings.config import Settings
from agentws.workspaces.admin import (
    create_group,
    create_token,
    create_workspace,
    endpoint_url,
    list_groups,
    list_tokens,
    list_workspaces,
    rename_group,
    rename_workspace,
    revoke_token,
)

__all__ = ["add_workspace_commands"]


def _group_json(g: Group, workspace: str, settings: Settings) -> dict[str, Any]:
    return group_json(g, workspace, endpoint_url(settings.public_base_url, workspace, g.slug))


async def _workspace_create(args: argparse.Namespace, ctx: Context) -> Output:
    w = await create_workspace(ctx.store, args.slug, name=args.name, actor=ctx.actor)
    return Output(workspace_json(w), f"Created workspace {w.slug!r} ({w.id}).")


async def _workspace_list(args: argparse.Namespace, ctx: Context) -> Output:
    rows = [workspace_json(w) for w in await list_workspaces(ctx.store)]
    empty = "No workspaces yet: create one with `agentws workspace create SLUG`."
    return Output(rows, table(rows, ("slug", "name", "id", "created_at"), empty))


async def _workspace_rename(args: argparse.Namespace, ctx: Context) -> Output:
    w = await rename_workspace(ctx.store, args.slug, name=args.name, actor=ctx.actor)
    text = f"Workspace {w.slug!r} is named {w.name!r}; its slug, and so its URLs, stay."
    return Output(workspace_json(w), text)


async def _group_create(args: argparse.Namespace, ctx: Context) -> Output:
    g = await create_group(ctx.store, args.workspace, args.slug, name=args.name, actor=ctx.actor)
    data = _group_json(g, args.workspace, ctx.settings)
    text = f"Created group {args.workspace}/{g.slug} ({g.id}).\nEndpoint: {data['url']}"
    return Output(data, ctx.noted(text))


async def _group_list(args: argparse.Namespace, ctx: Context) -> Output:
    groups = await list_groups(ctx.store, args.workspace)
    rows = [_group_json(g, args.workspace, ctx.settings) for g in groups]
    empty = (
        f"No groups in {args.workspace!r}: "
        f"create one with `agentws group create {args.workspace} SLUG`."
    )
    return Output(rows, table(rows, ("slug", "name", "id", "url"), empty))


async def _group_rename(args: argparse.Namespace, ctx: Context) -> Output:
    g = await rename_group(ctx.store, args.workspace, args.slug, name=args.name, actor=ctx.actor)
    data = _group_json(g, args.workspace, ctx.settings)
    text = (
        f"Group {args.workspace}/{g.slug} is named {g.name!r}; its slug, and so its endpoint "
        f"URL, stay: {data['url']}"
    )
    return Output(data, ctx.noted(text))


async def _token_create(args: argparse.Namespace, ctx: Context) -> Output:
    issued = await create_token(
        ctx.store,
        args.workspace,
        args.group,
        name=args.name,
        scope=Capability(args.scope),
        actor=ctx.actor,
    )
    url = endpoint_url(ctx.settings.public_base_url, args.workspace, args.group)
    data = {
        **token_json(issued.token, args.workspace, args.group),
        "token": issued.secret,
        "url": url,
    }
    text = (
        f"Created token {issued.token.name!r} ({issued.token.id}) "
        f"for {args.workspace}/{args.group}, scope {issued.token.scope.value}.\n"
        f"Endpoint: {url}\n"
        f"Token:    {issued.secret}\n"
        "Copy the token now: only its hash is stored and it cannot be shown again."
    )
    return Output(data, ctx.noted(text))


async def _token_list(args: argparse.Namespace, ctx: Context) -> Output:
    tokens = await list_tokens(ctx.store, args.workspace, args.group)
    rows = [token_json(t, args.workspace, args.group) for t in tokens]
    empty = (
        f"No tokens for {args.workspace}/{args.group}: create one with "
        f"`agentws token create {args.workspace} {args.group} --name NAME`."
    )
    columns = ("name", "id", "scope", "status", "hint", "last_used_at")
    return Output(rows, table(rows, columns, empty))


async def _token_revoke(args: argparse.Namespace, ctx: Context) -> Output:
    t = await revoke_token(ctx.store, args.workspace, args.group, args.token, actor=ctx.actor)
    data = token_json(t, args.workspace, args.group)
    return Output(data, f"Revoked token {t.name!r} ({t.id}) of {args.workspace}/{args.group}.")


def add_workspace_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``workspace``, ``group`` and ``token`` to the ``agentws`` command line."""
    workspace = noun(commands, common, "workspace", "create, list and rename workspaces")
    w_create = workspace.verb("create", "create a workspace", handler=_workspace_create)
    w_create.add_argument("slug", metavar="SLUG", help="address in URLs: [a-z0-9][a-z0-9-]*")
    w_create.add_argument("--name", help="display name (default: the slug)")
    workspace.verb("list", "list workspaces", handler=_workspace_list)
    workspace.rename(
        "give a workspace a new display name (its slug stays)",
        "Change a workspace's display name. Its slug is in every group's "
        "endpoint URL and the dashboard's addresses, so it does not change. Audited "
        "(workspace.rename, with the name it had); the name it already has changes nothing.",
        _workspace_rename,
    ).add_argument("slug", metavar="SLUG", help="workspace slug")

    group = noun(commands, common, "group", "create, list and rename groups of a workspace")
    g_create = group.verb(
        "create", "create a group (one MCP endpoint)", "workspace", handler=_group_create
    )
    g_create.add_argument("slug", metavar="SLUG", help="group slug: [a-z0-9][a-z0-9-]*")
    g_create.add_argument("--name", help="display name (default: the slug)")
    group.verb("list", "list a workspace's groups", "workspace", handler=_group_list)
    group.rename(
        "give a group a new display name (its slug and endpoint URL stay)",
        "Change a group's display name. Its slug is in its MCP endpoint URL, "
        "which clients keep, so it does not change. Audited (group.rename, with the name it "
        "had); the name it already has changes nothing.",
        _group_rename,
        "workspace",
    ).add_argument("slug", metavar="GROUP", help="group slug")

    token = noun(commands, common, "token", "issue, list and revoke MCP endpoint tokens")
    t_create = token.verb(
        "create",
        "issue a bearer token for a group endpoint (shown once)",
        "workspace",
        "group",
        handler=_token_create,
    )
    t_create.add_argument("--name", required=True, help="who or what uses it, e.g. 'cursor-ada'")
    t_create.add_argument(
        "--scope",
        choices=[c.value for c in Capability],
        default=Capability.WRITE.value,
        help="highest tool capability the token may use (default: write)",
    )
    token.verb("list", "list a group's tokens", "workspace", "group", handler=_token_list)
    t_revoke = token.verb(
        "revoke", "revoke a token at once", "workspace", "group", handler=_token_revoke
    )
    t_revoke.add_argument("token", metavar="TOKEN", help="token id (tok_…) or name")
