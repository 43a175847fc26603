"""The ``agentws tool`` commands: what each tool of a group is and what callers get.

``tool list|label|permission``: each tool's capability (its label), what
callers get (its permission) and where both come from. The work is done by
:mod:`agentws.tools.admin`.
"""

from __future__ import annotations

import argparse
from typing import Any

from agentws.cli.output import Context, Output, table
from agentws.cli.parsing import Verbs, noun
from agentws.domain.models import Capability, Permission

__all__ = ["add_tool_commands"]


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
    text = table(
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


def add_tool_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``tool`` to the ``agentws`` command line."""
    tool = noun(
        commands,
        common,
        "tool",
        "tools' capabilities (labels) and permissions",
        "Each tool has a capability (read, write, destructive) and a permission "
        "saying what MCP callers get: allow (runs), requires_approval (queued for an admin), "
        "requires_confirmation (the caller confirms each call) or deny. Without an admin's "
        "setting, read is allow, write requires_approval, destructive requires_confirmation.",
    )

    tool.verb(
        "list",
        "a group's tools: capability, label, permission and where each comes from",
        "workspace",
        "group",
        handler=_tool_list,
    )

    # Each setting: the tool, then its value (or the word that removes it).
    settings = {}
    for name, handler, text, more, tool_help, value, values, value_help in (
        (
            "label",
            _tool_label,
            "set a remote MCP tool's capability",
            "Label a remote MCP connector's tool. Unlabeled tools are write, whatever "
            "the remote claims; a tool whose definition changes loses its label. Built-ins and "
            "native actions have fixed labels. Applies in every group the connector is "
            "attached to.",
            "tool name, <connector>_<action>",
            "capability",
            [*(c.value for c in Capability), "unset"],
            "read, write, destructive, or unset (back to unlabeled: write)",
        ),
        (
            "permission",
            _tool_permission,
            "set what callers get for a tool, in a group or the whole workspace",
            "Set a tool's permission for one group (--group) or for every group of "
            "the workspace; a group's own wins. 'default' removes the setting. A destructive "
            "tool cannot be 'allow'. A permission looser than the default is removed when a "
            "remote tool's definition changes or the tool is labeled again.",
            "tool name",
            "permission",
            [*(p.value for p in Permission), "default"],
            "allow, requires_approval, requires_confirmation, deny, or default",
        ),
    ):
        setting = tool.verb(name, text, "workspace", description=more, handler=handler)
        setting.add_argument("tool", metavar="TOOL", help=tool_help)
        setting.add_argument(value, metavar=value.upper(), choices=values, help=value_help)
        settings[name] = setting
    settings["permission"].add_argument("--group", metavar="GROUP", help="only in this group")
