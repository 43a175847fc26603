"""``agentws admin``: dashboard administrators and their admin API tokens."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentws.cli.output import Context, Output, iso
from agentws.cli.parsing import Verbs, noun
from agentws.core.errors import ValidationError
from agentws.domain.models import Admin, AdminToken

__all__ = ["add_admin_commands"]


def _token_json(token: AdminToken, admin: Admin) -> dict[str, Any]:
    return {
        "id": token.id,
        "admin": admin.username,
        "name": token.name,
        "revoked": token.revoked_at is not None,
        "created_at": iso(token.created_at),
        "last_used_at": iso(token.last_used_at),
        "revoked_at": iso(token.revoked_at),
    }


async def _create(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.admins.accounts import create_admin

    password = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise ValidationError("no password on stdin")
    admin, shown = await create_admin(ctx.store, args.username, password=password, actor=ctx.actor)
    data: dict[str, Any] = {"id": admin.id, "username": admin.username}
    text = f"Created admin {admin.username!r} ({admin.id})."
    if password is None:
        data["password"] = shown
        text += f"\nPassword (shown once): {shown}"
    return Output(data, text)


async def _delete(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.admins.accounts import delete_admin

    admin = await delete_admin(ctx.store, args.username, actor=ctx.actor)
    return Output(
        {"id": admin.id, "username": admin.username, "deleted": True},
        f"Deleted admin {admin.username!r} ({admin.id}), its sessions and admin API tokens.",
    )


async def _list(args: argparse.Namespace, ctx: Context) -> Output:
    admins = await ctx.store.select(Admin)
    rows = [{"id": a.id, "username": a.username, "created_at": iso(a.created_at)} for a in admins]
    text = "\n".join(f"{r['username']}  {r['id']}  {r['created_at']}" for r in rows)
    return Output(rows, text or "No admins yet: run `agentws init`.")


async def _token_create(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.admins.access import create_admin_token, find_admin

    token, secret = await create_admin_token(ctx.store, args.admin, args.name, actor=ctx.actor)
    data = {**_token_json(token, await find_admin(ctx.store, args.admin)), "token": secret}
    base = ctx.settings.public_base_url
    text = (
        f"Created admin API token {token.name!r} ({token.id}) acting as {args.admin!r}.\n"
        f"Token (shown once): {secret}\n"
        f"Use it: curl -H 'Authorization: Bearer {secret}' {base}/api/v1/workspaces"
    )
    return Output(data, ctx.noted(text))


async def _token_list(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.admins.access import list_admin_tokens

    rows = [_token_json(t, a) for t, a in await list_admin_tokens(ctx.store)]
    lines = [
        f"{r['name']}  {r['admin']}  {r['id']}  "
        f"{'revoked' if r['revoked'] else 'active'}  last used {r['last_used_at'] or 'never'}"
        for r in rows
    ]
    return Output(rows, "\n".join(lines) or "No admin API tokens yet.")


async def _token_revoke(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.admins.access import revoke_admin_token

    token = await revoke_admin_token(ctx.store, args.token, actor=ctx.actor)
    admin = await ctx.store.get(Admin, token.admin_id)
    return Output(
        _token_json(token, admin), f"Revoked admin API token {token.name!r} ({token.id})."
    )


def add_admin_commands(commands: Verbs, common: argparse.ArgumentParser) -> None:
    """Add ``admin`` to the ``agentws`` command."""
    admin = noun(
        commands,
        common,
        "admin",
        "dashboard administrators and admin API tokens",
        "Administrators sign in to the dashboard; admin API tokens act as one of "
        "them in the JSON API under /api/v1 (see /api/v1/openapi.json).",
    )
    create = admin.verb(
        "create", "create an admin (prints a generated password once)", handler=_create
    )
    create.add_argument("username", metavar="USERNAME")
    create.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password (12 characters or more) from stdin instead of generating one",
    )
    admin.verb("list", "list admins", handler=_list)
    delete = admin.verb(
        "delete",
        "delete an admin, its sessions and admin API tokens (never the last admin)",
        handler=_delete,
    )
    delete.add_argument("username", metavar="USERNAME")

    token = admin.noun("token", "admin API tokens", dest="token_action")
    t_create = token.verb(
        "create", "create an admin API token (printed once)", handler=_token_create
    )
    t_create.add_argument("admin", metavar="ADMIN", help="the admin it acts as")
    t_create.add_argument("--name", required=True, help="what it is for, e.g. 'deploy-script'")
    token.verb("list", "list admin API tokens", handler=_token_list)
    t_revoke = token.verb("revoke", "revoke a token at once", handler=_token_revoke)
    t_revoke.add_argument("token", metavar="TOKEN_ID", help="atk_…")
