"""The ``agentws oauth client`` commands: OAuth clients an operator registers, lists, removes.

Clients also register themselves (RFC 7591) or are known by their metadata
document's URL, as ``AGENTWS_OAUTH_REGISTRATION`` allows; the list shows
them all. The work is done by :mod:`agentws.oauth.operator_clients`.
"""

from __future__ import annotations

import argparse

from agentws.cli.output import Context, Output, table
from agentws.cli.parsing import Verbs
from agentws.doors.views import oauth_client_json
from agentws.oauth import operator_clients

__all__ = ["add_oauth_commands"]


async def _client_add(args: argparse.Namespace, ctx: Context) -> Output:
    registered = await operator_clients.register_client(
        ctx.store,
        ctx.keys.optional(),
        name=args.name,
        redirect_uris=args.redirect_uri,
        confidential=args.confidential,
        actor=ctx.actor,
    )
    data = oauth_client_json(registered.client)
    text = f"Registered OAuth client {registered.client.name!r}.\nClient id: {data['client_id']}"
    if registered.secret is not None:
        data["client_secret"] = registered.secret
        text += (
            f"\nSecret:    {registered.secret}\n"
            "Copy the secret now: it is stored encrypted and cannot be shown again."
        )
    return Output(data, ctx.noted(text))


async def _client_list(args: argparse.Namespace, ctx: Context) -> Output:
    rows = [oauth_client_json(c) for c in await operator_clients.list_clients(ctx.store)]
    empty = "No OAuth clients yet: register one with `agentws oauth client add`."
    return Output(rows, table(rows, ("name", "client_id", "kind", "created_at"), empty))


async def _client_remove(args: argparse.Namespace, ctx: Context) -> Output:
    client = await operator_clients.remove_client(ctx.store, args.client, actor=ctx.actor)
    text = f"Removed OAuth client {client.name!r}: its tokens are revoked, its sessions closing."
    return Output(oauth_client_json(client), text)


def add_oauth_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``oauth client add|list|remove`` to the ``agentws`` command line."""
    oauth = commands.add_parser("oauth", help="OAuth clients of the MCP endpoints").add_subparsers(
        dest="area", metavar="AREA", required=True
    )
    client = oauth.add_parser(
        "client", help="register, list and remove OAuth clients"
    ).add_subparsers(dest="action", metavar="ACTION", required=True)
    add = client.add_parser(
        "add",
        parents=[common],
        help="register a client by hand (for AGENTWS_OAUTH_REGISTRATION=closed, or a secret)",
    )
    add.add_argument("--name", required=True, help="shown on the consent page, e.g. 'Team VS Code'")
    add.add_argument(
        "--redirect-uri",
        action="append",
        required=True,
        metavar="URI",
        help="where codes may be sent (repeat for several, at most 10): https, http on "
        "loopback (127.0.0.1, [::1], localhost; any port matches) or an app's own scheme "
        "in reverse-domain form (com.example.app:/callback); no user info or fragment",
    )
    add.add_argument(
        "--confidential",
        action="store_true",
        help="issue a client secret (shown once); default: a public client using PKCE only",
    )
    add.set_defaults(handler=_client_add)
    client.add_parser("list", parents=[common], help="list every OAuth client").set_defaults(
        handler=_client_list
    )
    remove = client.add_parser(
        "remove", parents=[common], help="remove a client and revoke its tokens at once"
    )
    remove.add_argument("client", metavar="CLIENT", help="client id (or its record id, ocl_…)")
    remove.set_defaults(handler=_client_remove)
