"""The ``agentws connector`` commands: add, list, show, test, refresh, activate, deactivate,
relay, remove, attach, detach.

Secrets come from an environment variable (``--secret-env VAR``) or stdin
(``--secret-stdin``), never from the command line, where they would land
in shell history and process listings; they are never printed. The work is
done by :mod:`agentws.connectors.admin`; a test and a refresh by
:mod:`agentws.checks.connectors`, as the dashboard and the admin API do them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any

from agentws.checks.connectors import (
    UPSTREAM_S,
    check_connector_now,
    refresh_connector,
    refresh_text,
)
from agentws.cli.arguments import seconds
from agentws.cli.connector_auth import (
    add_auth_arguments,
    add_authorize_command,
    auth_from,
    authorize_now,
    grant_text,
)
from agentws.cli.output import Context, Output, iso, table
from agentws.cli.parsing import Verbs, noun
from agentws.connectors.admin import (
    ConnectorSecret,
    add_connector,
    attach_connector,
    detach_connector,
    find_connector,
    list_connectors,
    parse_header,
    remove_connector,
    set_connector_active,
    set_connector_protocol,
    set_connector_relay,
)
from agentws.core.errors import UnsafeUrlError, ValidationError
from agentws.domain.models import (
    LINK_PROTOCOLS,
    CachedTool,
    Connector,
    ConnectorGrant,
    ConnectorKind,
    Group,
    GroupConnector,
)
from agentws.doors.views import (
    connector_check_json,
    connector_json,
    grant_json,
    sync_report_json,
)
from agentws.tools.schema_cost import assess

if TYPE_CHECKING:
    from agentws.connectors.remote_mcp import SyncReport

__all__ = ["add_connector_commands"]


def _secret_text(kind: str | None) -> str:
    if kind is None:
        return "none"
    if kind == "url":
        return "the URL, stored encrypted (only its origin is shown)"
    return f"in header {kind}, stored encrypted"


def _secret(args: argparse.Namespace) -> ConnectorSecret | None:
    if args.secret_env and args.secret_stdin:
        raise ValidationError("give the secret once: --secret-env or --secret-stdin")
    if args.secret_env:
        value = os.environ.get(args.secret_env)
        if not value:
            raise ValidationError(f"environment variable {args.secret_env} is not set or empty")
    elif args.secret_stdin:
        value = sys.stdin.readline().rstrip("\r\n")
    else:
        if args.secret_header:
            raise ValidationError("--secret-header needs --secret-env or --secret-stdin")
        return None
    return ConnectorSecret(value, args.secret_header or "Authorization")


async def _add(args: argparse.Namespace, ctx: Context) -> Output:
    secret = _secret(args)
    headers = dict(parse_header(h) for h in args.header)
    connector = await add_connector(
        ctx.store,
        args.workspace,
        args.name,
        kind=ConnectorKind(args.kind),
        url=args.url,
        headers=headers,
        secret=secret,
        box=ctx.keys.box() if secret else None,
        allowlist=ctx.settings.connector_allowlist,
        actor=ctx.actor,
        protocol=args.protocol,
        auth=auth_from(args),
    )
    data = connector_json(connector, args.workspace)
    note = " Its secret is stored encrypted." if connector.secret else ""
    if connector.auth != "static":
        data.update(await authorize_now(ctx, args.workspace, connector))
        note += f" It is authorized upstream ({connector.auth})."
    if connector.kind is ConnectorKind.REMOTE_MCP:
        from agentws.connectors.remote_mcp import RemoteError

        # Saved either way: a remote that is down now can be refreshed later.
        try:
            report = await _refresh_now(ctx, args.workspace, connector)
        except (RemoteError, UnsafeUrlError) as exc:
            data["refresh"] = {"error": exc.message}
            note += (
                f"\nWarning: {exc.message}\n"
                f"Retry with: agentws connector refresh {args.workspace} {connector.name}"
            )
        else:
            data["refresh"] = sync_report_json(report)
            note += "\n" + refresh_text(connector.name, report, sep="\n")
    text = (
        f"Added {connector.kind.value} connector {connector.name!r} ({connector.id}) "
        f"at {connector.url}.{note}\n"
    )
    if connector.kind is ConnectorKind.INCOMING_WEBHOOK:
        text += "Post a webhook's messages to it (name the webhook as you like):\n  "
        text += _webhook_hint(args.workspace, connector.name, f"webhook:{connector.name}")
    else:
        text += (
            f"Attach it to a group: agentws connector attach {args.workspace} GROUP "
            f"{connector.name}"
        )
        if connector.kind is ConnectorKind.SLACK:
            text += (
                "\nOr post a webhook's messages with it (put your channel's id for C0123456789: "
                "in Slack, the channel's details, at the bottom; invite the bot there):\n  "
                + _webhook_hint(
                    args.workspace,
                    f"{connector.name}-events",
                    f"slack:{connector.name}/C0123456789",
                )
            )
    return Output(data, text)


def _webhook_hint(workspace: str, name: str, channel: str) -> str:
    """A ``webhook create`` command that works as printed (its name and prompt examples)."""
    words = ("webhook", "create", workspace, "--name", name, "--channel", channel)
    prompt = "Summarise what happened and what needs doing."
    return "agentws " + " ".join(shlex.quote(w) for w in (*words, "--prompt", prompt))


async def _refresh_now(
    ctx: Context, workspace: str, connector: Connector, timeout_s: float = UPSTREAM_S
) -> SyncReport:
    return await refresh_connector(
        ctx.store, workspace, connector, ctx, actor=ctx.actor, timeout_s=timeout_s
    )


async def _refresh(args: argparse.Namespace, ctx: Context) -> Output:
    connector = await find_connector(ctx.store, args.workspace, args.name)
    report = await _refresh_now(ctx, args.workspace, connector, args.timeout)
    data = {"workspace": args.workspace, "connector": connector.name, **sync_report_json(report)}
    return Output(data, refresh_text(connector.name, report, sep="\n"))


async def _list(args: argparse.Namespace, ctx: Context) -> Output:
    rows = [
        connector_json(c, args.workspace) for c in await list_connectors(ctx.store, args.workspace)
    ]
    empty = (
        f"No connectors yet: add one with `agentws connector add {args.workspace} NAME --kind ...`."
    )
    return Output(rows, table(rows, ("name", "kind", "url", "secret", "active", "id"), empty))


def _tool_json(connector: Connector, tool: CachedTool) -> dict[str, Any]:
    return {
        "name": f"{connector.name}_{tool.name}",
        "remote_name": tool.name,
        # What callers get: the label, or write while nobody has labeled it.
        "capability": tool.capability.value,
        "label": tool.label.value if tool.label else None,
        # What the remote's annotations claim; applied only by an admin.
        "suggested": tool.suggested_label.value if tool.suggested_label else None,
        "annotations": tool.annotations,
        "description": tool.description,
        "definition_hash": tool.definition_hash,
        "fetched_at": iso(tool.fetched_at),
        # Why it is not listed (its name is another tool's in a group); None: listed.
        "left_out": tool.left_out,
        # What makes its schema costly to check (its calls are checked in a worker process).
        "schema_hazards": list(assess(tool.input_schema).hazards),
    }


async def _show(args: argparse.Namespace, ctx: Context) -> Output:
    connector = await find_connector(ctx.store, args.workspace, args.name)
    links = await ctx.store.select(GroupConnector, connector_id=connector.id)
    groups = sorted([(await ctx.store.get(Group, link.group_id)).slug for link in links])
    cached = sorted(
        await ctx.store.select(CachedTool, connector_id=connector.id), key=lambda t: t.name
    )
    tools = [_tool_json(connector, tool) for tool in cached]
    data = {**connector_json(connector, args.workspace), "groups": groups, "tools": tools}
    grant = await ctx.store.find(ConnectorGrant, connector_id=connector.id)
    data["authorization"] = grant_json(connector, grant)
    secret = data["secret"]
    lines = [
        f"Connector {connector.name!r} ({connector.kind.value}, {connector.id})",
        f"  url:      {connector.url}",
        f"  secret:   {_secret_text(secret)}",
        f"  headers:  {', '.join(data['headers']) or 'none'}",
        *(
            [
                f"  requests: {'passed on to callers' if connector.relay_requests else 'refused'}",
                f"  protocol: {connector.protocol}",
                f"  auth:     {grant_text(connector, grant)}",
            ]
            if connector.kind is ConnectorKind.REMOTE_MCP
            else []
        ),
        f"  groups:   {', '.join(groups) or 'none (attach with `agentws connector attach`)'}",
        "",
    ]
    if tools:
        unlabeled = sum(1 for t in cached if t.label is None)
        note = f"; {unlabeled} unlabeled, so write until an admin labels them" if unlabeled else ""
        lines.append(f"Tools ({len(tools)}, from the cache{note}):")
        columns = ("name", "capability", "label", "suggested", "fetched_at")
        lines.append(table(tools, columns, ""))
        if unlabeled:
            lines.append(
                f"Label one with: agentws tool label {args.workspace} "
                f"{connector.name}_<name> read|write|destructive"
            )
        lines += [f"Not listed: {t.left_out}" for t in cached if t.left_out]
        lines += [
            f"Schema costly to check ({t['name']}: its calls are checked in a worker process "
            f"within AGENTWS_TOOL_CHECK_TIMEOUT_S): {'; '.join(t['schema_hazards'])}"
            for t in tools
            if t["schema_hazards"]
        ]
    elif connector.kind is ConnectorKind.REMOTE_MCP:
        lines.append(
            f"No tools cached yet: agentws connector refresh {args.workspace} {connector.name}"
        )
    return Output(data, "\n".join(lines))


async def _test(args: argparse.Namespace, ctx: Context) -> Output:
    connector = await find_connector(ctx.store, args.workspace, args.name)
    checked = await check_connector_now(connector, ctx, timeout_s=args.timeout)
    return Output(connector_check_json(checked, args.workspace), checked.text())


# What turning a connector on or off says (``name``, ``workspace``): on, then off.
_ACTIVE_TEXT = (
    "Connector {name!r} is active: the groups it is attached to list its tools.",
    "Connector {name!r} is inactive: no group lists its tools and no link connects "
    "to it; its settings, secret, tools and attachments are kept. Turn it back on with "
    "`agentws connector activate {workspace} {name}`.",
)
_RELAY_TEXT = (
    "Connector {name!r} passes its requests (elicitation, sampling, roots) on to "
    "the caller of each call, marked as its own.",
    "Connector {name!r} refuses its requests to callers (elicitation, sampling, "
    "roots): the remote is told an admin turned them off. Turn them back on with "
    "`agentws connector relay {workspace} {name} on`.",
)


def _switched(c: Connector, workspace: str, on: bool, texts: tuple[str, str]) -> Output:
    text = texts[0 if on else 1].format(name=c.name, workspace=workspace)
    return Output(connector_json(c, workspace), text)


async def _set_active(args: argparse.Namespace, ctx: Context) -> Output:
    active = args.action == "activate"
    c = await set_connector_active(
        ctx.store, args.workspace, args.name, active=active, actor=ctx.actor
    )
    return _switched(c, args.workspace, c.active, _ACTIVE_TEXT)


async def _relay(args: argparse.Namespace, ctx: Context) -> Output:
    c = await set_connector_relay(
        ctx.store, args.workspace, args.name, relay=args.state == "on", actor=ctx.actor
    )
    return _switched(c, args.workspace, c.relay_requests, _RELAY_TEXT)


async def _protocol(args: argparse.Namespace, ctx: Context) -> Output:
    c = await set_connector_protocol(
        ctx.store, args.workspace, args.name, protocol=args.protocol, actor=ctx.actor
    )
    text = f"Connector {c.name!r}'s link speaks MCP {c.protocol}"
    if c.protocol == "auto":
        text += " (a handshake revision when the remote speaks one, else 2026-07-28)"
    return Output(connector_json(c, args.workspace), text + "; it connects again now.")


async def _remove(args: argparse.Namespace, ctx: Context) -> Output:
    c = await remove_connector(ctx.store, args.workspace, args.name, actor=ctx.actor)
    return Output(connector_json(c, args.workspace), f"Removed connector {c.name!r} ({c.id}).")


async def _attach(args: argparse.Namespace, ctx: Context) -> Output:
    link = await attach_connector(ctx.store, args.workspace, args.group, args.name, actor=ctx.actor)
    data = {"id": link.id, "workspace": args.workspace, "group": args.group, "connector": args.name}
    return Output(data, f"Connector {args.name!r} is attached to {args.workspace}/{args.group}.")


async def _detach(args: argparse.Namespace, ctx: Context) -> Output:
    link = await detach_connector(ctx.store, args.workspace, args.group, args.name, actor=ctx.actor)
    data = {"detached": link is not None, "workspace": args.workspace, "group": args.group}
    text = (
        f"Connector {args.name!r} is detached from {args.workspace}/{args.group}."
        if link
        else f"Connector {args.name!r} was not attached to {args.workspace}/{args.group}."
    )
    return Output(data, text)


def _timeout_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=seconds(0.1, 3600.0),
        default=UPSTREAM_S,
        metavar="SECONDS",
        help="how long to wait for the upstream (default: %(default)g)",
    )


_PROTOCOL_HELP = (
    "auto (the default) speaks a handshake revision (2025-11-25) when the remote speaks "
    "one: only those let it ask the caller in the middle of a call (sampling, "
    "elicitation, roots), as servers written for them do; a remote that speaks "
    "only 2026-07-28 gets that. Pin 2026-07-28 for a remote that asks with "
    "input_required results, 2025-11-25 to never use the stateless revision."
)


def _connector_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    parser.add_argument("name", metavar="NAME", help="connector name")


def add_connector_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``connector`` to the ``agentws`` command line."""
    connector = noun(
        commands,
        common,
        "connector",
        "add third-party tools (remote MCP servers, GitHub, Slack, Stripe) to a workspace",
        "A connector is a third-party tool source. Its tools are offered as "
        "<connector>_<action> at the endpoints of the groups it is attached to.",
    )

    add = connector.verb(
        "add",
        "add a connector",
        "workspace",
        handler=_add,
        description="Add a connector. Its URL must be http(s), at a public address unless "
        "AGENTWS_CONNECTOR_ALLOWLIST names it, and, when the allowlist is set, name a host "
        "it lists. A secret (bearer token, "
        "API key) comes from --secret-env VAR or --secret-stdin and is stored encrypted. "
        "An incoming_webhook connector (a Slack, Mattermost or Discord incoming-webhook URL, "
        "for channels webhook:NAME) takes its URL as the secret, since the URL is the "
        "credential; a slack connector's bot token also lets webhooks post to slack:CHANNEL-ID.",
    )
    add.add_argument("name", metavar="NAME", help="connector name: [a-z][a-z0-9_]*")
    add.add_argument("--kind", required=True, choices=[k.value for k in ConnectorKind])
    add.add_argument(
        "--url", help="remote MCP endpoint (required for remote_mcp), or a native API's base URL"
    )
    add.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a non-secret header to send (repeatable)",
    )
    add_auth_arguments(add)
    add.add_argument(
        "--protocol",
        choices=LINK_PROTOCOLS,
        default="auto",
        help="the MCP revision a remote MCP connector's link speaks (default: auto; "
        "see `agentws connector protocol --help`)",
    )
    add.add_argument("--secret-env", metavar="VAR", help="read the secret from this variable")
    add.add_argument("--secret-stdin", action="store_true", help="read the secret from stdin")
    add.add_argument(
        "--secret-header",
        metavar="NAME",
        help="header that carries the secret (default: Authorization: Bearer <secret>)",
    )

    connector.verb("list", "list a workspace's connectors", "workspace", handler=_list)

    show = connector.verb(
        "show",
        "a connector, its groups and its cached tools with their labels",
        handler=_show,
        description="Show a connector and every tool in its cache: the capability callers "
        "get (the admin's label, or write while unlabeled), the label, and the label the "
        "remote's annotations suggest (never applied by itself).",
    )
    _connector_arguments(show)

    test = connector.verb(
        "test",
        "check that a connector's upstream answers and accepts its credential",
        handler=_test,
        description="Connect once and change nothing: a remote MCP server is asked for "
        "the handshake and its tool list; a native connector makes one harmless "
        "authenticated read (GitHub /user, Slack auth.test, Stripe /v1/balance). Exit "
        "status 1, with the reason, when it does not work.",
    )
    _connector_arguments(test)
    _timeout_argument(test)

    refresh = connector.verb(
        "refresh",
        "fetch a remote MCP connector's tools into the tool cache now",
        handler=_refresh,
        description="Fetch the remote's tool list and update the cache. A tool whose "
        "definition changed loses its admin label (back to write) and the change is audited. "
        "The refresh itself is audited too (connector.refresh: what changed, or why it "
        "failed), as the dashboard's and the admin API's are.",
    )
    _connector_arguments(refresh)
    _timeout_argument(refresh)

    for action, text, more in (
        (
            "activate",
            "offer an inactive connector's tools again",
            "The groups it is attached to list its tools again, and a remote MCP "
            "connector's link connects again. A no-op if it is active.",
        ),
        (
            "deactivate",
            "stop offering a connector's tools, keeping everything else",
            "No group lists its tools and no link connects to it; its settings, secret, "
            "cached tools and attachments are kept, so `activate` brings it back as it was. "
            "A no-op if it is inactive.",
        ),
    ):
        toggle = connector.verb(action, text, description=more, handler=_set_active)
        _connector_arguments(toggle)

    relay = connector.verb(
        "relay",
        "pass a remote MCP connector's requests on to callers (on), or refuse them (off)",
        handler=_relay,
        description="During a call, a remote MCP server may ask the caller something: an "
        "elicitation (a form or a URL to open), a sampling request (a model completion), or "
        "the caller's roots. On (the default), each is passed on to the client that made "
        "the call, marked as the connector's (its message starts with \"Connector 'NAME' "
        "asks:\", and sampling never gets the caller's context). Off, each is refused and "
        "the remote is told an admin turned it off. Audited as connector.relay_on/off.",
    )
    _connector_arguments(relay)
    relay.add_argument("state", choices=["on", "off"], help="on: pass them on; off: refuse")

    add_authorize_command(connector)

    protocol = connector.verb(
        "protocol",
        "pin the MCP revision a remote MCP connector's link speaks, or leave it to auto",
        handler=_protocol,
        description=_PROTOCOL_HELP + " Audited as connector.protocol.",
    )
    _connector_arguments(protocol)
    protocol.add_argument("protocol", metavar="REVISION", choices=LINK_PROTOCOLS)

    remove = connector.verb(
        "remove", "delete a connector, its cached tools and attachments", handler=_remove
    )
    _connector_arguments(remove)

    for action, handler, text in (
        ("attach", _attach, "offer a connector's tools at a group's endpoint (no-op if attached)"),
        ("detach", _detach, "stop offering a connector at a group (no-op if not attached)"),
    ):
        sub = connector.verb(action, text, "workspace", "group", handler=handler)
        sub.add_argument("name", metavar="CONNECTOR", help="connector name")
