"""The ``agentws webhook`` commands: incoming webhooks.

``webhook create|update|list|show|activate|deactivate|delete``; ``create``
prints the URL once (it holds the token, which is not kept). The work is
done by :mod:`agentws.webhooks.admin`. ``webhook samples|try`` (capture and
a prompt tried on it) are in :mod:`agentws.cli.webhook_try`; failure alert
options, ``replay`` and ``test`` in :mod:`agentws.cli.webhook_operations`;
``rotate`` and its kin in :mod:`agentws.cli.webhook_rotation`; ``deliveries``
in :mod:`agentws.cli.deliveries`.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import typing

import trio

from agentws.cli.arguments import per_minute_rate, read_secret, whole
from agentws.cli.deliveries import add_deliveries_command
from agentws.cli.events import event_row
from agentws.cli.output import Context, Output, table
from agentws.cli.parsing import Verbs, noun
from agentws.cli.webhook_operations import (
    add_alert_options,
    add_operation_commands,
    alert_changes,
    alert_options,
    streak_text,
)
from agentws.cli.webhook_try import add_try_commands
from agentws.core.errors import ValidationError
from agentws.domain.models import Group, VerificationScheme, Webhook, Workspace
from agentws.doors.views import streak_json, webhook_json
from agentws.webhooks.admin import (
    MAX_BODY_LIMIT,
    MAX_CONCURRENCY,
    MAX_RATE_PER_MIN,
)

__all__ = ["add_webhook_commands"]


async def _names(ctx: Context, webhook: Webhook) -> tuple[str, str | None]:
    workspace = await ctx.store.get(Workspace, webhook.workspace_id)
    group = await ctx.store.find(Group, id=webhook.group_id) if webhook.group_id else None
    return workspace.slug, group.slug if group else None


# --- webhook --------------------------------------------------------------------------------


async def _read_prompt(args: argparse.Namespace) -> str | None:
    if args.prompt_file == "-":
        return sys.stdin.read()
    if args.prompt_file is not None:
        try:
            return await trio.Path(args.prompt_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ValidationError(
                f"cannot read --prompt-file {args.prompt_file}: {reason}"
            ) from None
    return typing.cast(str | None, args.prompt)


async def _webhook_create(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import WebhookOptions, create_webhook

    if args.secret_stdin and args.prompt_file == "-":
        raise ValidationError(
            "--prompt-file - and --secret-stdin cannot both read stdin: put the prompt in a file"
        )
    prompt = await _read_prompt(args) or ""
    scheme = VerificationScheme(args.verify)
    secret = read_secret(args)
    if scheme is not VerificationScheme.NONE and not args.secret_stdin:
        raise ValidationError(
            f"--verify {scheme.value} needs the secret: pipe it to --secret-stdin"
        )
    options = WebhookOptions(
        group=args.group,
        active=not (args.draft or args.capture),
        capture=args.capture,
        concurrency=args.concurrency,
        verification=scheme,
        secret=secret,
        rate_per_min=args.rate,
        burst=args.burst,
        max_body_bytes=args.max_body_bytes,
        allow_tools=tuple(args.allow_tool),
        allow_mentions=args.allow_mentions,
        **alert_options(args),
    )
    issued = await create_webhook(
        ctx.store,
        ctx.settings,
        ctx.keys,
        args.workspace,
        name=args.name,
        channel=args.channel,
        prompt=prompt,
        options=options,
        actor=ctx.actor,
    )
    w = issued.webhook
    data = {**webhook_json(w, args.workspace, args.group), "url": issued.url}
    state = "active" if w.active else "a draft (activate it with `agentws webhook activate`)"
    if w.capture:
        state = "a draft that keeps its deliveries as samples (`agentws webhook samples`)"
    text = (
        f"Created webhook {w.name!r} ({w.id}) in {args.workspace}, {state}.\n"
        f"Posts to {w.channel}; verification: {w.verification.value}; "
        f"rate limit {w.rate_per_min}/min (burst {w.burst}).\n\n"
        f"Endpoint URL (shown once; the token in it is the webhook's credential):\n"
        f"  {issued.url}\n\n" + _try_it(args.workspace, w, issued.url)
    )
    return Output(data, ctx.noted(text))


# Who signs deliveries the way each verification scheme checks them.
_SIGNERS = {
    VerificationScheme.GITHUB: "GitHub",
    VerificationScheme.STRIPE: "Stripe",
    VerificationScheme.STANDARD_WEBHOOKS: "Standard Webhooks senders",
    VerificationScheme.SLACK: "Slack",
}


def _try_it(workspace: str, webhook: Webhook, url: str) -> str:
    """How to send the webhook its first event, in a command that works as printed."""
    if webhook.verification is VerificationScheme.NONE:
        return (
            "Try it:\n"
            "  curl -X POST -H 'Content-Type: application/json' -d '{\"event\": \"test\"}' "
            f"'{url}'"
        )
    sender = _SIGNERS.get(webhook.verification)
    how = f"signed with the secret as {sender} signs" if sender else "carrying the secret"
    command = shlex.join(("agentws", "webhook", "test", workspace, webhook.name))
    return (
        f"Try it: a test event {how}, through the same checks as a delivery (a request "
        "without it gets 401):\n"
        f"  {command}"
    )


async def _webhook_list(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import list_webhooks

    rows = []
    for w in await list_webhooks(ctx.store, args.workspace):
        rows.append(webhook_json(w, *await _names(ctx, w)))
    columns = ("id", "name", "status", "channel", "group", "verification", "rate_per_min")
    empty = (
        f"Workspace {args.workspace} has no webhooks: create one with "
        f"`agentws webhook create {args.workspace} --name NAME --channel CHANNEL --prompt-file F`."
    )
    return Output(rows, table(rows, columns, empty))


async def _webhook_show(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.cli.webhook_rotation import rotation_text
    from agentws.doors.views import rotation_json
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.events import list_events
    from agentws.webhooks.rotation import rotation_status

    w = await find_webhook(ctx.store, args.workspace, args.webhook)
    data = webhook_json(w, *await _names(ctx, w))
    recent = await list_events(ctx.store, args.workspace, webhook=w, limit=10)
    data["recent_events"] = [event_row(e, w) for e in recent]
    streak = await ctx.store.latest_failure_streak(w.id)
    data["failure_streak"] = streak_json(streak)
    text = "\n".join(
        f"{key}: {', '.join(value) or 'none' if isinstance(value, list) else value}"
        for key, value in data.items()
        if key not in ("prompt", "recent_events", "active", "failure_streak")
    )
    text += "\nprompt:\n" + "\n".join("  " + line for line in w.prompt.splitlines())
    text += "\n\n" + streak_text(streak, w.alert_after)
    text += "\n\nRecent events:\n" + table(
        data["recent_events"], ("id", "status", "attempts", "received_at"), "  none yet"
    )
    status = await rotation_status(ctx.store, w)
    data["rotation"] = rotation_json(status)
    text += "\n\nRotation:\n" + "\n".join(
        "  " + line for line in rotation_text(status).splitlines()
    )
    text += (
        "\n\nThe URL is not kept: issue a new one with "
        f"`agentws webhook rotate {args.workspace} {w.name}` (the current one keeps working "
        "for a grace period)."
    )
    return Output(data, text)


async def _webhook_update(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import WebhookChanges, update_webhook

    changes = WebhookChanges(
        prompt=await _read_prompt(args),
        channel=args.channel,
        group="" if args.no_group else args.group,
        allow_tools=tuple(args.allow_tool),
        disallow_tools=tuple(args.disallow_tool),
        allow_mentions=args.allow_mentions,
        capture=args.capture,
        **alert_changes(args),
    )
    w = await update_webhook(
        ctx.store,
        args.workspace,
        args.webhook,
        changes=changes,
        allowlist=ctx.settings.connector_allowlist,
        actor=ctx.actor,
    )
    data = webhook_json(w, *await _names(ctx, w))
    tools = ", ".join(data["allowed_tools"]) or "none"
    text = (
        f"Webhook {w.name!r} ({w.id}) posts to {w.channel}"
        f"{' with the tools of group ' + data['group'] if data['group'] else ', with no tools'}.\n"
        f"Write tools its runs use without approval: {tools}."
    )
    if w.capture:
        text += "\nWhile a draft, it keeps its deliveries as samples (`agentws webhook samples`)."
    return Output(data, text)


async def _webhook_activate(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import set_active

    w = await set_active(ctx.store, args.workspace, args.webhook, active=True, actor=ctx.actor)
    data = webhook_json(w, *await _names(ctx, w))
    return Output(data, f"Webhook {w.name!r} is active: it accepts events.")


async def _webhook_deactivate(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import set_active

    w = await set_active(ctx.store, args.workspace, args.webhook, active=False, actor=ctx.actor)
    data = webhook_json(w, *await _names(ctx, w))
    return Output(data, f"Webhook {w.name!r} is a draft: deliveries get 403 until it is activated.")


async def _webhook_delete(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import delete_webhook

    w = await delete_webhook(ctx.store, args.workspace, args.webhook, actor=ctx.actor)
    data = {"id": w.id, "name": w.name, "deleted": True}
    return Output(data, f"Deleted webhook {w.name!r} ({w.id}): its URL answers 404 from now on.")


# --- parser ---------------------------------------------------------------------------------


def add_webhook_commands(commands: Verbs, common: argparse.ArgumentParser) -> None:
    """Add ``webhook`` to the ``agentws`` command."""
    webhook = noun(
        commands,
        common,
        "webhook",
        "incoming webhooks: create (URL shown once), list, activate, rotate, delete; "
        "capture deliveries and try a prompt; replay failed events, send test events",
        "Incoming webhooks: an external system POSTs JSON to the URL; the agent "
        "follows the prompt and posts one message per event to the channel.",
    )

    create = webhook.verb(
        "create",
        "create a webhook and print its URL once",
        "workspace",
        handler=_webhook_create,
        description="Create a webhook. Its URL, printed once, holds the token that is its "
        "credential; `agentws webhook rotate` issues a new one (the old one keeps working "
        "for a grace period).",
    )
    create.add_argument("--name", required=True, help="a name people know it by, e.g. 'ci'")
    create.add_argument(
        "--channel",
        required=True,
        help="where messages go: local:NAME (or just NAME) for the embedded chat, "
        "slack:CHANNEL-ID (with the workspace's Slack connector) or webhook:CONNECTOR "
        "(an incoming_webhook connector)",
    )
    prompt = create.add_mutually_exclusive_group(required=True)
    prompt.add_argument(
        "--prompt-file",
        metavar="FILE",
        help="the instructions: what the events are and what to post ('-' reads stdin)",
    )
    prompt.add_argument("--prompt", help="the instructions, inline")
    create.add_argument(
        "--group", metavar="GROUP", help="group whose tools the agent may use (default: none)"
    )
    create.add_argument(
        "--draft", action="store_true", help="save as a draft: deliveries get 403 until activated"
    )
    create.add_argument(
        "--capture",
        action="store_true",
        help="save as a draft that keeps its deliveries as samples (202 captured, never run) "
        "to try prompts on (`webhook try`); implies --draft",
    )
    create.add_argument(
        "--concurrency",
        type=whole(1, MAX_CONCURRENCY),
        default=4,
        metavar="K",
        help="events run at once at most (default 4; 1 runs them in arrival order)",
    )
    create.add_argument(
        "--verify",
        choices=[s.value for s in VerificationScheme],
        default=VerificationScheme.NONE.value,
        help="how deliveries prove their sender (default: none; the URL is the credential)",
    )
    create.add_argument(
        "--secret-stdin",
        action="store_true",
        help="read the verification secret from stdin (never from the command line)",
    )
    create.add_argument(
        "--rate",
        type=per_minute_rate(MAX_RATE_PER_MIN),
        default=60,
        metavar="R/min",
        help="deliveries a minute (default 60/min; also R/s)",
    )
    create.add_argument(
        "--burst",
        type=whole(1, MAX_RATE_PER_MIN),
        metavar="N",
        help="deliveries accepted at once before the rate applies (default: min(30, rate))",
    )
    create.add_argument(
        "--max-body-bytes",
        type=whole(1, MAX_BODY_LIMIT),
        metavar="B",
        help="largest body accepted (default: $AGENTWS_MAX_BODY_BYTES, else 1 MiB; at most 2 MiB)",
    )
    create.add_argument(
        "--allow-tool",
        action="append",
        default=[],
        metavar="TOOL",
        help="a write tool of the group its runs may use without an admin's approval "
        "(repeatable; never a destructive tool; lost if the tool's definition changes)",
    )
    create.add_argument(
        "--allow-mentions",
        action="store_true",
        help="let its messages ping a whole channel (@channel, @here, @all, @everyone); "
        "by default they are made inert",
    )
    add_alert_options(create, changing=False)

    update = webhook.verb(
        "update",
        "change a webhook's prompt, channel, group or pre-authorized tools",
        "workspace",
        "webhook",
        handler=_webhook_update,
        description="Change what a webhook's runs do. Options not given are left as they are. "
        "A pre-authorized (--allow-tool) write tool runs in the webhook's runs without an "
        "admin's approval, for as long as its definition is the one authorized; destructive "
        "tools can never be pre-authorized, and MCP tokens never get this.",
    )
    update.add_argument(
        "--channel", help="where messages go: local:NAME, slack:CHANNEL-ID or webhook:CONNECTOR"
    )
    u_prompt = update.add_mutually_exclusive_group()
    u_prompt.add_argument("--prompt-file", metavar="FILE", help="new instructions ('-': stdin)")
    u_prompt.add_argument("--prompt", help="new instructions, inline")
    u_group = update.add_mutually_exclusive_group()
    u_group.add_argument(
        "--group", metavar="GROUP", help="group whose tools the agent may use from now on"
    )
    u_group.add_argument("--no-group", action="store_true", help="no tools from now on")
    update.add_argument(
        "--allow-tool",
        action="append",
        default=[],
        metavar="TOOL",
        help="pre-authorize a write tool of the group (repeatable)",
    )
    update.add_argument(
        "--disallow-tool",
        action="append",
        default=[],
        metavar="TOOL",
        help="withdraw a tool's pre-authorization (repeatable)",
    )
    update.add_argument(
        "--allow-mentions",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let its messages ping a whole channel (@channel, @here...), or not "
        "(--no-allow-mentions: mass mentions are made inert)",
    )
    update.add_argument(
        "--capture",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="while a draft, keep its deliveries as samples (202 captured, never run), or "
        "refuse them with 403 (--no-capture); samples already kept stay",
    )
    add_alert_options(update, changing=True)

    webhook.verb("list", "list a workspace's webhooks", "workspace", handler=_webhook_list)
    for name, handler, text in (
        ("show", _webhook_show, "show a webhook's settings and recent events"),
        ("activate", _webhook_activate, "accept deliveries"),
        ("deactivate", _webhook_deactivate, "make it a draft: deliveries get 403"),
        ("delete", _webhook_delete, "delete it: its URL stops working at once"),
    ):
        webhook.verb(name, text, "workspace", "webhook", handler=handler)
    from agentws.cli.webhook_rotation import add_rotation_commands

    add_rotation_commands(webhook)
    add_try_commands(webhook)
    add_operation_commands(webhook)
    add_deliveries_command(webhook)
