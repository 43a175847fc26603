"""The ``agentws approval`` commands: the queue of tool calls waiting for an admin.

``approval list|show|approve|deny|retry``: approving records the decision,
which a running service carries out with its own settings (never this
process's environment), and waits a bounded time for the outcome.

The work is done by :mod:`agentws.tools.approval_queue` and :mod:`agentws.approvals`.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

import trio

from agentws.cli.arguments import bounded_count, seconds
from agentws.cli.output import Context, Output, iso, table
from agentws.cli.parsing import Verbs
from agentws.domain.models import Approval, ApprovalStatus, Group, Workspace

__all__ = ["NOT_FINISHED", "add_approval_commands"]

# How long `approval approve|retry` waits for a service to run the call, by default.
_OUTCOME_WAIT_S = 30.0
# The exit status when the decision is recorded but the call has no outcome yet.
NOT_FINISHED = 3


def _approval_json(a: Approval, group: Group | None, workspace: Workspace | None) -> dict[str, Any]:
    from agentws.tools.approval_queue import current_status

    return {
        "id": a.id,
        "workspace": workspace.slug if workspace else None,
        "group": group.slug if group else None,
        "tool": a.tool_name,
        "capability": a.capability.value,
        "status": current_status(a).value,
        "requested_by": a.requested_by,
        "token_id": a.token_id,
        "session_id": a.session_id,
        "arguments": a.arguments,
        "arguments_hash": a.arguments_hash,
        "secret_arguments_sealed": a.sealed_arguments is not None,
        "reason": a.reason,
        "decided_by": a.decided_by,
        "result": a.result,
        "error": a.error,
        "created_at": iso(a.created_at),
        "expires_at": iso(a.expires_at),
        "decided_at": iso(a.decided_at),
        "finished_at": iso(a.finished_at),
        "attempts": a.attempts,
        "instance": a.lease_owner,
    }


def _age(when: datetime) -> str:
    from agentws.domain.rules import utcnow

    seconds = int((utcnow() - when).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


async def _approval_list(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.domain.approval_lists import MAX_PAGE, ApprovalSummary
    from agentws.doors.views import approval_summary_json
    from agentws.tools.approval_queue import list_approvals

    statuses = None if args.status == "all" else frozenset({ApprovalStatus(args.status)})
    # The newest N, read newest first a page at a time, then shown oldest first.
    found: list[ApprovalSummary] = []
    cursor: str | None = None
    while len(found) < args.limit:
        page = await list_approvals(
            ctx.store,
            workspace_slug=args.workspace,
            statuses=statuses,
            limit=min(MAX_PAGE, args.limit - len(found)),
            cursor=cursor,
            newest_first=True,
        )
        found += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
    found.reverse()
    rows = [{**approval_summary_json(a), "session_id": a.session_id} for a in found]
    table_rows = [
        {
            **row,
            "where": f"{row['workspace']}/{row['group']}",
            "age": _age(a.created_at),
            "arguments": _short(a.arguments_preview),
        }
        for row, a in zip(rows, found, strict=True)
    ]
    what = "pending calls" if args.status == "pending" else f"{args.status} approvals"
    empty = f"No {what}." if args.status != "all" else "No approvals yet."
    columns = ("id", "where", "tool", "status", "requested_by", "age", "arguments")
    return Output(rows, table(table_rows, columns, empty))


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _approval_data(ctx: Context, approval: Approval) -> dict[str, Any]:
    """The approval as JSON, with the slugs of its group and workspace."""
    group = await ctx.store.find(Group, id=approval.group_id)
    workspace = await ctx.store.find(Workspace, id=group.workspace_id) if group else None
    return _approval_json(approval, group, workspace)


async def _approval_show(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.tools.approval_queue import find_approval

    data = await _approval_data(ctx, await find_approval(ctx.store, args.id))
    return Output(data, _approval_text(data))


def _approval_text(data: dict[str, Any]) -> str:
    lines = [
        f"Approval {data['id']}: {data['tool']} ({data['capability']}) in "
        f"{data['workspace']}/{data['group']}",
        f"  status:       {data['status']}",
        f"  requested by: {data['requested_by']} at {data['created_at']}",
        f"  expires:      {data['expires_at']}",
        "  arguments:    "
        + json.dumps(data["arguments"], indent=2, ensure_ascii=False).replace("\n", "\n  "),
        f"  arguments hash (SHA-256 of tool and arguments): {data['arguments_hash']}",
    ]
    if data["secret_arguments_sealed"]:
        lines.append("  (values the tool marks secret are shown redacted; they are kept encrypted)")
    if data["decided_by"]:
        lines.append(f"  decided by:   {data['decided_by']} at {data['decided_at']}")
    if data["reason"]:
        lines.append(f"  reason:       {data['reason']}")
    if data["attempts"] > 1 or data["instance"]:
        lines.append(f"  ran on:       {data['instance']} (attempt {data['attempts']})")
    if data["error"]:
        lines.append(f"  error:        {data['error']}")
    if data["result"] is not None:
        texts = [c.get("text", "") for c in data["result"].get("content", [])]
        lines.append("  result:       " + "\n  ".join(t for t in texts if t))
    return "\n".join(lines)


async def _outcome(ctx: Context, approval: Approval, verb: str, wait_s: float) -> Output:
    """Wait up to ``wait_s`` for a service to run the call; what became of it."""
    from agentws.approvals.runs import await_outcome
    from agentws.tools.approval_queue import current_status, find_approval

    if wait_s > 0:
        with trio.move_on_after(wait_s):
            approval = await await_outcome(ctx.store, approval.id, changes=None)
    approval = await find_approval(ctx.store, approval.id)
    data = await _approval_data(ctx, approval)
    status = current_status(approval)
    name, show = approval.tool_name, f"`agentws approval show {approval.id}`"
    code = 0
    if status is ApprovalStatus.EXECUTED:
        head = f"{verb} {approval.id}: {name} ran."
    elif status is ApprovalStatus.FAILED:
        head = f"{verb} {approval.id}, but {name} failed: {approval.error}"
        code = 1
    elif status is ApprovalStatus.RUNNING:
        head = (
            f"{verb} {approval.id}: {name} is running on instance {approval.lease_owner} and had "
            f"not finished after {wait_s:g} s; {show} tells its outcome."
        )
        code = NOT_FINISHED
    elif wait_s > 0:
        head = (
            f"{verb} {approval.id}: the decision is recorded, but no running agentws service "
            f"picked the call up within {wait_s:g} s. It runs, once, when a service runs on this "
            f"database; {show} tells its outcome."
        )
        code = NOT_FINISHED
    else:
        head = f"{verb} {approval.id}: a running agentws service runs {name}; {show} tells how."
    data["exit_status"] = code
    return Output(data, head + "\n" + _approval_text(data), status=code)


async def _approval_approve(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.approvals.decisions import approve

    approved = await approve(ctx.store, args.id, actor=ctx.actor, reason=args.reason)
    return await _outcome(ctx, approved, "Approved", args.wait)


async def _approval_retry(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.approvals.decisions import retry

    retried = await retry(ctx.store, args.id, actor=ctx.actor, reason=args.reason)
    return await _outcome(ctx, retried, "Retried", args.wait)


async def _approval_deny(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.approvals.decisions import deny

    denied = await deny(ctx.store, args.id, actor=ctx.actor, reason=args.reason)
    return Output(
        await _approval_data(ctx, denied), f"Denied {denied.id}: {denied.tool_name} will not run."
    )


def add_approval_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``approval`` to the ``agentws`` command line."""
    approval = commands.add_parser(
        "approval",
        help="the queue of tool calls waiting for an admin",
        description="Write calls from MCP callers wait here. Approving records the "
        "decision; a running agentws service runs the call once, with the exact arguments it "
        "was queued with and its own settings; the caller's open session is told the outcome, "
        "which get_approval reads too.",
    ).add_subparsers(dest="action", metavar="ACTION", required=True)
    a_list = approval.add_parser("list", parents=[common], help="list queued calls")
    a_list.add_argument("--workspace", metavar="WORKSPACE", help="only this workspace's")
    a_list.add_argument(
        "--status",
        choices=[*(s.value for s in ApprovalStatus), "all"],
        default="pending",
        help="which to list (default: pending)",
    )
    a_list.add_argument(
        "--limit", type=bounded_count, default=100, metavar="N", help="newest N (default 100)"
    )
    a_list.set_defaults(handler=_approval_list)
    a_show = approval.add_parser("show", parents=[common], help="one queued call, in full")
    a_show.add_argument("id", metavar="ID", help="approval id (apr_…)")
    a_show.set_defaults(handler=_approval_show)
    outcome_help = (
        "A running agentws service runs the call, once, with its own settings; this command "
        "waits for the outcome and prints it. Exit status: 0 it ran, 1 it failed (or the "
        f"command did), {NOT_FINISHED} the decision is recorded but the call has no outcome yet "
        "(no service picked it up in time, or it still runs)."
    )
    a_approve = approval.add_parser(
        "approve",
        parents=[common],
        help="approve a queued call; a running service runs it (once)",
        description=outcome_help,
    )
    a_approve.add_argument("id", metavar="ID", help="approval id (apr_…)")
    a_approve.add_argument("--reason", help="why (recorded and told to the caller)")
    a_approve.set_defaults(handler=_approval_approve)
    a_retry = approval.add_parser(
        "retry",
        parents=[common],
        help="run a call that failed after approval again (once)",
        description="A call that failed after its approval goes back to approved; checked "
        "again (tool, token, permission, arguments) and run once more. " + outcome_help,
    )
    a_retry.add_argument("id", metavar="ID", help="approval id (apr_…)")
    a_retry.add_argument("--reason", help="why (recorded in the audit log)")
    a_retry.set_defaults(handler=_approval_retry)
    for command in (a_approve, a_retry):
        waiting = command.add_mutually_exclusive_group()
        waiting.add_argument(
            "--wait",
            type=seconds(0.0, 3600.0),
            default=_OUTCOME_WAIT_S,
            metavar="SECONDS",
            help=f"how long to wait for the outcome (default {_OUTCOME_WAIT_S:g})",
        )
        waiting.add_argument(
            "--no-wait",
            dest="wait",
            action="store_const",
            const=0.0,
            help="record the decision and return at once",
        )
    a_deny = approval.add_parser("deny", parents=[common], help="deny a queued call")
    a_deny.add_argument("id", metavar="ID", help="approval id (apr_…)")
    a_deny.add_argument("--reason", help="why (recorded and told to the caller)")
    a_deny.set_defaults(handler=_approval_deny)
