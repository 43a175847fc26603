"""``agentws channel tail``: the local chat channels' newest messages, or follow them."""

from __future__ import annotations

import argparse

import trio

from agentws.chat.channels import parse_channel
from agentws.cli.arguments import bounded_count
from agentws.cli.output import Context, Output, print_followed
from agentws.cli.parsing import Verbs, noun
from agentws.domain.models import ChatMessage
from agentws.doors.views import message_json

__all__ = ["add_channel_commands"]

# How often `channel tail --follow` looks for new messages.
_FOLLOW_POLL_S = 0.25


def _message_text(m: ChatMessage) -> str:
    head = f"── {m.created_at.isoformat(timespec='seconds')} {m.channel}"
    if m.event_id:
        head += f" (event {m.event_id})"
    return head + "\n" + m.text + "\n"


async def _channel_tail(args: argparse.Namespace, ctx: Context) -> Output:
    workspace = await ctx.store.workspace_by_slug(args.workspace)
    channel = str(parse_channel(args.channel))
    messages = await ctx.store.channel_messages(workspace.id, channel, limit=args.limit)
    if not args.follow:
        text = "\n".join(_message_text(m) for m in messages) or f"No messages in {channel} yet."
        return Output([message_json(m) for m in messages], text.rstrip("\n"))

    # --follow prints as it goes (JSON lines with --json) until interrupted.
    def emit(batch: list[ChatMessage]) -> None:
        print_followed(batch, args.json, message_json, _message_text)

    emit(messages)
    last = messages[-1] if messages else None
    while True:
        await trio.sleep(_FOLLOW_POLL_S)
        if last is None:
            batch = await ctx.store.channel_messages(workspace.id, channel, limit=1000)
        else:
            batch = await ctx.store.channel_messages(workspace.id, channel, limit=1000, after=last)
        if batch:
            emit(batch)
            last = batch[-1]


def add_channel_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``channel`` to the ``agentws`` command line."""
    channel = noun(commands, common, "channel", "read the local chat channels")
    tail = channel.verb(
        "tail",
        "a local channel's newest messages, or follow them",
        "workspace",
        handler=_channel_tail,
    )
    tail.add_argument("channel", metavar="CHANNEL", help="local:NAME or NAME")
    tail.add_argument(
        "-n",
        "--lines",
        "--limit",
        dest="limit",
        type=bounded_count,
        default=20,
        metavar="N",
        help="how many (default 20)",
    )
    tail.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing new messages until interrupted (JSON lines with --json)",
    )
