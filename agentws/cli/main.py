"""The ``agentws`` command line: its parser and :func:`main`, which runs one command.

The command groups live in the modules beside this one, each adding its
parsers with an ``add_…_commands`` function; shared output and errors are
in :mod:`agentws.cli.output`.

Every subcommand takes ``--database URL`` (default: ``AGENTWS_DATABASE_URL``,
else ``sqlite:///./agentws.db``) and ``--json`` (one JSON document on
stdout, for scripts). Only ``init`` and ``serve`` create the database;
the other commands refuse one that is not there. Errors go to stderr with
exit status 1 (2 for a malformed command line or a database that is not
there); stdout then stays empty.
"""

from __future__ import annotations

import argparse
import functools
import getpass
import os
import sys
from collections.abc import Sequence

import attrs
import trio

from agentws import __version__
from agentws.cli.admins import add_admin_commands
from agentws.cli.approvals import add_approval_commands
from agentws.cli.audit import add_audit_commands
from agentws.cli.channels import add_channel_commands
from agentws.cli.connectors import add_connector_commands
from agentws.cli.doctor import add_doctor_command
from agentws.cli.events import add_event_commands
from agentws.cli.libraries import add_library_commands
from agentws.cli.oauth import add_oauth_commands
from agentws.cli.output import Context, Handler, Output, print_error, print_output
from agentws.cli.serve import add_serve_commands, serve
from agentws.cli.tools import add_tool_commands
from agentws.cli.urls import printed_base_url
from agentws.cli.webhooks import add_webhook_commands
from agentws.cli.workspaces import add_workspace_commands
from agentws.core.errors import AgentwsError, ConfigError, NoDatabaseError, sole_exception
from agentws.settings.config import Settings
from agentws.store import open_store

__all__ = ["build_parser", "main"]


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--database",
        metavar="URL",
        help="sqlite:///PATH or postgresql://USER@HOST/DB (default: $AGENTWS_DATABASE_URL, "
        "else sqlite:///./agentws.db)",
    )
    common.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return common


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, with help on every level."""
    common = _common()
    parser = argparse.ArgumentParser(
        prog="agentws",
        description="Run and administer agentws, the self-hostable agent workspace service.",
        epilog="Run `agentws COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"agentws {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    add_serve_commands(commands, common)
    add_workspace_commands(commands, common)
    add_library_commands(commands, common)
    add_connector_commands(commands, common)
    add_tool_commands(commands, common)
    add_approval_commands(commands, common)
    add_audit_commands(commands, common)
    add_webhook_commands(commands, common)
    add_event_commands(commands, common)
    add_channel_commands(commands, common)
    add_admin_commands(commands, common)
    add_oauth_commands(commands, common)
    add_doctor_command(commands, common)
    return parser


def _leaf_error(exc: BaseException) -> BaseException:
    """The error a person should see, out of trio's exception groups."""
    exc = sole_exception(exc)
    if isinstance(exc, BaseExceptionGroup):
        found = exc.subgroup(lambda e: isinstance(e, AgentwsError | OSError))
        if found is not None:
            return _leaf_error(found.exceptions[0])
    cause = exc.__cause__ or exc.__context__
    if not isinstance(exc, AgentwsError | OSError) and isinstance(cause, AgentwsError):
        return cause
    return exc


def _settings(args: argparse.Namespace) -> Settings:
    flags = {"AGENTWS_DATABASE_URL": ("--database", args.database)}
    flags["AGENTWS_BIND"] = ("--bind", getattr(args, "bind", None))
    for flag, value in flags.values():
        # An empty environment variable means "unset"; an empty flag is a mistake.
        if value is not None and not value.strip():
            raise ConfigError(f"{flag}: must not be empty")
    overrides = {variable: value for variable, (_, value) in flags.items() if value is not None}
    try:
        return Settings.from_env({**os.environ, **overrides})
    except ConfigError as exc:
        # Name the flag the person typed rather than the variable it stands for.
        for variable, (flag, value) in flags.items():
            if value is not None and exc.message.startswith(f"{variable}:"):
                raise ConfigError(flag + exc.message[len(variable) :]) from None
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    A reader that stops early (``agentws … | head -2``) ends the command
    quietly, with status 1 and no traceback, as other Unix tools do.
    """
    try:
        status = _main(argv)
        # What is still buffered goes now, while a closed pipe can be caught here.
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return 1
    return status


def _discard_stdout() -> None:
    # Python flushes stdout again on exit: point it at /dev/null, so that
    # flush does not fail with a second BrokenPipeError.
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return  # not a file (tests swap in a buffer): nothing is flushed to a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


@functools.cache
def _parser() -> argparse.ArgumentParser:
    # Built once per process: building it costs 20-40 ms (900 parsers, each of
    # argparse's messages looked up in gettext's catalogs), which a program
    # calling main more than once (the test suite) would pay at every call.
    # Parsing leaves the parser as it was.
    return build_parser()


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
        if args.command == "serve":
            return serve(settings, args.json)
        handler: Handler = args.handler
        actor = f"cli:{getpass.getuser()}"

        async def run() -> Output:
            # Only init makes a database: any other command run in the wrong
            # directory (or with a mistyped URL) would leave an empty one there.
            async with open_store(
                settings.database_url, pool_size=2, create=args.command == "init"
            ) as store:
                base = await printed_base_url(settings, store)
                printing = attrs.evolve(settings, base_url=base.url)
                return await handler(args, Context(printing, store, actor, base.note))

        output = trio.run(run)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        error = _leaf_error(exc)
        if isinstance(error, BrokenPipeError):
            raise error from None  # the reader has gone (see main)
        if not isinstance(error, AgentwsError | OSError):
            raise
        if isinstance(error, NoDatabaseError):
            fix = "create it with `agentws init`, or point" if error.init_creates else "or point"
            error = NoDatabaseError(
                f"{error.message}{':' if error.init_creates else ';'} {fix} --database "
                "(or AGENTWS_DATABASE_URL) at the one you mean"
            )
        return print_error(error, args.json)
    return print_output(output, args.json)
