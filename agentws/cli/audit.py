"""``agentws audit tail``: the newest entries of the audit log, or follow it."""

from __future__ import annotations

import argparse
from contextlib import aclosing

import trio

from agentws.cli.arguments import bounded_count
from agentws.cli.output import Context, Output, print_followed
from agentws.cli.parsing import Verbs, noun, time_window
from agentws.common.audit import FILTER_NAMES, AuditFilters, audit_entries
from agentws.core.errors import ValidationError
from agentws.domain.models import AuditEntry
from agentws.domain.permissions import Decision
from agentws.doors.views import audit_json

__all__ = ["add_audit_commands"]

# How often `audit tail --follow` looks for new entries.
_FOLLOW_POLL_S = 0.5


def _audit_line(entry: AuditEntry) -> str:
    detail = entry.detail
    keys = (
        "group",
        "tool",
        "scope",
        "decision",
        "outcome",
        "previous_label",
        "label",
        "previous_permission",
        "permission",
        "reason",
        "error",
    )
    # A key that is there with no value says something too (a label or permission removed).
    shown = [f"{k}={'-' if detail[k] is None else detail[k]}" for k in keys if k in detail]
    if "arguments_hash" in detail:
        shown.append(f"args={str(detail['arguments_hash'])[:12]}")
    return (
        f"{entry.created_at.isoformat(timespec='seconds')}  {entry.actor}  {entry.action}  "
        f"{entry.target}  {' '.join(shown)}".rstrip()
    )


def _filters(args: argparse.Namespace) -> AuditFilters:
    given = {name: getattr(args, name) for name in FILTER_NAMES}
    decision = given.pop("decision")
    return AuditFilters(**given, decision=Decision(decision) if decision else None)


# The filters typed as text: option, metavar, help (--decision and the times are typed values).
_TEXT_FILTERS = (
    ("--workspace", "WORKSPACE", "only this workspace's"),
    ("--action", "PREFIX", "only actions starting with this (tool., approval.)"),
    ("--group", "GROUP", "only tool calls in this group"),
    ("--token", "TOKEN", "only this MCP token's (tok_… or its name)"),
    ("--oauth-client", "CLIENT_ID", "only calls with this OAuth client's tokens"),
    ("--actor", "ACTOR", "only this actor's (admin:alice, mcp:tok_…)"),
    ("--tool", "TOOL", "only entries about this tool (its calls)"),
)

# The filters `--follow` does not take (it reads new entries by time).
_NOT_FOLLOWED = ("group", "token", "oauth_client", "actor", "tool", "decision", "since", "until")


async def _audit_tail(args: argparse.Namespace, ctx: Context) -> Output:
    if not args.follow:
        newest: list[AuditEntry] = []
        async with aclosing(await audit_entries(ctx.store, _filters(args))) as found:
            async for entry in found:
                newest.append(entry)
                if len(newest) >= args.lines:
                    break
        entries = newest[::-1]
        rows = [audit_json(e) for e in entries]
        text = "\n".join(_audit_line(e) for e in entries) or "The audit log is empty."
        return Output(rows, text)
    given = [f"--{name.replace('_', '-')}" for name in _NOT_FOLLOWED if getattr(args, name)]
    if given:
        raise ValidationError(f"--follow takes --workspace and --action only, not {given[0]}")
    workspace_id = None
    if args.workspace:
        workspace_id = (await ctx.store.workspace_by_slug(args.workspace)).id
    entries = await ctx.store.audit_log(
        limit=args.lines, workspace_id=workspace_id, action_prefix=args.action
    )

    # --follow prints as it goes (JSON lines with --json) until interrupted.
    def emit(batch: list[AuditEntry]) -> None:
        print_followed(batch, args.json, audit_json, _audit_line)

    emit(entries)
    last = entries[-1].created_at if entries else None
    seen = {e.id for e in entries}
    while True:
        await trio.sleep(_FOLLOW_POLL_S)
        batch = await ctx.store.audit_log(
            limit=1000, workspace_id=workspace_id, action_prefix=args.action, after=last
        )
        fresh = [e for e in batch if e.id not in seen]
        emit(fresh)
        if batch:
            last = batch[-1].created_at
            seen = {e.id for e in batch if e.created_at == last}


def add_audit_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``audit`` to the ``agentws`` command line."""
    audit = noun(commands, common, "audit", "read the audit log")
    tail = audit.verb(
        "tail",
        "the newest audit entries (tool calls, decisions, labels, permissions, tokens)",
        handler=_audit_tail,
    )
    tail.add_argument(
        "-n", "--lines", type=bounded_count, default=20, metavar="N", help="how many (default 20)"
    )
    for option, metavar, help_text in _TEXT_FILTERS:
        tail.add_argument(option, metavar=metavar, help=help_text)
    tail.add_argument(
        "--decision", choices=[d.value for d in Decision], help="only calls the gate decided so"
    )
    time_window(
        tail,
        "from this time: ISO 8601 (UTC if no zone) or a span before now (30m, 24h, 7d)",
        "before this time, as for --since",
    )
    tail.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new entries (Ctrl+C stops)"
    )
