"""``agentws audit tail``: the newest entries of the audit log, or follow it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import trio

from agentws.cli.arguments import bounded_count
from agentws.cli.output import Context, Output, iso
from agentws.domain.models import AuditEntry

__all__ = ["add_audit_commands"]

# How often `audit tail --follow` looks for new entries.
_FOLLOW_POLL_S = 0.5


def _audit_json(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "at": iso(entry.created_at),
        "workspace_id": entry.workspace_id,
        "actor": entry.actor,
        "action": entry.action,
        "target": entry.target,
        "detail": entry.detail,
    }


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


async def _audit_tail(args: argparse.Namespace, ctx: Context) -> Output:
    workspace_id = None
    if args.workspace:
        workspace_id = (await ctx.store.workspace_by_slug(args.workspace)).id
    entries = await ctx.store.audit_log(
        limit=args.lines, workspace_id=workspace_id, action_prefix=args.action
    )
    if not args.follow:
        rows = [_audit_json(e) for e in entries]
        text = "\n".join(_audit_line(e) for e in entries) or "The audit log is empty."
        return Output(rows, text)

    # --follow prints as it goes (JSON lines with --json) until interrupted.
    def emit(batch: list[AuditEntry]) -> None:
        for entry in batch:
            print(json.dumps(_audit_json(entry)) if args.json else _audit_line(entry))
        sys.stdout.flush()

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
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
) -> None:
    """Add ``audit`` to the ``agentws`` command line."""
    audit = commands.add_parser("audit", help="read the audit log").add_subparsers(
        dest="action", metavar="ACTION", required=True
    )
    tail = audit.add_parser(
        "tail",
        parents=[common],
        help="the newest audit entries (tool calls, decisions, labels, permissions, tokens)",
    )
    tail.add_argument(
        "-n", "--lines", type=bounded_count, default=20, metavar="N", help="how many (default 20)"
    )
    tail.add_argument("--workspace", metavar="WORKSPACE", help="only this workspace's")
    tail.add_argument(
        "--action", metavar="PREFIX", help="only actions starting with this (tool., approval.)"
    )
    tail.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new entries (Ctrl+C stops)"
    )
    tail.set_defaults(handler=_audit_tail)
