"""How a remote MCP connector authenticates upstream, on the command line.

``agentws connector add … --auth oauth|client-credentials`` (the options
:func:`add_auth_arguments` adds) saves the mode and its settings; the
client's secret or private key comes from ``--secret-env VAR`` or
``--secret-stdin`` like any connector secret. ``agentws connector authorize
WORKSPACE NAME`` (and ``add`` itself, for those modes) then runs the flow of
:mod:`agentws.connectors.authorize` in this process: for ``oauth`` it prints
the upstream's authorization URL, waits (up to 10 minutes) for the admin to
consent there, and keeps the grant; the running service's link uses it at
once. The upstream sends the browser back to the service
(``AGENTWS_BASE_URL``), where a signed-in admin completes it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentws.cli.output import Context, Output
from agentws.cli.parsing import Noun
from agentws.connectors.admin import find_connector
from agentws.connectors.authorize import (
    AUTHORIZATION_S,
    authorize_connector,
    disconnect_connector,
    redirect_uri,
)
from agentws.connectors.upstream_auth import UpstreamAuth
from agentws.core.errors import ValidationError
from agentws.domain.models import Connector, ConnectorGrant
from agentws.doors.views import connector_json

__all__ = [
    "add_auth_arguments",
    "add_authorize_command",
    "auth_from",
    "authorize_now",
    "grant_text",
]

_MODES = {"static": "static", "oauth": "oauth", "client-credentials": "client_credentials"}


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """``connector add``'s options for how a remote MCP connector authenticates upstream."""
    group = parser.add_argument_group(
        "authenticating upstream (remote MCP)",
        "static (the default): the secret is sent as a header. oauth: the MCP "
        "authorization flow (authorization code with PKCE): agentws registers itself "
        "(a client metadata document, dynamic registration, or --client-id), and an "
        "admin consents on the upstream's page. client-credentials: a client registered "
        "in advance gets tokens with its secret (or, with --client-auth private_key_jwt, "
        "a PEM private key) from --secret-env VAR or --secret-stdin.",
    )
    group.add_argument("--auth", choices=sorted(_MODES), default="static")
    group.add_argument("--client-id", metavar="ID", help="a client registered in advance")
    group.add_argument(
        "--client-auth",
        choices=["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
        help="how the client authenticates at the token endpoint "
        "(default: client_secret_basic with a secret, none without)",
    )
    group.add_argument("--scope", help="the scope to ask for (default: what the upstream asks)")
    group.add_argument(
        "--issuer", metavar="URL", help="the authorization server the client is registered with"
    )
    group.add_argument(
        "--signing-algorithm",
        default="RS256",
        metavar="ALG",
        help="private_key_jwt's algorithm (default: %(default)s)",
    )


def auth_from(args: argparse.Namespace) -> UpstreamAuth:
    """The auth mode and settings ``connector add`` was given."""
    mode = _MODES[args.auth]
    if mode == "static" and (args.client_id or args.client_auth or args.scope or args.issuer):
        raise ValidationError("--client-id, --client-auth, --scope and --issuer need --auth")
    return UpstreamAuth(
        mode=mode,  # type: ignore[arg-type]  # one of _MODES
        client_id=args.client_id,
        client_auth=args.client_auth,
        scope=args.scope,
        issuer=args.issuer,
        signing_algorithm=args.signing_algorithm,
    )


async def _show(url: str) -> None:
    # stderr: the URL is for a person, and stdout stays the command's answer (--json).
    print(
        "Open this URL in a browser signed in to agentws's dashboard, and consent there\n"
        f"(waiting up to {AUTHORIZATION_S / 60:g} minutes):\n  {url}",
        file=sys.stderr,
        flush=True,
    )


async def authorize_now(ctx: Context, workspace: str, connector: Connector) -> dict[str, Any]:
    """Run ``connector``'s authorization here; what it found, for the command's output."""
    if connector.auth == "oauth":
        back = redirect_uri(_base(ctx))
        print(f"The upstream will send the browser back to {back}", file=sys.stderr)
    tools = await authorize_connector(
        ctx.store,
        ctx.keys.box(),
        ctx.settings,
        connector,
        workspace_slug=workspace,
        started_by=ctx.actor,
        show=_show,
        base_url=_base(ctx),
    )
    return {"authorized": True, "tools": len(tools)}


def _base(ctx: Context) -> str:
    """agentws's base URL as browsers reach it: where the upstream sends the admin back
    (the one the CLI prints URLs with, see :mod:`agentws.cli.urls`)."""
    if ctx.url_note:
        print(ctx.url_note, file=sys.stderr)
    return (ctx.settings.base_url or ctx.settings.public_base_url).rstrip("/")


def grant_text(connector: Connector, grant: ConnectorGrant | None) -> str:
    """One line on where a connector's authorization stands."""
    if connector.auth == "static":
        return "static (its secret as a header)"
    if grant is None:
        return f"{connector.auth}: needs authorization (never connected)"
    if grant.state == "connected":
        until = (
            f", token until {grant.expires_at:%Y-%m-%d %H:%M:%S} UTC" if grant.expires_at else ""
        )
        scope = f", scope {grant.scope}" if grant.scope else ""
        return f"{connector.auth}: connected{until}{scope}"
    return f"{connector.auth}: needs authorization ({grant.reason or 'no tokens'})"


async def _authorize(args: argparse.Namespace, ctx: Context) -> Output:
    connector = await find_connector(ctx.store, args.workspace, args.name)
    found = await authorize_now(ctx, args.workspace, connector)
    grant = await ctx.store.find(ConnectorGrant, connector_id=connector.id)
    data = {**connector_json(connector, args.workspace), **found}
    text = (
        f"Connector {connector.name!r} is authorized: {grant_text(connector, grant)}. "
        f"It lists {found['tools']} tools; the service's link uses the grant at once "
        f"(refresh the cache with `agentws connector refresh {args.workspace} {connector.name}`)."
    )
    return Output(data, text)


async def _disconnect(args: argparse.Namespace, ctx: Context) -> Output:
    connector = await find_connector(ctx.store, args.workspace, args.name)
    had = await ctx.store.find(ConnectorGrant, connector_id=connector.id)
    revoked = await disconnect_connector(
        ctx.store,
        ctx.keys.box(),
        ctx.settings,
        connector,
        workspace_slug=args.workspace,
        actor=ctx.actor,
    )
    data = {**connector_json(connector, args.workspace), "revoked": revoked}
    if had is None:
        return Output(data, f"Connector {connector.name!r} was not connected.")
    said = (
        "its tokens were revoked at the upstream"
        if revoked
        else "the upstream offers no revocation (or refused it): revoke agentws's access there"
    )
    return Output(
        data,
        f"Connector {connector.name!r} is disconnected: {said}, and its grant is deleted. "
        f"Connect it again with `agentws connector authorize {args.workspace} {connector.name}`.",
    )


def add_authorize_command(connector: Noun) -> None:
    """``connector authorize`` and ``connector disconnect``."""
    verb = connector.verb(
        "authorize",
        "connect an OAuth connector upstream (again)",
        "workspace",
        handler=_authorize,
        description="Runs the connector's authorization: for --auth oauth, prints the "
        "upstream's page to open; once an admin consented there (the upstream sends the "
        "browser back to the service, to a signed-in dashboard session), keeps the grant, "
        "sealed, which the service's link uses at once. For client-credentials, fetches a "
        "token. Audited as connector.authorize.",
    )
    verb.add_argument("name", metavar="NAME", help="connector name")
    gone = connector.verb(
        "disconnect",
        "revoke an OAuth connector's tokens upstream and delete its grant",
        "workspace",
        handler=_disconnect,
        description="Revokes the connector's tokens at the upstream's revocation endpoint "
        "(RFC 7009) when it offers one, then deletes the grant: its tools fail until it is "
        "authorized again. Audited as connector.disconnect.",
    )
    gone.add_argument("name", metavar="NAME", help="connector name")
