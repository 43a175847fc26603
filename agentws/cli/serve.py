"""``agentws init`` and ``agentws serve``: make the database and the first admin, run the service.

``init`` is an ordinary command (a :data:`~agentws.cli.output.Handler`),
the one that may create the database. ``serve`` opens no store here: it
hands the settings to :mod:`agentws.server` and runs until signalled, so
:func:`agentws.cli.main.main` calls :func:`serve` itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agentws import __version__
from agentws.admins.accounts import initialise
from agentws.cli.output import Context, Output
from agentws.cli.parsing import Verbs
from agentws.settings.config import Settings
from agentws.settings.secret_box import ensure_key_file
from agentws.store import redact_url

__all__ = ["add_serve_commands", "serve"]


async def _init(args: argparse.Namespace, ctx: Context) -> Output:
    result = await initialise(ctx.store, username=args.admin_username, actor=ctx.actor)
    where = redact_url(ctx.settings.database_url)
    data: dict[str, Any] = {
        "database": where,
        "created": result.created,
        "admin": {"id": result.admin.id, "username": result.admin.username},
    }
    key_note = ""
    if ctx.settings.secret_key is None:
        key_file, made = ensure_key_file(ctx.settings.data_dir)
        data["secret_key_file"] = str(key_file)
        if made:
            key_note = (
                f"\nCreated {key_file}: it encrypts stored secrets. Back it up with the database."
            )
    if not result.created:
        text = f"{where} is already initialised (admin {result.admin.username!r} exists)."
        return Output(data, text + key_note)
    data["admin"]["password"] = result.password
    text = (
        f"Initialised {where}.\n"
        f"Admin username: {result.admin.username}\n"
        f"Admin password: {result.password}\n"
        "Keep the password now: it is stored only as a hash and will not be shown again." + key_note
    )
    return Output(data, text)


def serve(settings: Settings, as_json: bool) -> int:
    """Run the service until SIGTERM or SIGINT, announcing where it listens; the exit status."""
    from agentws.agent.choose import describe_model
    from agentws.core.logs import configure_logging
    from agentws.server import serve_until_signalled

    configure_logging(settings.log_level, log_format=settings.log_format)

    def announce(binds: list[str]) -> None:
        base = settings.base_url or binds[0]
        urls = {
            "base_url": base,
            "dashboard": f"{base}/dashboard/",
            "api": f"{base}/api/v1/openapi.json",
            "health": f"{base}/healthz",
            "readiness": f"{base}/readyz",
        }
        if as_json:
            print(
                json.dumps(
                    {
                        **urls,
                        "binds": binds,
                        "database": redact_url(settings.database_url),
                        "model": describe_model(settings),
                    }
                )
            )
        else:
            print(
                f"agentws {__version__} is serving on {', '.join(binds)}\n"
                f"  public URL: {base}\n"
                f"  store:      {redact_url(settings.database_url)}\n"
                f"  model:      {describe_model(settings)}\n"
                f"  dashboard:  {urls['dashboard']} (sign in as the admin `agentws init` made)\n"
                f"  admin API:  {urls['api']}\n"
                f"  health:     {urls['health']}\n"
                f"  readiness:  {urls['readiness']}\n"
                "Stop with Ctrl+C or SIGTERM.",
            )
        sys.stdout.flush()

    serve_until_signalled(settings, on_started=announce)
    return 0


def add_serve_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``serve`` and ``init`` to the ``agentws`` command line."""
    serve_parser = commands.add_parser(
        "serve",
        parents=[common],
        help="run the service (Hypercorn, trio worker)",
        description="Run the service until SIGTERM or SIGINT, then drain within "
        "AGENTWS_SHUTDOWN_GRACE_S and exit 0.",
    )
    serve_parser.add_argument(
        "--bind",
        metavar="HOST:PORT",
        help="listen address (default: $AGENTWS_BIND, else 127.0.0.1:8080)",
    )

    init = commands.add_parser(
        "init",
        parents=[common],
        help="create the database and the first admin (prints the password once)",
    )
    init.add_argument("--admin-username", default="admin", metavar="NAME", help="default: admin")
    init.set_defaults(handler=_init)
