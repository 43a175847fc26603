"""``agentws doctor``: is this installation ready, and can it reach what it posts to?

It checks, without changing anything and without posting a message:

- the store answers (and a SQLite file is not readable by other users);
- the service key is there and opens the stored secrets (connector
  secrets and webhook verification secrets are sealed with it): one that
  cannot open them fails, as ``/readyz`` does;
- the model: the offline digest, or Anthropic's, asked about the configured
  model with the configured key;
- every tool name means one tool: a tool left out of listings because
  another connector's tool has its name is a warning;
- every chat channel a webhook posts to: local channels need nothing; a
  Slack channel's connector must authenticate (``auth.test``); an incoming
  webhook's URL must answer (a GET, which posts nothing).

Each check is ``ok``, ``warn`` (works, but something deserves a look) or
``fail``; the command exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import os
import stat
from collections import Counter
from typing import Any

import attrs
import trio

from agentws.chat.channels import ChannelRef, parse_channel
from agentws.cli.arguments import seconds
from agentws.cli.output import Context, Output
from agentws.cli.parsing import Verbs
from agentws.core.errors import AgentwsError
from agentws.domain.models import (
    CachedTool,
    Connector,
    ConnectorGrant,
    ConnectorKind,
    GrantState,
    Group,
    Webhook,
    Workspace,
)
from agentws.settings.secret_box import key_problem
from agentws.store.sqlite import sqlite_path

__all__ = ["add_doctor_command"]

# Closing the model's connections must finish, but not hang the command.
_CLOSE_S = 5.0


@attrs.frozen
class Check:
    what: str
    status: str  # ok | warn | fail
    detail: str

    def json(self) -> dict[str, str]:
        return {"check": self.what, "status": self.status, "detail": self.detail}


async def _store(ctx: Context) -> Check:
    try:
        await ctx.store.ping()
    except AgentwsError as exc:
        return Check("store", "fail", exc.message)
    exposed = _readable_by_others(ctx.settings.database_url)
    if exposed:
        return Check(
            "store",
            "warn",
            f"{ctx.store.dialect} answers, but other users of this machine can read "
            f"{', '.join(exposed)}: chmod 600 them (agentws now creates them 0600)",
        )
    return Check("store", "ok", f"{ctx.store.dialect} answers")


def _readable_by_others(database_url: str) -> list[str]:
    """The SQLite files (database, -wal, -shm) whose mode lets others read them.

    agentws creates them 0600; one made by an older version (or copied) may not be.
    """
    if not database_url.startswith("sqlite:"):
        return []
    path = sqlite_path(database_url)
    if path == ":memory:":
        return []
    found = []
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            mode = os.stat(name).st_mode
        except OSError:
            continue
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            found.append(f"{os.path.abspath(name)} (mode {stat.S_IMODE(mode):o})")
    return found


async def _secret_key(ctx: Context) -> Check:
    try:
        sealed = await ctx.store.sealed_samples()
    except AgentwsError as exc:
        return Check("secret key", "fail", f"cannot read the stored secrets: {exc.message}")
    try:
        ctx.keys.box()
    except AgentwsError as exc:
        if sealed:  # the service reports not ready for this (see /readyz)
            return Check("secret key", "fail", f"{exc.message}; stored secrets cannot be opened")
        return Check("secret key", "warn", f"{exc.message}; no secret can be stored yet")
    problem = key_problem(ctx.keys, ctx.settings, sealed)
    if problem is not None:
        return Check("secret key", "fail", problem)
    if sealed:
        return Check("secret key", "ok", "opens the stored secrets")
    return Check("secret key", "ok", "present (nothing sealed with it yet)")


async def _model(ctx: Context, timeout_s: float) -> Check:
    from agentws.agent.anthropic_model import AnthropicModel
    from agentws.agent.choose import describe_model
    from agentws.agent.model import ModelError

    described = describe_model(ctx.settings)
    if not ctx.settings.anthropic_api_key:
        return Check("model", "ok", f"{described}: runs post a digest of each event")
    model = AnthropicModel.from_settings(attrs.evolve(ctx.settings, model_timeout_s=timeout_s))
    try:
        detail = await model.check()
    except ModelError as exc:
        return Check("model", "fail", f"{described}: {exc.message}")
    finally:
        with trio.move_on_after(_CLOSE_S, shield=True):
            await model.aclose()
    return Check("model", "ok", f"{described}: {detail}")


async def _channel(
    ctx: Context, workspace: Workspace, channel: ChannelRef, timeout_s: float
) -> str:
    """What proves ``channel`` can be posted to.

    Error handling:
        AgentwsError saying what is wrong.
    """
    from agentws.chat.connectors import chat_connector
    from agentws.chat.incoming_webhook import hook_deadline, probe_hook
    from agentws.connectors.admin import connector_headers
    from agentws.connectors.native import check_connector, upstream_deadline

    if channel.sink == "local":
        return "embedded chat (read it with `agentws channel tail`)"
    connector = await chat_connector(ctx.store, workspace.id, channel)
    box = ctx.keys.box()
    allowlist = ctx.settings.connector_allowlist
    if connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        with hook_deadline(connector, box, timeout_s):
            return await probe_hook(connector, box, allowlist)
    with upstream_deadline(connector, timeout_s, named=True):
        detail = await check_connector(
            connector, headers=connector_headers(connector, box), allowlist=allowlist
        )
    return f"Slack connector {connector.name!r}: {detail}"


async def _sinks(ctx: Context, timeout_s: float) -> list[Check]:
    checks: list[Check] = []
    by_channel: dict[tuple[str, str], list[str]] = {}
    workspaces = {w.id: w for w in await ctx.store.select(Workspace)}
    for webhook in await ctx.store.select(Webhook):
        by_channel.setdefault((webhook.workspace_id, webhook.channel), []).append(webhook.name)
    for (workspace_id, text), names in sorted(by_channel.items()):
        workspace = workspaces[workspace_id]
        what = f"channel {workspace.slug}/{text}"
        used_by = f" (webhooks: {', '.join(sorted(names))})"
        try:
            detail = await _channel(ctx, workspace, parse_channel(text), timeout_s)
        except AgentwsError as exc:
            checks.append(Check(what, "fail", exc.message + used_by))
        else:
            checks.append(Check(what, "ok", detail + used_by))
    if not by_channel:
        checks.append(Check("channels", "ok", "no webhooks yet, so no channels to post to"))
    return checks


async def _tool_names(ctx: Context) -> Check:
    """Tools not listed because their names are other tools' (see agentws.connectors.names)."""
    connectors = {c.id: c for c in await ctx.store.select(Connector)}
    problems = [
        f"connector {connectors[t.connector_id].name!r}: {t.left_out}"
        for t in await ctx.store.select(CachedTool)
        if t.left_out is not None and t.connector_id in connectors
    ]
    for group in await ctx.store.select(Group):
        # Names that mean two tools, cached before names were checked: neither is listed.
        listed = await ctx.store.group_tools(group.id)
        names = Counter(f"{c.name}_{t.name}" for c, t in listed if t.left_out is None)
        problems += [
            f"group {group.slug}: {name} means {count} tools, so none is listed (detach or "
            "remove one of the connectors)"
            for name, count in sorted(names.items())
            if count > 1
        ]
    if problems:
        return Check("tool names", "warn", "; ".join(sorted(problems)))
    return Check("tool names", "ok", "every tool name means one tool")


async def _authorizations(ctx: Context) -> Check:
    """OAuth connectors whose grant upstream is missing or lost (see agentws.connectors.grants)."""
    grants = {g.connector_id: g for g in await ctx.store.select(ConnectorGrant)}
    workspaces = {w.id: w.slug for w in await ctx.store.select(Workspace)}
    problems, connected = [], 0
    for connector in await ctx.store.select(Connector, active=True):
        if connector.auth == "static":
            continue
        grant = grants.get(connector.id)
        if grant is not None and grant.state is GrantState.CONNECTED:
            connected += 1
            continue
        why = grant.reason if grant is not None and grant.reason else "never connected"
        where = f"{workspaces.get(connector.workspace_id, '?')}/{connector.name}"
        problems.append(
            f"{where} needs authorization ({why}): "
            f"agentws connector authorize {where.replace('/', ' ')}"
        )
    if problems:
        return Check("connector authorizations", "warn", "; ".join(sorted(problems)))
    if connected:
        return Check("connector authorizations", "ok", f"{connected} OAuth connector(s) connected")
    return Check("connector authorizations", "ok", "no connector authorizes with OAuth")


async def _doctor(args: argparse.Namespace, ctx: Context) -> Output:
    checks = [await _store(ctx), await _secret_key(ctx)]
    checks.append(await _model(ctx, args.timeout))
    if checks[0].status != "fail":
        checks.append(await _tool_names(ctx))
        checks.append(await _authorizations(ctx))
        checks += await _sinks(ctx, args.timeout)
    failed = sum(1 for c in checks if c.status == "fail")
    data: dict[str, Any] = {"ok": failed == 0, "checks": [c.json() for c in checks]}
    width = max(len(c.what) for c in checks)
    lines = [f"{c.status:<4}  {c.what:<{width}}  {c.detail}" for c in checks]
    lines.append("")
    lines.append(f"{failed} check(s) failed." if failed else "Everything checked is ready.")
    return Output(data, "\n".join(lines), status=1 if failed else 0)


def add_doctor_command(commands: Verbs, common: argparse.ArgumentParser) -> None:
    """Add ``doctor`` to the ``agentws`` command."""
    doctor = commands.add_parser(
        "doctor",
        parents=[common],
        help="check the store, the model and every channel webhooks post to",
        description="Check that this installation is ready: the store answers, the service "
        "key is there, the model (offline, or Anthropic's with ANTHROPIC_API_KEY) answers, and "
        "every channel a webhook posts to can be reached (Slack: the bot token authenticates; "
        "incoming webhooks: the URL answers), and every OAuth connector is authorized "
        "upstream. Nothing is posted or changed. Exits 1 when a check fails.",
    )
    doctor.add_argument(
        "--timeout",
        type=seconds(0.1, 3600.0),
        default=10.0,
        metavar="S",
        help="seconds to wait for each remote service (default 10)",
    )
    doctor.set_defaults(handler=_doctor)
