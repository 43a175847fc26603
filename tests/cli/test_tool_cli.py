"""``agentws tool``, ``approval`` (all but ``approve``/``retry``) and ``audit tail``, as processes.

One SQLite database is seeded once per module and copied for each test:
through the CLI a workspace ``acme`` with groups ``ops`` and ``dev`` (the
native GitHub connector ``gh`` attached to both), an empty group and a
second workspace ``beta``; straight through the store what the CLI cannot
make without a live server: a remote MCP connector ``docs`` with one
unlabeled tool (attached to ``ops`` and ``dev``) and two queued calls, one
pending and one past its expiry. ``approval approve`` and ``retry`` wait
for a running service to run the call, so they are tested with a live
server elsewhere (tests/e2e/test_approval_runs.py). Commands that change
something run as the login name ``alice``, which the audit log must name.
Each process costs the better part of a second, so a test walks through a
whole story; ``--help`` is checked in-process.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from agentws.cli import main
from agentws.domain.models import (
    Approval,
    CachedTool,
    Capability,
    Connector,
    ConnectorKind,
    GroupConnector,
    Permission,
    ToolPermission,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.store import open_store
from agentws.tools.catalog import group_tool
from tests.cli.conftest import NATIVE_HOSTS, Cli

# Who runs the commands that change something: getpass reads LOGNAME first.
ALICE = {"LOGNAME": "alice"}
ACTOR = "cli:alice"

PENDING_ARGUMENTS = {"owner": "acme", "repo": "api", "title": "Flaky deploy"}
EXPIRED_ARGUMENTS = {"owner": "acme", "repo": "api", "title": "Old"}

# What `tool list acme ops` shows before anyone changes anything:
# name -> (capability, label, suggested, permission, permission_source).
OPS_TOOLS = {
    "get_approval": ("read", "fixed", None, "allow", "default"),
    "docs_lookup": ("write", "unlabeled", "read", "requires_approval", "default"),
    "gh_create_issue": ("write", "fixed", None, "requires_approval", "default"),
    "gh_delete_branch": ("destructive", "fixed", None, "requires_confirmation", "default"),
    "gh_list_repos": ("read", "fixed", None, "allow", "default"),
    "gh_search_issues": ("read", "fixed", None, "allow", "default"),
}


@attrs.frozen
class Seeded:
    """The CLI on this test's copy of the seeded database, and the seeded approvals."""

    cli: Cli
    pending_id: str
    expired_id: str
    token_id: str
    ops_id: str


@attrs.frozen
class _Template:
    directory: Path
    pending_id: str
    expired_id: str
    token_id: str
    ops_id: str


async def _seed_store(url: str, token_id: str) -> tuple[str, str, str]:
    """The remote connector, its tool and two queued calls; the approvals' ids and ops's."""
    async with open_store(url, pool_size=1) as store:
        ops = await store.group_by_slug("acme", "ops")
        dev = await store.group_by_slug("acme", "dev")
        docs = await store.insert(
            Connector(
                workspace_id=ops.workspace_id,
                name="docs",
                kind=ConnectorKind.REMOTE_MCP,
                url="https://mcp.example.com/mcp",
            )
        )
        await store.insert(
            CachedTool(
                connector_id=docs.id,
                name="lookup",
                description="Look a page up in the handbook.",
                input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
                annotations={"readOnlyHint": True},
                definition_hash="lookup-v1",
                label=None,
                suggested_label=Capability.READ,
            )
        )
        for group in (ops, dev):
            await store.insert(GroupConnector(group_id=group.id, connector_id=docs.id))
        now = utcnow()
        pending = await store.insert(
            Approval(
                group_id=ops.id,
                token_id=token_id,
                session_id="session-1",
                requested_by=f"mcp:{token_id}",
                tool_name="gh_create_issue",
                capability=Capability.WRITE,
                definition_hash="create-issue-v1",
                arguments=PENDING_ARGUMENTS,
                arguments_hash=arguments_hash("gh_create_issue", PENDING_ARGUMENTS),
                created_at=now - timedelta(minutes=5),
                expires_at=now + timedelta(days=1),
            )
        )
        expired = await store.insert(
            Approval(
                group_id=ops.id,
                token_id=token_id,
                requested_by=f"mcp:{token_id}",
                tool_name="gh_create_issue",
                capability=Capability.WRITE,
                definition_hash="create-issue-v1",
                arguments=EXPIRED_ARGUMENTS,
                arguments_hash=arguments_hash("gh_create_issue", EXPIRED_ARGUMENTS),
                created_at=now - timedelta(hours=2),
                expires_at=now - timedelta(hours=1),
            )
        )
        return pending.id, expired.id, ops.id


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> _Template:
    directory = tmp_path_factory.mktemp("seed")
    cli = Cli(directory, f"sqlite:///{directory / 'a.db'}")
    cli.ok("init")
    cli.ok("workspace", "create", "acme")
    cli.ok("workspace", "create", "beta")
    for group in ("ops", "dev", "empty"):
        cli.ok("group", "create", "acme", group)
    cli.ok("connector", "add", "acme", "gh", "--kind", "github", env=NATIVE_HOSTS)
    for group in ("ops", "dev"):
        cli.ok("connector", "attach", "acme", group, "gh")
    token_id = cli.json("token", "create", "acme", "ops", "--name", "bot")["id"]
    pending_id, expired_id, ops_id = trio.run(_seed_store, cli.database, token_id)
    return _Template(directory, pending_id, expired_id, token_id, ops_id)


@pytest.fixture
def seeded(template: _Template, tmp_path: Path) -> Seeded:
    for path in template.directory.glob("a.db*"):
        shutil.copy(path, tmp_path / path.name)
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}")
    return Seeded(cli, template.pending_id, template.expired_id, template.token_id, template.ops_id)


async def _allow_outright(url: str, group_slug: str, tool_name: str) -> None:
    """What ``tool permission`` refuses for a destructive tool, straight into the store:
    ``allow`` in group ``acme/GROUP``, for the tool's current definition."""
    async with open_store(url, pool_size=1) as store:
        group = await store.group_by_slug("acme", group_slug)
        tool = await group_tool(store, group, tool_name)
        assert tool is not None
        await store.insert(
            ToolPermission(
                workspace_id=group.workspace_id,
                group_id=group.id,
                tool_name=tool_name,
                permission=Permission.ALLOW,
                definition_hash=tool.definition_hash,
                set_by="test",
            )
        )


def _tool_rows(cli: Cli, group: str) -> list[tuple[Any, ...]]:
    """``tool list acme GROUP --json``, in order, as (name, capability, label, suggested,
    permission, permission_source) tuples."""
    rows = cli.json("tool", "list", "acme", group)
    keys = ("capability", "label", "suggested", "permission", "permission_source")
    for row in rows:
        assert set(row) == {"name", "source", *keys, "note"}
        assert row["note"] is None
    return [(r["name"], *(r[k] for k in keys)) for r in rows]


def _tools(cli: Cli, group: str) -> dict[str, tuple[Any, ...]]:
    """The same, as name -> (capability, label, suggested, permission, permission_source)."""
    return {row[0]: row[1:] for row in _tool_rows(cli, group)}


def _line(text: str, first_column: str) -> list[str]:
    """The columns of the table row whose first column is ``first_column``."""
    rows = [line.split() for line in text.splitlines() if line.split()[:1] == [first_column]]
    assert len(rows) == 1, text
    return rows[0]


# --- help ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["tool"],
        ["tool", "list"],
        ["tool", "label"],
        ["tool", "permission"],
        ["approval"],
        ["approval", "list"],
        ["approval", "show"],
        ["approval", "deny"],
        ["approval", "approve"],
        ["approval", "retry"],
        ["audit"],
        ["audit", "tail"],
    ],
    ids=" ".join,
)
def test_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """In-process: a process per page would cost a second each and test nothing more."""
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: agentws {' '.join(command)}")
    if len(command) == 2:  # leaf commands all take the common options
        assert "--database URL" in out
        assert "--json" in out
    if command == ["tool"]:
        assert "requires_approval" in out  # the description explains the permissions
    if command == ["audit", "tail"]:
        assert "--action PREFIX" in out
    if command[1:] in (["approve"], ["retry"]):
        # The service runs the call; the command waits for it, bounded.
        assert "--wait SECONDS | --no-wait" in out
        assert "running agentws service runs the call" in " ".join(out.split())


# --- tool list ----------------------------------------------------------------------------


def test_tool_list_shows_where_capability_and_permission_come_from(seeded: Seeded) -> None:
    cli = seeded.cli
    # Built-ins first, then connector tools by connector name and tool name.
    assert _tool_rows(cli, "ops") == [(name, *row) for name, row in OPS_TOOLS.items()]

    text = cli.ok("tool", "list", "acme", "ops")
    header = text.splitlines()[0].split()
    assert header == ["NAME", "SOURCE", "CAPABILITY", "LABEL", "SUGGESTED", "PERMISSION"]
    assert len(text.splitlines()) == 1 + len(OPS_TOOLS)
    assert _line(text, "docs_lookup") == [
        "docs_lookup",
        "docs",
        "write",
        "unlabeled",
        "read",
        "requires_approval",
        "(default)",
    ]
    assert _line(text, "gh_delete_branch") == [
        "gh_delete_branch",
        "gh",
        "destructive",
        "fixed",
        "-",
        "requires_confirmation",
        "(default)",
    ]
    assert "Not applied" not in text

    empty = cli.ok("tool", "list", "acme", "empty")
    assert empty.strip() == (
        "acme/empty offers no tools: attach a connector (`agentws connector attach`) "
        "or a library (`agentws library attach`)."
    )
    assert "no group 'nope' in workspace 'acme'" in cli.fails("tool", "list", "acme", "nope")

    # An allow on a destructive tool (which `tool permission` refuses) does not apply: the
    # capability's default does, and the listing says why.
    trio.run(_allow_outright, cli.database, "ops", "gh_delete_branch")
    rows = {row["name"]: row for row in cli.json("tool", "list", "acme", "ops")}
    delete_branch = rows.pop("gh_delete_branch")
    assert delete_branch["permission"] == "requires_confirmation"
    assert delete_branch["permission_source"] == "default"
    note = delete_branch["note"]
    assert note and "allow" in note and "destructive" in note
    assert all(row["note"] is None for row in rows.values())
    text = cli.ok("tool", "list", "acme", "ops")
    assert _line(text, "gh_delete_branch")[-2:] == ["requires_confirmation", "(default)"]
    assert text.rstrip("\n").endswith(f"\n\nNot applied:\ngh_delete_branch: {note}")


# --- tool label ---------------------------------------------------------------------------


def test_only_remote_tools_take_a_label_it_applies_everywhere_and_resets_looser_permissions(
    seeded: Seeded,
) -> None:
    cli = seeded.cli
    native = cli.fails("tool", "label", "acme", "gh_create_issue", "read")
    assert "gh_create_issue is a native github action; its label is fixed (write)" in native
    assert "agentws tool permission" in native
    builtin = cli.fails("tool", "label", "acme", "get_approval", "write")
    assert "get_approval is a built-in; its label is fixed (read)" in builtin
    unknown = cli.fails("tool", "label", "acme", "docs_nothing", "read")
    assert "no tool 'docs_nothing' in workspace 'acme'" in unknown
    assert "`agentws tool list acme GROUP`" in unknown

    labeled = cli.json("tool", "label", "acme", "docs_lookup", "read", env=ALICE)
    assert labeled == {
        "workspace": "acme",
        "tool": "docs_lookup",
        "connector": "docs",
        "label": "read",
        "capability": "read",
        "suggested": "read",
    }
    after = _tools(cli, "ops")
    assert after["docs_lookup"] == ("read", "admin", "read", "allow", "default")
    # Only the labeled tool changed: the refused labels changed nothing.
    assert {k: v for k, v in after.items() if k != "docs_lookup"} == {
        k: v for k, v in OPS_TOOLS.items() if k != "docs_lookup"
    }
    # The label belongs to the connector: dev, which has it attached too, sees it.
    assert _tools(cli, "dev")["docs_lookup"] == ("read", "admin", "read", "allow", "default")

    # An allow decided for the read tool does not outlive its label: unlabeled, it is write,
    # and the group's allow is gone (reset, audited below), not merely shadowed.
    cli.ok("tool", "permission", "acme", "docs_lookup", "allow", "--group", "ops", env=ALICE)
    out = cli.ok("tool", "label", "acme", "docs_lookup", "unset", env=ALICE)
    assert out.strip() == "docs_lookup is unlabeled again: callers get it as write."
    assert _tools(cli, "ops") == OPS_TOOLS  # write, unlabeled, requires_approval (default) again

    # A permission stricter than the new default survives a relabel.
    cli.ok("tool", "permission", "acme", "docs_lookup", "deny", env=ALICE)
    out = cli.ok("tool", "label", "acme", "docs_lookup", "destructive", env=ALICE)
    assert out.strip() == "Labeled docs_lookup destructive."
    assert _tools(cli, "ops")["docs_lookup"] == (
        "destructive",
        "admin",
        "read",
        "deny",
        "workspace",
    )

    labels = cli.json("audit", "tail", "--action", "tool.")
    assert [(e["actor"], e["action"], e["target"], e["detail"]) for e in labels] == [
        (
            ACTOR,
            "tool.label",
            "docs_lookup",
            {"previous_label": None, "label": "read", "definition_hash": "lookup-v1"},
        ),
        (
            ACTOR,
            "tool.permission",
            "docs_lookup",
            {
                "group": "ops",
                "group_id": seeded.ops_id,
                "previous_permission": None,
                "permission": "allow",
                "capability": "read",
                "definition_hash": "lookup-v1",
            },
        ),
        (
            ACTOR,
            "tool.label",
            "docs_lookup",
            {"previous_label": "read", "label": None, "definition_hash": "lookup-v1"},
        ),
        (
            ACTOR,
            "tool.permission_reset",
            "docs_lookup",
            {
                "group_id": seeded.ops_id,
                "previous_permission": "allow",
                "permission": "default (requires_approval)",
                "why": "the tool is now labeled write",
            },
        ),
        (
            ACTOR,
            "tool.permission",
            "docs_lookup",
            {
                "group": None,
                "group_id": None,
                "previous_permission": None,
                "permission": "deny",
                "capability": "write",
                "definition_hash": "lookup-v1",
            },
        ),
        (
            ACTOR,
            "tool.label",
            "docs_lookup",
            {"previous_label": None, "label": "destructive", "definition_hash": "lookup-v1"},
        ),
    ]
    # The deny was not reset: the one reset is the allow's.
    assert cli.json("audit", "tail", "--action", "tool.permission_reset") == [labels[3]]


# --- tool permission and audit tail -------------------------------------------------------


def test_a_groups_permission_wins_over_the_workspaces_and_all_is_audited(seeded: Seeded) -> None:
    cli = seeded.cli
    # Refused first: none of these may leave anything behind (see the audit below).
    for where in (["--group", "ops"], []):
        stderr = cli.fails("tool", "permission", "acme", "gh_delete_branch", "allow", *where)
        assert "gh_delete_branch is destructive" in stderr
        assert "cannot be allowed outright" in stderr
    assert "no group 'nope' in workspace 'acme'" in cli.fails(
        "tool", "permission", "acme", "gh_create_issue", "allow", "--group", "nope"
    )
    not_in_group = cli.fails(
        "tool", "permission", "acme", "gh_create_issue", "allow", "--group", "empty"
    )
    assert "group acme/empty has no tool 'gh_create_issue'" in not_in_group
    assert "`agentws tool list acme empty`" in not_in_group
    unknown = cli.fails("tool", "permission", "acme", "gh_nothing", "deny")
    assert "no tool 'gh_nothing' in workspace 'acme'" in unknown
    assert "agentws tool list" in unknown
    # Nothing to remove is no excuse: `default` for a tool that does not exist fails too.
    nothing = cli.fails("tool", "permission", "acme", "nope_x", "default")
    assert "no tool 'nope_x' in workspace 'acme'" in nothing

    saved = cli.json(
        "tool", "permission", "acme", "gh_create_issue", "allow", "--group", "ops", env=ALICE
    )
    assert saved["id"].startswith("tpm_")
    assert {k: v for k, v in saved.items() if k != "id"} == {
        "workspace": "acme",
        "group": "ops",
        "tool": "gh_create_issue",
        "permission": "allow",
    }
    out = cli.ok("tool", "permission", "acme", "gh_create_issue", "deny", env=ALICE)
    assert out.strip() == "gh_create_issue is deny in workspace acme."
    out = cli.ok(
        "tool",
        "permission",
        "acme",
        "gh_delete_branch",
        "requires_approval",
        "--group",
        "ops",
        env=ALICE,
    )
    assert out.strip() == "gh_delete_branch is requires_approval in group acme/ops."

    ops = _tools(cli, "ops")
    assert ops["gh_create_issue"] == ("write", "fixed", None, "allow", "group")
    assert ops["gh_delete_branch"] == ("destructive", "fixed", None, "requires_approval", "group")
    assert {k: v for k, v in ops.items() if not k.startswith(("gh_create", "gh_delete"))} == {
        k: v for k, v in OPS_TOOLS.items() if not k.startswith(("gh_create", "gh_delete"))
    }
    dev = _tools(cli, "dev")
    assert dev["gh_create_issue"] == ("write", "fixed", None, "deny", "workspace")
    assert dev["gh_delete_branch"] == OPS_TOOLS["gh_delete_branch"]

    # `default` removes the group's own: the workspace's applies, then the capability's.
    out = cli.ok(
        "tool", "permission", "acme", "gh_create_issue", "default", "--group", "ops", env=ALICE
    )
    assert out.strip() == (
        "Removed gh_create_issue's permission in group acme/ops: "
        "the workspace's, if set, else its capability's default applies."
    )
    assert _tools(cli, "ops")["gh_create_issue"] == ("write", "fixed", None, "deny", "workspace")
    cleared = cli.json("tool", "permission", "acme", "gh_create_issue", "default", env=ALICE)
    assert cleared == {
        "workspace": "acme",
        "group": None,
        "tool": "gh_create_issue",
        "permission": None,
    }
    assert _tools(cli, "dev")["gh_create_issue"] == OPS_TOOLS["gh_create_issue"]
    out = cli.ok("tool", "permission", "acme", "gh_create_issue", "default", env=ALICE)
    assert out.strip() == "gh_create_issue had no permission of its own in workspace acme."

    # The audit log: who set what, from what, to what; and its filters.
    entries = cli.json("audit", "tail", "-n", "50")
    for entry in entries:
        assert set(entry) == {"id", "at", "workspace_id", "actor", "action", "target", "detail"}
    assert entries == sorted(entries, key=lambda e: e["at"])  # oldest first
    assert entries[0]["action"] == "admin.create"  # the seed's first: nothing cut off
    mine = [e for e in entries if e["actor"] == ACTOR]
    assert len(mine) == 5
    assert entries[-5:] == mine
    create_issue = mine[0]["detail"]["definition_hash"]
    delete_branch = mine[2]["detail"]["definition_hash"]
    assert len(create_issue) == len(delete_branch) == 64
    assert create_issue != delete_branch

    def change(
        group: str | None,
        previous: str | None,
        new: str | None,
        capability: str | None = None,
        definition: str | None = None,
    ) -> dict[str, Any]:
        group_id = seeded.ops_id if group == "ops" else None
        detail = {
            "group": group,
            "group_id": group_id,
            "previous_permission": previous,
            "permission": new,
        }
        if capability is not None:  # a removal does not record the tool's capability
            detail |= {"capability": capability, "definition_hash": definition}
        return detail

    assert [(e["action"], e["target"], e["detail"]) for e in mine] == [
        (
            "tool.permission",
            "gh_create_issue",
            change("ops", None, "allow", "write", create_issue),
        ),
        (
            "tool.permission",
            "gh_create_issue",
            change(None, None, "deny", "write", create_issue),
        ),
        (
            "tool.permission",
            "gh_delete_branch",
            change("ops", None, "requires_approval", "destructive", delete_branch),
        ),
        ("tool.permission", "gh_create_issue", change("ops", "allow", None)),
        ("tool.permission", "gh_create_issue", change(None, "deny", None)),
    ]
    acme_id = mine[0]["workspace_id"]
    assert acme_id.startswith("ws_")
    assert all(e["workspace_id"] == acme_id for e in mine)

    # A prefix that only some of the log matches.
    assert cli.json("audit", "tail", "--action", "tool.permission", "-n", "3") == mine[-3:]
    in_acme = cli.json("audit", "tail", "--workspace", "acme", "-n", "50")
    assert in_acme == [e for e in entries if e["workspace_id"] == acme_id]
    assert len(in_acme) < len(entries)
    in_beta = cli.json("audit", "tail", "--workspace", "beta")
    assert [(e["action"], e["target"]) for e in in_beta] == [("workspace.create", "beta")]

    newest = cli.ok("audit", "tail", "-n", "1").splitlines()
    assert len(newest) == 1
    # The last change removed the workspace's permission: the line says from what, to nothing.
    assert newest[0].split()[1:] == [
        ACTOR,
        "tool.permission",
        "gh_create_issue",
        "group=-",
        "previous_permission=deny",
        "permission=-",
    ]


# --- approval list, show, deny ------------------------------------------------------------


def test_a_pending_call_is_listed_shown_and_denied_once(seeded: Seeded) -> None:
    cli = seeded.cli
    pending, expired = seeded.pending_id, seeded.expired_id
    digest = arguments_hash("gh_create_issue", PENDING_ARGUMENTS)

    # Pending by default: the seeded call past its expiry is expired, though stored pending.
    listed = {a["id"]: a for a in cli.json("approval", "list")}
    assert list(listed) == [pending]
    row = listed[pending]
    assert row["status"] == "pending"
    # A list shows a preview of the arguments and their size; `approval show` shows them all.
    assert "arguments" not in row
    assert row["arguments_preview"] == json.dumps(PENDING_ARGUMENTS, ensure_ascii=False)
    assert row["arguments_bytes"] == len(json.dumps(PENDING_ARGUMENTS, separators=(",", ":")))
    assert row["arguments_hash"] == digest
    assert (row["workspace"], row["group"], row["tool"], row["capability"]) == (
        "acme",
        "ops",
        "gh_create_issue",
        "write",
    )
    assert row["requested_by"] == f"mcp:{seeded.token_id}"
    assert row["token_id"] == seeded.token_id
    assert row["session_id"] == "session-1"
    assert (row["decided_by"], row["reason"], row["decided_at"]) == (None, None, None)

    everything = cli.json("approval", "list", "--status", "all")
    assert [(a["id"], a["status"]) for a in everything] == [
        (expired, "expired"),  # oldest first
        (pending, "pending"),
    ]
    by_status = cli.json("approval", "list", "--status", "expired")
    assert [(a["id"], a["status"]) for a in by_status] == [(expired, "expired")]
    assert by_status[0]["arguments_preview"] == json.dumps(EXPIRED_ARGUMENTS, ensure_ascii=False)
    assert cli.ok("approval", "list", "--workspace", "beta").strip() == "No pending calls."
    newest = cli.json("approval", "list", "--status", "all", "--limit", "1")
    assert [a["id"] for a in newest] == [pending]

    table = cli.ok("approval", "list", "--status", "all")
    assert table.splitlines()[0].split() == [
        "ID",
        "WHERE",
        "TOOL",
        "STATUS",
        "REQUESTED_BY",
        "AGE",
        "ARGUMENTS",
    ]
    columns = _line(table, pending)
    assert columns[1:5] == ["acme/ops", "gh_create_issue", "pending", f"mcp:{seeded.token_id}"]
    assert re.fullmatch(r"\d+m", columns[5])  # seeded five minutes before the test
    assert " ".join(columns[6:]) == '{"owner": "acme", "repo": "api", "title": "Flaky deploy"}'
    assert _line(table, expired)[3] == "expired"

    shown = cli.ok("approval", "show", pending)
    assert shown.startswith(f"Approval {pending}: gh_create_issue (write) in acme/ops\n")
    assert "  status:       pending\n" in shown
    assert f"  requested by: mcp:{seeded.token_id} at " in shown
    assert '"title": "Flaky deploy"' in shown
    assert f"  arguments hash (SHA-256 of tool and arguments): {digest}" in shown
    assert "decided by" not in shown

    denied = cli.json("approval", "deny", pending, "--reason", "no", env=ALICE)
    assert denied["id"] == pending
    assert denied["status"] == "denied"
    assert denied["reason"] == "no"
    assert denied["decided_by"] == ACTOR
    assert denied["decided_at"] is not None
    assert denied["result"] is None

    again = cli.fails("approval", "deny", pending, "--reason", "still no")
    assert f"approval {pending} is already denied by {ACTOR}" in again
    late = cli.fails("approval", "deny", expired)
    assert f"approval {expired} has expired; the caller must ask again" in late
    missing = cli.fails("approval", "deny", "apr_nope")
    assert "no approval 'apr_nope' (see `agentws approval list`)" in missing

    shown = cli.ok("approval", "show", pending)
    assert "  status:       denied\n" in shown
    assert f"  decided by:   {ACTOR} at " in shown
    assert "  reason:       no" in shown
    everything = cli.json("approval", "list", "--status", "all")
    assert [(a["id"], a["status"]) for a in everything] == [
        (expired, "expired"),
        (pending, "denied"),
    ]

    decisions = cli.json("audit", "tail", "--action", "approval.")
    assert [(e["action"], e["actor"], e["target"]) for e in decisions] == [
        ("approval.deny", ACTOR, pending)
    ]
    assert decisions[0]["detail"] == {
        "tool": "gh_create_issue",
        "requested_by": f"mcp:{seeded.token_id}",
        "arguments_hash": digest,
        "reason": "no",
    }
