"""What the dashboard changes, from the command line too: renames, a document's policy,
a connector turned off and on.

``agentws workspace|group|library rename``, ``agentws doc policy`` and
``agentws connector activate|deactivate`` call the service functions the
dashboard calls, so each is audited alike (``workspace.rename``,
``group.rename``, ``library.rename``, ``document.policy``,
``connector.deactivate``, ``connector.activate``), and a change to what is
already so records nothing. The stories run on both stores.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentws.cli import main
from tests.cli.conftest import NATIVE_HOSTS, Cli

HELP_COMMANDS = [
    ["workspace", "rename"],
    ["group", "rename"],
    ["library", "rename"],
    ["doc", "policy"],
    ["connector", "activate"],
    ["connector", "deactivate"],
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=" ".join)
def test_help_says_what_stays(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"usage: {' '.join(['agentws', *command])}")
    assert "--database URL" in out and "--json" in out
    said = {
        "rename": "Audited",
        "policy": "spine, on_demand, never",
        "activate": "A no-op if it is active",
        "deactivate": "its settings, secret, cached tools and attachments are kept",
    }
    assert said[command[1]] in out


def _audit(cli: Cli, prefix: str) -> list[dict[str, Any]]:
    entries = cli.json("audit", "tail", "--action", prefix, "-n", "50")
    return sorted(entries, key=lambda e: e["at"])


def test_workspace_and_group_renames_keep_their_slugs(any_cli: Cli) -> None:
    cli = any_cli
    cli.ok("workspace", "create", "acme")
    created = cli.json("group", "create", "acme", "ops")

    renamed = cli.json("workspace", "rename", "acme", "--name", "Acme Inc")
    assert (renamed["slug"], renamed["name"]) == ("acme", "Acme Inc")
    text = cli.ok("workspace", "rename", "acme", "--name", "  Acme Inc  ")
    assert text.strip() == "Workspace 'acme' is named 'Acme Inc'; its slug, and so its URLs, stay."
    assert [w["name"] for w in cli.json("workspace", "list")] == ["Acme Inc"]

    group = cli.json("group", "rename", "acme", "ops", "--name", "Operations")
    assert (group["slug"], group["name"], group["url"]) == ("ops", "Operations", created["url"])
    text = cli.ok("group", "rename", "acme", "ops", "--name", "Operations")
    said = "Group acme/ops is named 'Operations'; its slug, and so its endpoint URL, stay: "
    assert said + created["url"] in text

    # Audited once each: the second rename, to the name it had, recorded nothing.
    renames = [(e["action"], e["target"], e["detail"]) for e in _audit(cli, "")]
    renames = [r for r in renames if r[0].endswith(".rename")]
    assert renames == [
        ("workspace.rename", "acme", {"was": "acme", "name": "Acme Inc"}),
        ("group.rename", "acme/ops", {"was": "ops", "name": "Operations"}),
    ]


def test_library_rename_and_document_policy(any_cli: Cli) -> None:
    cli = any_cli
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")
    cli.ok("library", "create", "acme", "handbook")
    cli.ok("library", "attach", "acme", "ops", "handbook")
    cli.ok("doc", "add", "acme", "handbook", "-", "--title", "Refunds", "--policy", "on_demand",
           input="# Refunds\nWithin 30 days.\n")  # fmt: skip

    library = cli.json("library", "rename", "acme", "handbook", "--name", "The Handbook")
    assert (library["slug"], library["name"], library["groups"]) == (
        "handbook",
        "The Handbook",
        ["ops"],
    )
    assert "Library acme/handbook is named 'The Handbook'" in cli.ok(
        "library", "rename", "acme", "handbook", "--name", "The Handbook"
    )

    document = cli.json("doc", "policy", "acme", "handbook", "refunds", "spine")
    assert (document["slug"], document["policy"]) == ("refunds", "spine")
    assert cli.ok("doc", "policy", "acme", "handbook", "refunds", "never").strip() == (
        "Document acme/handbook/refunds has policy never: kept, but never shown to the agent "
        "or MCP clients."
    )
    cli.ok("doc", "policy", "acme", "handbook", "refunds", "never")  # already: nothing recorded
    listed = cli.json("doc", "list", "acme", "handbook")
    assert [(d["slug"], d["policy"]) for d in listed] == [("refunds", "never")]

    entries = [(e["action"], e["target"], e["detail"]) for e in _audit(cli, "")]
    assert [e for e in entries if e[0] == "library.rename"] == [
        ("library.rename", "acme/handbook", {"was": "handbook", "name": "The Handbook"})
    ]
    policies = [(e[1], e[2]["was"], e[2]["policy"]) for e in entries if e[0] == "document.policy"]
    assert policies == [
        ("acme/handbook/refunds", "on_demand", "spine"),
        ("acme/handbook/refunds", "spine", "never"),
    ]


def test_connector_deactivate_and_activate(any_cli: Cli) -> None:
    cli = any_cli
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")
    cli.ok("connector", "add", "acme", "gh", "--kind", "github", env=NATIVE_HOSTS)
    cli.ok("connector", "attach", "acme", "ops", "gh")
    offered = {t["name"] for t in cli.json("tool", "list", "acme", "ops")}
    assert any(name.startswith("gh_") for name in offered)

    off = cli.json("connector", "deactivate", "acme", "gh")
    assert (off["name"], off["active"], off["secret"]) == ("gh", False, None)
    assert not any(t["name"].startswith("gh_") for t in cli.json("tool", "list", "acme", "ops"))
    text = cli.ok("connector", "deactivate", "acme", "gh")
    assert text.startswith("Connector 'gh' is inactive: no group lists its tools")
    assert "agentws connector activate acme gh" in text
    (listed,) = cli.json("connector", "list", "acme")
    assert listed["active"] is False
    assert cli.json("connector", "show", "acme", "gh")["groups"] == ["ops"]  # kept

    on = cli.ok("connector", "activate", "acme", "gh")
    assert on.strip() == "Connector 'gh' is active: the groups it is attached to list its tools."
    assert {t["name"] for t in cli.json("tool", "list", "acme", "ops")} == offered

    entries = [(e["action"], e["target"]) for e in _audit(cli, "connector.")]
    toggles = [e for e in entries if e[0] in ("connector.activate", "connector.deactivate")]
    assert toggles == [("connector.deactivate", "acme/gh"), ("connector.activate", "acme/gh")]


def test_changes_name_what_is_wrong(cli: Cli) -> None:
    cli.ok("workspace", "create", "acme")
    cli.ok("library", "create", "acme", "handbook")
    assert "workspace 'nope'" in cli.fails("workspace", "rename", "nope", "--name", "X")
    assert "workspace name must be 1 to" in cli.fails("workspace", "rename", "acme", "--name", " ")
    assert "group 'nope'" in cli.fails("group", "rename", "acme", "nope", "--name", "X")
    assert "library 'nope'" in cli.fails("library", "rename", "acme", "nope", "--name", "X")
    error = cli.fails_json("doc", "policy", "acme", "handbook", "nope", "spine")
    assert error == {"code": "not_found", "message": "no document 'nope' in library 'handbook'"}
    assert "no connector 'gh' in workspace 'acme'" in cli.fails(
        "connector", "deactivate", "acme", "gh"
    )
    # A policy that is not one is the command line's mistake: usage, status 2.
    wrong = cli.run("doc", "policy", "acme", "handbook", "x", "always")
    assert wrong.returncode == 2
    assert "invalid choice: 'always'" in wrong.stderr
    missing = cli.run("workspace", "rename", "acme")
    assert missing.returncode == 2
    assert "the following arguments are required: --name" in missing.stderr
