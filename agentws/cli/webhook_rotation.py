"""``agentws webhook rotate|rotate-secret|end-grace|rotation``: rotation without downtime.

A new URL (printed once) or signing secret, while the previous one keeps
working for a grace period; ending the grace early; and how far senders
have moved. The work is done by :mod:`agentws.webhooks.rotation`.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from typing import Literal

from agentws.cli.arguments import typed
from agentws.cli.output import Context, Handler, Output
from agentws.cli.parsing import Noun
from agentws.core.errors import ValidationError
from agentws.domain.deliveries import RotationStatus
from agentws.domain.models import Webhook
from agentws.doors.views import rotation_json, webhook_json

__all__ = ["add_rotation_commands", "rotation_text"]

_GRACE_HELP = (
    "how long the current one keeps working: 90s, 30m, 24h, 7d (at most 30d), or 0 to stop "
    "it at once (default 24h)"
)


def _grace(text: str) -> timedelta:
    from agentws.webhooks.rotation import parse_grace

    return typed(parse_grace, "grace")(text)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "never"


def rotation_text(status: RotationStatus) -> str:
    """A few lines on where a webhook's rotations stand."""
    lines = [f"URL generation {status.url_generation}"]
    if status.previous_url_until:
        lines[0] += (
            f"; the previous URL works until {_when(status.previous_url_until)}; deliveries "
            f"since the rotation through it: {status.via_previous_url} "
            f"(last {_when(status.last_via_previous_url)}), through the new one: "
            f"{status.via_new_url}"
        )
    lines.append(f"secret generation {status.secret_generation}")
    if status.previous_secret_until:
        lines[1] += (
            f"; the previous secret verifies until {_when(status.previous_secret_until)}; "
            f"deliveries since the rotation signed with it: {status.via_previous_secret} "
            f"(last {_when(status.last_via_previous_secret)}), with the new one: "
            f"{status.via_new_secret}"
        )
    return "\n".join(lines)


async def _names(ctx: Context, webhook: Webhook) -> tuple[str, str | None]:
    from agentws.domain.models import Group, Workspace

    workspace = await ctx.store.get(Workspace, webhook.workspace_id)
    group = await ctx.store.find(Group, id=webhook.group_id) if webhook.group_id else None
    return workspace.slug, group.slug if group else None


async def _rotate(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.rotation import rotate_url

    issued = await rotate_url(
        ctx.store, ctx.settings, args.workspace, args.webhook, grace=args.grace, actor=ctx.actor
    )
    w = issued.webhook
    data = {**webhook_json(w, *await _names(ctx, w)), "url": issued.url}
    if w.previous_token_until is not None:
        old = (
            f"The previous URL keeps working until {_when(w.previous_token_until)}; "
            f"end that early with `agentws webhook end-grace {args.workspace} {w.name} --url`."
        )
    else:
        old = "The previous URL answers 404 from now on."
    text = (
        f"New URL of webhook {w.name!r} (generation {w.token_generation}; shown once, the "
        f"token in it is the webhook's credential):\n  {issued.url}\n\n{old}\n"
        f"Follow the senders' move with `agentws webhook rotation {args.workspace} {w.name}`."
    )
    return Output(data, ctx.noted(text))


async def _rotate_secret(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.cli.arguments import read_secret
    from agentws.webhooks.rotation import rotate_secret

    secret = read_secret(args)
    if not secret:
        raise ValidationError("pipe the new secret to --secret-stdin (it is never an argument)")
    w = await rotate_secret(
        ctx.store,
        ctx.keys,
        args.workspace,
        args.webhook,
        secret=secret,
        grace=args.grace,
        actor=ctx.actor,
    )
    data = webhook_json(w, *await _names(ctx, w))
    if w.previous_secret_until is not None:
        old = f"the previous secret still verifies until {_when(w.previous_secret_until)}"
    else:
        old = "the previous secret verifies nothing from now on"
    text = (
        f"Webhook {w.name!r} verifies with its new secret (generation {w.secret_generation}); "
        f"{old}. Set the new secret at the sender."
    )
    return Output(data, text)


async def _end_grace(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.rotation import end_grace

    which: Literal["url", "secret", "both"] = "both"
    if args.url != args.secret:
        which = "url" if args.url else "secret"
    w = await end_grace(ctx.store, args.workspace, args.webhook, which=which, actor=ctx.actor)
    data = webhook_json(w, *await _names(ctx, w))
    what = {
        "url": "previous URL answers 404",
        "secret": "previous secret verifies nothing",
        "both": "previous URL answers 404 and the previous secret verifies nothing",
    }
    return Output(data, f"Webhook {w.name!r}: the {what[which]} from now on.")


async def _rotation(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.rotation import rotation_status

    w = await find_webhook(ctx.store, args.workspace, args.webhook)
    status = await rotation_status(ctx.store, w)
    return Output(rotation_json(status), rotation_text(status))


def add_rotation_commands(webhook: Noun) -> None:
    """Add the rotation verbs to ``agentws webhook``."""

    def rotation_verb(
        name: str, handler: Handler, help_text: str, description: str, *, grace: bool = False
    ) -> argparse.ArgumentParser:
        parser = webhook.verb(
            name, help_text, "workspace", "webhook", description=description, handler=handler
        )
        if grace:
            parser.add_argument(
                "--grace", type=_grace, default=timedelta(hours=24), help=_GRACE_HELP
            )
        return parser

    rotation_verb(
        "rotate",
        _rotate,
        "issue a new URL; the current one keeps working for a grace period",
        "Issue a new URL for the webhook, printed once. The current URL keeps working for "
        "the grace period (then it answers 404), so senders can be moved one by one; each "
        "event records which URL it came through (see `agentws webhook rotation`). Rotating "
        "again during a grace ends that grace.",
        grace=True,
    )
    secret = rotation_verb(
        "rotate-secret",
        _rotate_secret,
        "verify with a new signing secret; the current one still verifies for a grace period",
        "Take a new verification secret (read from stdin). During the grace period either "
        "secret verifies: Stripe and Standard Webhooks senders sign with both while they "
        "roll a secret; GitHub, Slack and shared-secret senders with whichever they have.",
    )
    secret.add_argument(
        "--secret-stdin",
        action="store_true",
        required=True,
        help="read the new secret from stdin (never from the command line)",
    )
    secret.add_argument("--grace", type=_grace, default=timedelta(hours=24), help=_GRACE_HELP)
    end = rotation_verb(
        "end-grace",
        _end_grace,
        "stop the previous URL and/or secret now",
        "End a rotation's grace period early: the previous URL answers 404 and the previous "
        "secret verifies nothing, from now on. Without --url or --secret, both.",
    )
    end.add_argument("--url", action="store_true", help="only the previous URL")
    end.add_argument("--secret", action="store_true", help="only the previous secret")
    rotation_verb(
        "rotation",
        _rotation,
        "how far the senders have moved to the new URL and secret",
        "The URL and secret generations in use, until when the previous ones work, and how "
        "many deliveries came through each since the last rotation.",
    )
