"""``agentws webhook samples`` and ``agentws webhook try``: capture, and a prompt tried on it.

``samples`` lists what a capturing draft kept (newest first), or shows one
whole. ``try`` runs the agent on a sample or a past event of the webhook
with a candidate prompt (default: the webhook's) and prints the message it
would post and each tool call with what became of it; nothing is posted,
and only read tools run (:mod:`agentws.agent.dry_run`).

The try runs in this process, as ``connector test`` does: the model is the
one this process's settings choose (``ANTHROPIC_API_KEY``, else the offline
digest), and a remote MCP tool is called over a session of its own.
"""

from __future__ import annotations

import argparse
import json
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import trio

from agentws.cli.output import Context, Output, table
from agentws.cli.parsing import Noun
from agentws.core.errors import ValidationError
from agentws.domain.models import Connector

if typing.TYPE_CHECKING:
    from agentws.agent.dry_run import PromptTrials
    from agentws.tools.caller_channel import CallerChannel

__all__ = ["add_try_commands"]

_TRIED_COLUMNS = ("name", "capability", "outcome_label", "detail")


async def _samples(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.doors.views import sample_json
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.samples import KEEP, find_sample, list_samples

    webhook = await find_webhook(ctx.store, args.workspace, args.webhook)
    if args.sample is not None:
        shown = sample_json(await find_sample(ctx.store, webhook, args.sample), whole=True)
        text = (
            f"Sample {shown['id']} of webhook {webhook.name!r}, received {shown['received_at']} "
            f"({shown['size']} bytes).\nHeaders: {json.dumps(shown['headers'])}\n"
            + json.dumps(shown["body"], indent=2, ensure_ascii=False)
        )
        return Output(shown, text)
    rows = [sample_json(s) for s in await list_samples(ctx.store, webhook)]
    state = "captures" if webhook.capture else "does not capture"
    empty = (
        f"Webhook {webhook.name!r} captures, and has no samples yet: deliveries to its URL "
        "are kept here while it is a draft."
        if webhook.capture
        else f"Webhook {webhook.name!r} has no samples. A draft that captures keeps its "
        f"deliveries: `agentws webhook update {args.workspace} {webhook.name} --capture`."
    )
    text = table(rows, ("id", "received_at", "size", "preview"), empty)
    if rows:
        text += (
            f"\n\nThe newest {KEEP} are kept; webhook {webhook.name!r} {state}. Try a prompt on "
            f"one: agentws webhook try {args.workspace} {webhook.name} --sample {rows[0]['id']}"
        )
    return Output(rows, text)


async def _prompt(args: argparse.Namespace) -> str | None:
    if args.prompt_file is None:
        return typing.cast(str | None, args.prompt)
    try:
        return await trio.Path(args.prompt_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValidationError(f"cannot read --prompt-file {args.prompt_file}: {reason}") from None


@asynccontextmanager
async def _trials(ctx: Context) -> AsyncIterator[PromptTrials]:
    """What a try needs, made for this process: the model, the group's tools, the gate."""
    from agentws.agent.choose import open_model
    from agentws.agent.dry_run import PromptTrials
    from agentws.agent.runner import AgentRunner
    from agentws.common.audit import DirectAudit
    from agentws.connectors.remote_calls import call_tool_once
    from agentws.connectors.remote_mcp import remote_deadline
    from agentws.tools.catalog import Catalog
    from agentws.tools.execution import ToolRunner
    from agentws.tools.gate import ToolGate
    from agentws.tools.validation import open_argument_checker

    settings, store = ctx.settings, ctx.store

    async def remote_call(
        connector: Connector,
        name: str,
        arguments: dict[str, Any],
        *,
        retry_safe: bool,
        channel: CallerChannel | None = None,
    ) -> types.CallToolResult:
        box = ctx.keys.box() if connector.secret else None
        with remote_deadline(connector, settings.tool_timeout_s):
            return await call_tool_once(
                connector, name, arguments, box=box, allowlist=settings.connector_allowlist
            )

    async with open_model(settings) as model, open_argument_checker(settings) as checker:
        catalog = Catalog(store)
        runner = ToolRunner(
            store, settings, ctx.keys, remote_call, catalog.connector, catalog.libraries
        )
        gate = ToolGate(store, settings, runner, DirectAudit(store), ctx.keys, checker)
        agent = AgentRunner(catalog, gate, model, base_url=settings.public_base_url)
        yield PromptTrials(agent, settings.run_timeout_s)


async def _try(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.domain.dry_runs import TryRequest
    from agentws.doors.views import dry_run_json
    from agentws.webhooks.admin import find_webhook
    from agentws.webhooks.samples import tried_delivery

    webhook = await find_webhook(ctx.store, args.workspace, args.webhook)
    prompt = await _prompt(args)
    delivery, source = await tried_delivery(
        ctx.store, webhook, sample_id=args.sample, event_id=args.event
    )
    request = TryRequest(
        webhook=webhook, delivery=delivery, source=source, prompt=prompt, actor=ctx.actor
    )
    async with _trials(ctx) as trials:
        data = dry_run_json(await trials.try_prompt(request))
    which = "the webhook's prompt" if prompt is None else "the candidate prompt"
    lines = [
        f"Tried {which} on {data['source']} {data['source_id']} (model: {data['model']}): "
        "nothing was posted, and only read tools ran.",
        "",
        "The message it would post:",
        *(("  " + line).rstrip() for line in data["text"].splitlines()),
        "",
    ]
    calls = data["tool_calls"]
    if calls:
        rows = [
            {**c, "name": f"{c['name']} {json.dumps(c['arguments'], ensure_ascii=False)}"}
            for c in calls
        ]
        lines += [f"Tool calls ({len(calls)}):", table(rows, _TRIED_COLUMNS, "")]
    else:
        lines.append("Tool calls: none.")
    return Output(data, "\n".join(lines))


def add_try_commands(webhook: Noun) -> None:
    """Add ``webhook samples`` and ``webhook try`` to the ``webhook`` command's actions."""
    samples = webhook.verb(
        "samples",
        "list what a capturing draft kept of its deliveries (or show one)",
        "workspace",
        "webhook",
        description="List the samples a draft webhook set to capture (--capture) kept of its "
        "deliveries, newest first: each was checked as an active webhook's delivery would be, "
        "and never ran. The newest 50 are kept, also once the webhook is activated.",
        handler=_samples,
    )
    samples.add_argument(
        "sample", metavar="SAMPLE", nargs="?", help="a sample id (smp_…): show it whole"
    )

    tried = webhook.verb(
        "try",
        "try a prompt on a sample or a past event, posting nothing",
        "workspace",
        "webhook",
        description="Run the agent on a captured sample or a past event of the webhook with a "
        "candidate prompt (default: the webhook's own) and print the message it would post and "
        "the tool calls it would make. Nothing is posted and nothing is queued: read tools run "
        "for real; write tools are shown as 'would queue for approval' and destructive ones as "
        "'would ask for confirmation', without running. The model is the one this process's "
        "settings choose (ANTHROPIC_API_KEY, else the offline digest).",
        handler=_try,
    )
    on = tried.add_mutually_exclusive_group(required=True)
    on.add_argument("--sample", metavar="ID", help="a sample it kept (smp_…)")
    on.add_argument("--event", metavar="ID", help="one of its past events (evt_…)")
    candidate = tried.add_mutually_exclusive_group()
    candidate.add_argument(
        "--prompt-file", metavar="FILE", help="the candidate prompt, from a file"
    )
    candidate.add_argument("--prompt", help="the candidate prompt, inline")
