"""The ``agentws tool``, ``approval`` and ``audit`` commands: permissions, approvals, the log.

- ``tool list|label|permission``: what each tool of a group is (capability),
  what callers get (permission) and where both come from;
- ``approval list|show|approve|deny|retry``: the queue of calls waiting
  for an admin; approving records the decision, which a running service
  carries out with its own settings (never this process's environment),
  and waits a bounded time for the outcome;
- ``audit tail``: the newest entries of the audit log, or follow it.

The work is done by :mod:`agentws.tools.admin`, :mod:`agentws.approvals`.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

import trio

from agentws.cli import Context, Output, _iso, _table
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    Capability,
    Group,
    Permission,
    Workspace,
)

__all__ = ["add_tool_commands"]

# How often `audit tail --follow` looks for new entries.
_FOLLOW_POLL_S = 0.5
# How long `approval approve|retry` waits for a service to run the call, by default.
_OUTCOME_WAIT_S = 30.0
# The exit status when the decision is recorded but the call has no outcome yet.
NOT_FINISHED = 3


def _bounded_count(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 10000, got {text!r}")
    return value


# --- tool ---------------------------------------------------------------------------------


async def _tool_list(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.tools.admin import group_tool_list

    rows = []
    for row in await group_tool_list(ctx.store, args.workspace, args.group):
        tool = row.tool
        rows.append(
            {
                "name": tool.name,
                "source": tool.source,
                "capability": tool.capability.value,
                "label": row.label_source,
                "suggested": row.suggested.value if row.suggested else None,
                "permission": tool.permission.value,
                "permission_source": tool.permission_source,
                "note": tool.permission_note,
            }
        )
    empty = (
        f"{args.workspace}/{args.group} offers no tools: attach a connector "
        f"(`agentws connector attach`) or a library (`agentws library attach`)."
    )
    columns = ("name", "source", "capability", "label", "suggested", "permission")
    text = _table(
        [{**r, "permission": f"{r['permission']} ({r['permission_source']})"} for r in rows],
        columns,
        empty,
    )
    notes = [f"{r['name']}: {r['note']}" for r in rows if r["note"]]
    if notes:
        text += "\n\nNot applied:\n" + "\n".join(notes)
    return Output(rows, text)


async def _tool_label(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.tools.admin import set_label

    label = None if args.capability == "unset" else Capability(args.capability)
    connector, cached = await set_label(
        ctx.store, args.workspace, args.tool, label, actor=ctx.actor
    )
    data = {
        "workspace": args.workspace,
        "tool": args.tool,
        "connector": connector.name,
        "label": cached.label.value if cached.label else None,
        "capability": cached.capability.value,
        "suggested": cached.suggested_label.value if cached.suggested_label else None,
    }
    if label is None:
        text = f"{args.tool} is unlabeled again: callers get it as write."
    else:
        text = f"Labeled {args.tool} {label.value}."
    return Output(data, text)


async def _tool_permission(args: argparse.Namespace, ctx: Context) -> Output:
    from agentws.tools.admin import clear_permission, set_permission

    where = f"group {args.workspace}/{args.group}" if args.group else f"workspace {args.workspace}"
    data: dict[str, Any] = {
        "workspace": args.workspace,
        "group": args.group,
        "tool": args.tool,
    }
    if args.permission == "default":
        removed = await clear_permission(
            ctx.store, args.workspace, args.tool, group_slug=args.group, actor=ctx.actor
        )
        data["permission"] = None
        if removed is None:
            return Output(data, f"{args.tool} had no permission of its own in {where}.")
        fallback = "the workspace's, if set, else " if args.group else ""
        text = f"Removed {args.tool}'s permission in {where}: {fallback}its capability's default"
        return Output(data, text + " applies.")
    saved = await set_permission(
        ctx.store,
        args.workspace,
        args.tool,
        Permission(args.permission),
        group_slug=args.group,
        actor=ctx.actor,
    )
    data["permission"] = saved.permission.value
    data["id"] = saved.id
    return Output(data, f"{args.tool} is {saved.permission.value} in {where}.")


# --- approval -----------------------------------------------------------------------------


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
        "created_at": _iso(a.created_at),
        "expires_at": _iso(a.expires_at),
        "decided_at": _iso(a.decided_at),
        "finished_at": _iso(a.finished_at),
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
    from agentws.tools.approval_queue import list_approvals
    from agentws.views import approval_summary_json

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
    return Output(rows, _table(table_rows, columns, empty))


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


def _wait_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 3600, got {text!r}")
    return value


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


# --- audit --------------------------------------------------------------------------------


def _audit_json(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "at": _iso(entry.created_at),
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


def add_tool_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
) -> None:
    """Add ``tool``, ``approval`` and ``audit`` to the ``agentws`` command line."""
    tool = commands.add_parser(
        "tool",
        help="tools' capabilities (labels) and permissions",
        description="Each tool has a capability (read, write, destructive) and a permission "
        "saying what MCP callers get: allow (runs), requires_approval (queued for an admin), "
        "requires_confirmation (the caller confirms each call) or deny. Without an admin's "
        "setting, read is allow, write requires_approval, destructive requires_confirmation.",
    ).add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = tool.add_parser(
        "list",
        parents=[common],
        help="a group's tools: capability, label, permission and where each comes from",
    )
    listing.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    listing.add_argument("group", metavar="GROUP", help="group slug")
    listing.set_defaults(handler=_tool_list)

    label = tool.add_parser(
        "label",
        parents=[common],
        help="set a remote MCP tool's capability",
        description="Label a remote MCP connector's tool. Unlabeled tools are write, whatever "
        "the remote claims; a tool whose definition changes loses its label. Built-ins and "
        "native actions have fixed labels. Applies in every group the connector is attached to.",
    )
    label.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    label.add_argument("tool", metavar="TOOL", help="tool name, <connector>_<action>")
    label.add_argument(
        "capability",
        metavar="CAPABILITY",
        choices=[*(c.value for c in Capability), "unset"],
        help="read, write, destructive, or unset (back to unlabeled: write)",
    )
    label.set_defaults(handler=_tool_label)

    permission = tool.add_parser(
        "permission",
        parents=[common],
        help="set what callers get for a tool, in a group or the whole workspace",
        description="Set a tool's permission for one group (--group) or for every group of "
        "the workspace; a group's own wins. 'default' removes the setting. A destructive tool "
        "cannot be 'allow'. A permission looser than the default is removed when a remote "
        "tool's definition changes or the tool is labeled again.",
    )
    permission.add_argument("workspace", metavar="WORKSPACE", help="workspace slug")
    permission.add_argument("tool", metavar="TOOL", help="tool name")
    permission.add_argument(
        "permission",
        metavar="PERMISSION",
        choices=[*(p.value for p in Permission), "default"],
        help="allow, requires_approval, requires_confirmation, deny, or default",
    )
    permission.add_argument("--group", metavar="GROUP", help="only in this group")
    permission.set_defaults(handler=_tool_permission)

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
        "--limit", type=_bounded_count, default=100, metavar="N", help="newest N (default 100)"
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
            type=_wait_seconds,
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

    audit = commands.add_parser("audit", help="read the audit log").add_subparsers(
        dest="action", metavar="ACTION", required=True
    )
    tail = audit.add_parser(
        "tail",
        parents=[common],
        help="the newest audit entries (tool calls, decisions, labels, permissions, tokens)",
    )
    tail.add_argument(
        "-n", "--lines", type=_bounded_count, default=20, metavar="N", help="how many (default 20)"
    )
    tail.add_argument("--workspace", metavar="WORKSPACE", help="only this workspace's")
    tail.add_argument(
        "--action", metavar="PREFIX", help="only actions starting with this (tool., approval.)"
    )
    tail.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new entries (Ctrl+C stops)"
    )
    tail.set_defaults(handler=_audit_tail)
