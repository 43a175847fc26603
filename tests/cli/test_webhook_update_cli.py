"""``agentws webhook create --allow-tool`` and ``agentws webhook update``, through the CLI.

A webhook's runs may use write tools of its group without an admin's
approval when an admin pre-authorizes them (``--allow-tool``): each is
bound to the tool's definition hash, destructive and read tools are
refused, and changing the group drops them. Updates change the prompt,
channel, group and pre-authorizations, and each one that changes something
is audited (``webhook.update``).

Every test starts from a workspace ``acme`` with groups ``ops`` and ``dev``,
the native GitHub connector ``gh`` attached to both (``gh_create_issue``
write, ``gh_delete_branch`` destructive, ``gh_search_issues`` read) and,
attached to ``ops`` only, a remote MCP connector ``desk`` whose one tool
``desk_open_ticket`` is unlabeled (so write), inserted through the store
(adding it through the CLI would fetch its tools over the network). On
SQLite from a copy of a database seeded once per module; the tests marked
so run on PostgreSQL too, from scratch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.cli import main
from agentws.domain.models import CachedTool, Connector, ConnectorKind, GroupConnector, Webhook
from agentws.store import open_store
from tests.cli.conftest import NATIVE_HOSTS, Cli, seeded_copy
from tests.cli.test_webhook_cli import WEBHOOK_KEYS

# Who runs the commands that change something: getpass reads LOGNAME first.
ALICE = {"LOGNAME": "alice"}
ACTOR = "cli:alice"
PROMPT = "Summarise the deploy and open an issue when it failed.\n"
DESK_HASH = "open-ticket-v1"
SLACK_TOKEN = "xoxb-0000000000-test-token"
HOOK_URL = "https://hooks.slack.com/services/T0TEST/B0TEST/updatetestpathtoken"
# Its host too: saving a channel checks its connector's URL again (no DNS for a named host).
NAMED_HOSTS = {
    "AGENTWS_CONNECTOR_ALLOWLIST": NATIVE_HOSTS["AGENTWS_CONNECTOR_ALLOWLIST"] + ",hooks.slack.com"
}


# --- set-up -------------------------------------------------------------------------------


async def _add_remote_tool(url: str) -> None:
    """The remote connector ``desk`` with one unlabeled tool, attached to ``ops``."""
    async with open_store(url, pool_size=1) as store:
        ops = await store.group_by_slug("acme", "ops")
        desk = await store.insert(
            Connector(
                workspace_id=ops.workspace_id,
                name="desk",
                kind=ConnectorKind.REMOTE_MCP,
                url="https://desk.example.com/mcp",
            )
        )
        await store.insert(
            CachedTool(
                connector_id=desk.id,
                name="open_ticket",
                description="Open a ticket in the help desk.",
                input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
                definition_hash=DESK_HASH,
            )
        )
        await store.insert(GroupConnector(group_id=ops.id, connector_id=desk.id))


def _set_up(cli: Cli) -> None:
    cli.ok("init")
    cli.ok("workspace", "create", "acme")
    for group in ("ops", "dev"):
        cli.ok("group", "create", "acme", group)
    cli.ok("connector", "add", "acme", "gh", "--kind", "github", env=NATIVE_HOSTS)
    for group in ("ops", "dev"):
        cli.ok("connector", "attach", "acme", group, "gh")
    trio.run(_add_remote_tool, cli.database)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("acme")
    _set_up(Cli(directory, f"sqlite:///{directory / 'a.db'}"))
    return directory


@pytest.fixture
def acme(template: Path, tmp_path: Path) -> Cli:
    """The CLI on this test's copy of the seeded SQLite database (and its key)."""
    return seeded_copy(template, tmp_path)


@pytest.fixture
def acme_both(request: pytest.FixtureRequest, any_cli: Cli) -> Cli:
    """Seeded on SQLite (a copy) and on PostgreSQL (from scratch)."""
    if any_cli.database.startswith("sqlite"):
        seeded: Cli = request.getfixturevalue("acme")
        return seeded
    _set_up(any_cli)
    return any_cli


# --- helpers ------------------------------------------------------------------------------


def _create(cli: Cli, name: str, *extra: str) -> dict[str, Any]:
    """``webhook create acme --name NAME --channel ops --prompt PROMPT EXTRA --json``."""
    created = cli.json(
        "webhook",
        "create",
        "acme",
        "--name",
        name,
        "--channel",
        "ops",
        "--prompt",
        PROMPT,
        *extra,
        env=ALICE,
    )
    assert set(created) == WEBHOOK_KEYS | {"url"}
    return dict(created)


def _update(cli: Cli, ref: str, *options: str, input: str | None = None) -> dict[str, Any]:
    """``webhook update acme REF OPTIONS --json``, which must succeed."""
    updated = cli.json(
        "webhook", "update", "acme", ref, *options, env={**ALICE, **NAMED_HOSTS}, input=input
    )
    assert set(updated) == WEBHOOK_KEYS, "no URL: it is shown once, by create"
    return dict(updated)


def _connector(cli: Cli, name: str, kind: str, secret: str) -> None:
    """``connector add acme NAME --kind KIND`` with its secret from the environment."""
    cli.ok(
        *("connector", "add", "acme", name, "--kind", kind, "--secret-env", "S"),
        env={"S": secret, **NAMED_HOSTS},
    )


def _show(cli: Cli, ref: str) -> dict[str, Any]:
    return dict(cli.json("webhook", "show", "acme", ref))


def _audit(cli: Cli, action: str = "webhook.") -> list[dict[str, Any]]:
    """The audit entries whose action starts with ``action``, oldest first."""
    return list(cli.json("audit", "tail", "--action", action, "--lines", "100"))


def _updates(cli: Cli) -> list[dict[str, Any]]:
    """The ``webhook.update`` entries' details, less the webhook id (checked here)."""
    details = []
    for entry in _audit(cli, "webhook.update"):
        assert entry["actor"] == ACTOR
        assert entry["target"].startswith("acme/")
        detail = dict(entry["detail"])
        assert detail.pop("webhook_id").startswith("wh_")
        details.append(detail)
    return details


async def _stored(url: str, name: str) -> Webhook:
    async with open_store(url, pool_size=1) as store:
        workspace = await store.workspace_by_slug("acme")
        webhook = await store.find(Webhook, workspace_id=workspace.id, name=name)
        assert webhook is not None, name
        return webhook


def _allowed(cli: Cli, name: str) -> dict[str, str]:
    """The webhook's pre-authorizations as stored: tool name -> definition hash."""
    return dict(trio.run(_stored, cli.database, name).allowed_tools)


def _definition_hash(cli: Cli, tool: str) -> str:
    """A ``gh`` tool's definition hash, as ``connector show`` reports it."""
    shown = cli.json("connector", "show", "acme", "gh")
    hashes = {t["name"]: t["definition_hash"] for t in shown["tools"]}
    assert hashes[tool], hashes
    return str(hashes[tool])


# --- help ---------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["create", "update"])
def test_help(action: str, capsys: pytest.CaptureFixture[str]) -> None:
    """In-process: the options exist and say what they do."""
    with pytest.raises(SystemExit) as exited:
        main(["webhook", action, "--help"])
    assert exited.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"usage: agentws webhook {action}")
    assert "--allow-tool TOOL" in out
    assert "destructive" in out
    if action == "update":
        for option in ("--channel", "--prompt-file FILE", "--no-group", "--disallow-tool TOOL"):
            assert option in out
        assert "WEBHOOK" in out


# --- create --allow-tool --------------------------------------------------------------------


def test_create_pre_authorizes_write_tools_bound_to_their_definitions(acme_both: Cli) -> None:
    cli = acme_both
    created = _create(
        cli,
        "ci",
        "--group",
        "ops",
        "--allow-tool",
        "gh_create_issue",
        "--allow-tool",
        "desk_open_ticket",
        "--allow-tool",
        "gh_create_issue",  # twice is once
    )
    assert created["group"] == "ops"
    assert created["allowed_tools"] == ["desk_open_ticket", "gh_create_issue"]  # sorted
    assert _show(cli, "ci")["allowed_tools"] == ["desk_open_ticket", "gh_create_issue"]
    listed = cli.json("webhook", "list", "acme")
    assert [(w["name"], w["allowed_tools"]) for w in listed] == [
        ("ci", ["desk_open_ticket", "gh_create_issue"])
    ]
    # Each bound to the definition it has now.
    assert _allowed(cli, "ci") == {
        "desk_open_ticket": DESK_HASH,
        "gh_create_issue": _definition_hash(cli, "gh_create_issue"),
    }

    # Without --allow-tool: none, with a group or without.
    assert _create(cli, "plain", "--group", "ops")["allowed_tools"] == []
    assert _create(cli, "bare")["allowed_tools"] == []
    assert _allowed(cli, "plain") == {}

    created_entries = _audit(cli, "webhook.create")
    assert [(e["actor"], e["target"]) for e in created_entries] == [
        (ACTOR, "acme/ci"),
        (ACTOR, "acme/plain"),
        (ACTOR, "acme/bare"),
    ]
    assert [e["detail"]["allowed_tools"] for e in created_entries] == [
        ["desk_open_ticket", "gh_create_issue"],
        [],
        [],
    ]


def test_create_refuses_tools_that_cannot_be_pre_authorized(acme: Cli) -> None:
    cli = acme
    cases = [
        (["--allow-tool", "gh_create_issue"], "--allow-tool needs --group"),
        (["--group", "ops", "--allow-tool", "nope"], "group 'ops' has no tool 'nope'"),
        # dev has gh but not desk.
        (
            ["--group", "dev", "--allow-tool", "desk_open_ticket"],
            "group 'dev' has no tool 'desk_open_ticket'",
        ),
        (
            ["--group", "ops", "--allow-tool", "gh_delete_branch"],
            "gh_delete_branch is destructive: destructive tools can never be pre-authorized",
        ),
        (["--group", "ops", "--allow-tool", "gh_search_issues"], "gh_search_issues is a read tool"),
        (["--group", "ops", "--allow-tool", "get_approval"], "get_approval is a read tool"),
        # One bad tool among good ones refuses them all.
        (
            [
                "--group",
                "ops",
                "--allow-tool",
                "gh_create_issue",
                "--allow-tool",
                "gh_delete_branch",
            ],
            "can never be pre-authorized",
        ),
    ]
    base = ("webhook", "create", "acme", "--name", "ci", "--channel", "ops", "--prompt", PROMPT)
    for extra, message in cases:
        stderr = cli.fails(*base, *extra, env=ALICE)
        assert message in stderr, (extra, stderr)
    assert (
        "never be pre-authorized"
        in cli.fails_json(*base, "--group", "ops", "--allow-tool", "gh_delete_branch", env=ALICE)[
            "message"
        ]
    )

    # A label decides: the unlabeled (write) remote tool, labeled read, then destructive.
    cli.ok("tool", "label", "acme", "desk_open_ticket", "read", env=ALICE)
    assert "desk_open_ticket is a read tool" in cli.fails(
        *base, "--group", "ops", "--allow-tool", "desk_open_ticket"
    )
    cli.ok("tool", "label", "acme", "desk_open_ticket", "destructive", env=ALICE)
    assert "can never be pre-authorized" in cli.fails(
        *base, "--group", "ops", "--allow-tool", "desk_open_ticket"
    )

    assert cli.json("webhook", "list", "acme") == []
    assert _audit(cli) == []


# --- update: prompt and channel -------------------------------------------------------------


def test_update_changes_the_prompt_and_channel_and_audits_each_change(acme: Cli) -> None:
    cli = acme
    created = _create(cli, "ci", "--group", "ops", "--allow-tool", "gh_create_issue")

    updated = _update(cli, "ci", "--prompt", "Only failures, please.")
    assert updated["prompt"] == "Only failures, please."
    assert updated["updated_at"] > created["updated_at"]
    # Nothing else moved.
    unchanged = {k: v for k, v in created.items() if k not in ("url", "prompt", "updated_at")}
    assert {k: v for k, v in updated.items() if k not in ("prompt", "updated_at")} == unchanged

    prompt_file = cli.cwd / "prompt.md"
    prompt_file.write_text("From the file: say which branch.\n", encoding="utf-8")
    assert _update(cli, "ci", "--prompt-file", str(prompt_file))["prompt"] == (
        "From the file: say which branch.\n"
    )
    from_stdin = _update(cli, "ci", "--prompt-file", "-", input="From stdin.\n")
    assert from_stdin["prompt"] == "From stdin.\n"
    assert _show(cli, "ci")["prompt"] == "From stdin.\n"

    # By id as well as by name; a channel is normalised as at create.
    moved = _update(cli, created["id"], "--channel", "#alerts")
    assert moved["channel"] == "local:alerts"
    assert _show(cli, "ci")["channel"] == "local:alerts"

    text = cli.ok("webhook", "update", "acme", "ci", "--channel", "local:ops", env=ALICE)
    assert text.strip() == (
        f"Webhook 'ci' ({created['id']}) posts to local:ops with the tools of group ops.\n"
        "Write tools its runs use without approval: gh_create_issue."
    )

    details = _updates(cli)
    assert details == [
        {"changed": ["prompt"]},
        {"changed": ["prompt"]},
        {"changed": ["prompt"]},
        {"changed": ["channel"], "channel": "local:alerts"},
        {"changed": ["channel"], "channel": "local:ops"},
    ]
    # The prompt is not copied into the audit log.
    everything = json.dumps(_audit(cli))
    assert "Only failures" not in everything
    assert "From the file" not in everything


def test_update_to_a_slack_or_incoming_webhook_channel(acme: Cli) -> None:
    cli = acme
    _create(cli, "ci")
    assert "no active Slack connector" in cli.fails(
        "webhook", "update", "acme", "ci", "--channel", "slack:C0123456789"
    )
    assert "there is no connector 'alerts'" in cli.fails(
        "webhook", "update", "acme", "ci", "--channel", "webhook:alerts"
    )
    assert "connector 'gh' is a github connector, not incoming_webhook" in cli.fails(
        "webhook", "update", "acme", "ci", "--channel", "webhook:gh"
    )

    _connector(cli, "chat", "slack", SLACK_TOKEN)
    assert _update(cli, "ci", "--channel", "slack:C0123456789")["channel"] == "slack:C0123456789"
    _connector(cli, "alerts", "incoming_webhook", HOOK_URL)
    assert _update(cli, "ci", "--channel", "webhook:alerts")["channel"] == "webhook:alerts"

    # With two Slack connectors, the channel must name one.
    _connector(cli, "chat2", "slack", SLACK_TOKEN)
    several = cli.fails(
        "webhook", "update", "acme", "ci", "--channel", "slack:C0123456789", env=NAMED_HOSTS
    )
    assert "several Slack connectors (chat, chat2)" in several
    named = _update(cli, "ci", "--channel", "slack:chat2/C0123456789")
    assert named["channel"] == "slack:chat2/C0123456789"

    assert [d.get("channel") for d in _updates(cli)] == [
        "slack:C0123456789",
        "webhook:alerts",
        "slack:chat2/C0123456789",
    ]
    everything = json.dumps(_audit(cli, "")) + json.dumps(_show(cli, "ci"))
    assert SLACK_TOKEN not in everything
    assert "updatetestpathtoken" not in everything


# --- update: group and pre-authorized tools -------------------------------------------------


def test_pre_authorizations_are_added_withdrawn_and_dropped_with_the_group(
    acme_both: Cli,
) -> None:
    cli = acme_both
    assert _create(cli, "ci", "--group", "ops")["allowed_tools"] == []
    gh_hash = _definition_hash(cli, "gh_create_issue")

    assert _update(cli, "ci", "--allow-tool", "gh_create_issue")["allowed_tools"] == [
        "gh_create_issue"
    ]
    assert _update(cli, "ci", "--allow-tool", "desk_open_ticket")["allowed_tools"] == [
        "desk_open_ticket",
        "gh_create_issue",
    ]
    assert _allowed(cli, "ci") == {"desk_open_ticket": DESK_HASH, "gh_create_issue": gh_hash}
    assert _update(cli, "ci", "--disallow-tool", "gh_create_issue")["allowed_tools"] == [
        "desk_open_ticket"
    ]
    swapped = _update(
        cli, "ci", "--disallow-tool", "desk_open_ticket", "--allow-tool", "gh_create_issue"
    )
    assert swapped["allowed_tools"] == ["gh_create_issue"]

    # The same group again is no change: the pre-authorizations stay.
    same = _update(cli, "ci", "--group", "ops")
    assert (same["group"], same["allowed_tools"]) == ("ops", ["gh_create_issue"])

    # Another group drops them, even one that offers the same tool.
    moved = _update(cli, "ci", "--group", "dev")
    assert (moved["group"], moved["allowed_tools"]) == ("dev", [])
    assert _allowed(cli, "ci") == {}
    # ... unless they are named again.
    back = _update(cli, "ci", "--group", "ops", "--allow-tool", "gh_create_issue")
    assert (back["group"], back["allowed_tools"]) == ("ops", ["gh_create_issue"])
    assert _allowed(cli, "ci") == {"gh_create_issue": gh_hash}

    text = cli.ok("webhook", "update", "acme", "ci", "--no-group", env=ALICE)
    assert "posts to local:ops, with no tools." in text
    assert "Write tools its runs use without approval: none." in text
    shown = _show(cli, "ci")
    assert (shown["group"], shown["allowed_tools"]) == (None, [])
    assert _allowed(cli, "ci") == {}

    details = _updates(cli)
    assert [d["changed"] for d in details] == [
        ["allowed_tools"],
        ["allowed_tools"],
        ["allowed_tools"],
        ["allowed_tools"],
        ["allowed_tools", "group_id"],
        ["allowed_tools", "group_id"],
        ["allowed_tools", "group_id"],
    ]
    assert [d.get("allowed_tools") for d in details] == [
        ["gh_create_issue"],
        ["desk_open_ticket", "gh_create_issue"],
        ["desk_open_ticket"],
        ["gh_create_issue"],
        [],
        ["gh_create_issue"],
        [],
    ]
    assert details[-1]["group_id"] is None


def test_mass_mentions_are_allowed_and_made_inert_again_by_update(acme: Cli) -> None:
    cli = acme
    assert _create(cli, "ci")["allow_mentions"] is False
    assert _create(cli, "loud", "--allow-mentions")["allow_mentions"] is True
    assert _update(cli, "ci", "--allow-mentions")["allow_mentions"] is True
    assert _update(cli, "ci", "--prompt", "Other.")["allow_mentions"] is True  # left as it is
    assert _update(cli, "ci", "--no-allow-mentions")["allow_mentions"] is False
    changes = [(u["changed"], u.get("allow_mentions")) for u in _updates(cli)]
    assert changes == [(["allow_mentions"], True), (["prompt"], None), (["allow_mentions"], False)]


def test_an_update_that_changes_nothing_is_not_audited(acme: Cli) -> None:
    cli = acme
    _create(cli, "ci", "--group", "ops", "--allow-tool", "gh_create_issue")
    _create(cli, "bare")
    before = {name: _show(cli, name) for name in ("ci", "bare")}

    shown_only = ("recent_events", "failure_streak", "rotation")
    assert _update(cli, "ci") == {k: v for k, v in before["ci"].items() if k not in shown_only}
    _update(cli, "ci", "--group", "ops")
    _update(cli, "ci", "--allow-tool", "gh_create_issue")  # already, in this definition
    _update(cli, "bare", "--no-group")

    assert {name: _show(cli, name) for name in ("ci", "bare")} == before
    assert _updates(cli) == []


def test_refused_updates_say_why_and_change_nothing(acme: Cli) -> None:
    cli = acme
    _create(cli, "ci", "--group", "ops", "--allow-tool", "gh_create_issue")
    _create(cli, "bare")
    before = {name: _show(cli, name) for name in ("ci", "bare")}
    long_prompt = cli.cwd / "long.txt"
    long_prompt.write_text("x" * 20_001, encoding="utf-8")

    cases = [
        (["ci", "--disallow-tool", "desk_open_ticket"], "desk_open_ticket is not pre-authorized"),
        (["ci", "--disallow-tool", "gh_delete_branch"], "gh_delete_branch is not pre-authorized"),
        (["ci", "--allow-tool", "gh_delete_branch"], "can never be pre-authorized"),
        (["ci", "--allow-tool", "gh_search_issues"], "gh_search_issues is a read tool"),
        (["ci", "--allow-tool", "nope"], "group 'ops' has no tool 'nope'"),
        (
            ["ci", "--group", "dev", "--allow-tool", "desk_open_ticket"],
            "group 'dev' has no tool 'desk_open_ticket'",
        ),
        (["ci", "--no-group", "--allow-tool", "gh_create_issue"], "--allow-tool needs --group"),
        (["bare", "--allow-tool", "gh_create_issue"], "--allow-tool needs --group"),
        (["ci", "--group", "nope"], "no group 'nope' in workspace 'acme'"),
        (["ci", "--prompt", "   "], "the prompt is empty"),
        (["ci", "--prompt-file", str(cli.cwd / "missing.txt")], "cannot read --prompt-file"),
        (["ci", "--prompt-file", str(long_prompt)], "longer than 20000 characters"),
        (["ci", "--channel", "slack:C0123456789"], "no active Slack connector"),
        (["ci", "--channel", "webhook:alerts"], "there is no connector 'alerts'"),
        (["ci", "--channel", "Bad Name!"], "invalid local channel name"),
        (["ci", "--channel", "teams:x"], "unknown chat sink 'teams'"),
        (["nope", "--prompt", "x"], "no webhook 'nope' in workspace 'acme'"),
        # A refused part refuses the whole update.
        (["ci", "--prompt", "new", "--channel", "slack:C0123456789"], "no active Slack"),
        (["ci", "--prompt", "new", "--allow-tool", "gh_delete_branch"], "pre-authorized"),
        (["ci", "--disallow-tool", "gh_create_issue", "--allow-tool", "nope"], "no tool 'nope'"),
    ]
    for args, message in cases:
        stderr = cli.fails("webhook", "update", "acme", *args, env=ALICE)
        assert message in stderr, (args, stderr)
    assert "no workspace 'nope'" in cli.fails("webhook", "update", "nope", "ci", "--prompt", "x")
    error = cli.fails_json("webhook", "update", "acme", "ci", "--allow-tool", "gh_search_issues")
    assert "read tool" in error["message"]

    # Options that exclude each other are usage errors (status 2).
    for args in (
        ["--prompt", "x", "--prompt-file", "f"],
        ["--group", "ops", "--no-group"],
    ):
        result = cli.run("webhook", "update", "acme", "ci", *args)
        assert result.returncode == 2, result.stderr
        assert "not allowed with argument" in result.stderr
        assert result.stdout == ""

    assert {name: _show(cli, name) for name in ("ci", "bare")} == before
    assert _updates(cli) == []
