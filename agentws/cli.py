"""The ``agentws`` command: run the service and administer it from a shell.

Every subcommand takes ``--database URL`` (default: ``AGENTWS_DATABASE_URL``,
else ``sqlite:///./agentws.db``) and ``--json`` (one JSON document on
stdout, for scripts). Only ``init`` and ``serve`` create the database;
the other commands refuse one that is not there. Errors go to stderr with
exit status 1 (2 for a malformed command line or a database that is not
there); stdout then stays empty.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import trio

from agentws import __version__
from agentws.accounts import initialise
from agentws.cli_urls import printed_base_url
from agentws.config import Settings
from agentws.domain.models import Capability, Group
from agentws.errors import AgentwsError, ConfigError, NoDatabaseError
from agentws.registry import (
    create_group,
    create_token,
    create_workspace,
    endpoint_url,
    list_groups,
    list_tokens,
    list_workspaces,
    revoke_token,
)
from agentws.secret_box import ensure_key_file
from agentws.store import Store, open_store, redact_url
from agentws.views import token_json, workspace_json

__all__ = ["build_parser", "main"]


@attrs.frozen
class Output:
    """What a command prints: ``data`` with ``--json``, ``text`` otherwise."""

    data: Any
    text: str
    #: The exit status (a report that found problems prints them, then exits 1).
    status: int = 0


@attrs.frozen
class Context:
    #: ``base_url`` is the one URLs are printed with (see :mod:`agentws.cli_urls`).
    settings: Settings
    store: Store
    actor: str
    #: Said under a printed URL that is only a guess (no AGENTWS_BASE_URL, no instance).
    url_note: str | None = None

    def noted(self, text: str) -> str:
        """``text`` (which shows a URL), with the note on that URL if there is one."""
        return f"{text}\n{self.url_note}" if self.url_note else text


Handler = Callable[[argparse.Namespace, Context], Awaitable[Output]]


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _group_json(g: Group, workspace: str, settings: Settings) -> dict[str, Any]:
    return {
        "id": g.id,
        "workspace": workspace,
        "slug": g.slug,
        "name": g.name,
        "url": endpoint_url(settings.public_base_url, workspace, g.slug),
        "created_at": _iso(g.created_at),
    }


def _table(rows: list[dict[str, Any]], columns: Sequence[str], empty: str) -> str:
    if not rows:
        return empty
    # One line per row, whatever a cell holds (an error stored before excerpts were bounded).
    cells = [[" ".join(str(r.get(c) or "-").split()) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


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


async def _workspace_create(args: argparse.Namespace, ctx: Context) -> Output:
    w = await create_workspace(ctx.store, args.slug, name=args.name, actor=ctx.actor)
    return Output(workspace_json(w), f"Created workspace {w.slug!r} ({w.id}).")


async def _workspace_list(args: argparse.Namespace, ctx: Context) -> Output:
    rows = [workspace_json(w) for w in await list_workspaces(ctx.store)]
    empty = "No workspaces yet: create one with `agentws workspace create SLUG`."
    return Output(rows, _table(rows, ("slug", "name", "id", "created_at"), empty))


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
    return Output(rows, _table(rows, ("slug", "name", "id", "url"), empty))


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
    return Output(rows, _table(rows, columns, empty))


async def _token_revoke(args: argparse.Namespace, ctx: Context) -> Output:
    t = await revoke_token(ctx.store, args.workspace, args.group, args.token, actor=ctx.actor)
    data = token_json(t, args.workspace, args.group)
    return Output(data, f"Revoked token {t.name!r} ({t.id}) of {args.workspace}/{args.group}.")


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

    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="run the service (Hypercorn, trio worker)",
        description="Run the service until SIGTERM or SIGINT, then drain within "
        "AGENTWS_SHUTDOWN_GRACE_S and exit 0.",
    )
    serve.add_argument(
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

    workspace = commands.add_parser("workspace", help="create and list workspaces").add_subparsers(
        dest="action", metavar="ACTION", required=True
    )
    w_create = workspace.add_parser("create", parents=[common], help="create a workspace")
    w_create.add_argument("slug", metavar="SLUG", help="address in URLs: [a-z0-9][a-z0-9-]*")
    w_create.add_argument("--name", help="display name (default: the slug)")
    w_create.set_defaults(handler=_workspace_create)
    workspace.add_parser("list", parents=[common], help="list workspaces").set_defaults(
        handler=_workspace_list
    )

    group = commands.add_parser(
        "group", help="create and list groups of a workspace"
    ).add_subparsers(dest="action", metavar="ACTION", required=True)
    g_create = group.add_parser(
        "create", parents=[common], help="create a group (one MCP endpoint)"
    )
    g_create.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    g_create.add_argument("slug", metavar="SLUG", help="group slug: [a-z0-9][a-z0-9-]*")
    g_create.add_argument("--name", help="display name (default: the slug)")
    g_create.set_defaults(handler=_group_create)
    g_list = group.add_parser("list", parents=[common], help="list a workspace's groups")
    g_list.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    g_list.set_defaults(handler=_group_list)

    token = commands.add_parser(
        "token", help="issue, list and revoke MCP endpoint tokens"
    ).add_subparsers(dest="action", metavar="ACTION", required=True)
    t_create = token.add_parser(
        "create", parents=[common], help="issue a bearer token for a group endpoint (shown once)"
    )
    t_create.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    t_create.add_argument("group", metavar="GROUP", help="group slug")
    t_create.add_argument("--name", required=True, help="who or what uses it, e.g. 'cursor-ada'")
    t_create.add_argument(
        "--scope",
        choices=[c.value for c in Capability],
        default=Capability.WRITE.value,
        help="highest tool capability the token may use (default: write)",
    )
    t_create.set_defaults(handler=_token_create)
    t_list = token.add_parser("list", parents=[common], help="list a group's tokens")
    t_list.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    t_list.add_argument("group", metavar="GROUP", help="group slug")
    t_list.set_defaults(handler=_token_list)
    t_revoke = token.add_parser("revoke", parents=[common], help="revoke a token at once")
    t_revoke.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    t_revoke.add_argument("group", metavar="GROUP", help="group slug")
    t_revoke.add_argument("token", metavar="TOKEN", help="token id (tok_…) or name")
    t_revoke.set_defaults(handler=_token_revoke)

    # Imported here, not at the top: that module builds on this one's Output and Context.
    from agentws.cli_admins import add_admin_commands
    from agentws.cli_connectors import add_connector_commands
    from agentws.cli_doctor import add_doctor_command
    from agentws.cli_libraries import add_library_commands
    from agentws.cli_tools import add_tool_commands
    from agentws.cli_webhooks import add_webhook_commands

    add_library_commands(commands, common)
    add_connector_commands(commands, common)
    add_tool_commands(commands, common)
    add_webhook_commands(commands, common)
    add_admin_commands(commands, common)
    add_doctor_command(commands, common)
    return parser


def _leaf_error(exc: BaseException) -> BaseException:
    """The error a person should see, out of trio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        found = exc.subgroup(lambda e: isinstance(e, AgentwsError | OSError))
        if found is not None:
            return _leaf_error(found.exceptions[0])
    cause = exc.__cause__ or exc.__context__
    if not isinstance(exc, AgentwsError | OSError) and isinstance(cause, AgentwsError):
        return cause
    return exc


def _fail(error: BaseException, as_json: bool) -> int:
    code = error.code if isinstance(error, AgentwsError) else "error"
    message = error.message if isinstance(error, AgentwsError) else str(error)
    if as_json:
        print(json.dumps({"error": {"code": code, "message": message}}), file=sys.stderr)
    else:
        print(f"agentws: error: {message}", file=sys.stderr)
    # Pointed at no database is a usage mistake, like a malformed command line.
    return 2 if isinstance(error, NoDatabaseError) else 1


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


def _serve(settings: Settings, as_json: bool) -> int:
    from agentws.agent.choose import describe_model
    from agentws.logs import configure_logging
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


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
        if args.command == "serve":
            return _serve(settings, args.json)
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
            error = NoDatabaseError(
                f"{error.message}: create it with `agentws init`, or point --database "
                "(or AGENTWS_DATABASE_URL) at the one you mean"
            )
        return _fail(error, args.json)
    if args.json:
        print(json.dumps(output.data, indent=2))
    else:
        print(output.text)
    return output.status
