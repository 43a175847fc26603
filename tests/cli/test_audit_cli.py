"""``agentws audit tail`` with the audit viewer's filters, as processes."""

from __future__ import annotations

from tests.cli.conftest import Cli


def test_audit_tail_takes_the_filters(cli: Cli) -> None:
    cli.ok("init")
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")
    cli.ok("workspace", "create", "beta")
    acme = cli.json("audit", "tail", "--workspace", "acme")
    assert [e["action"] for e in acme] == ["workspace.create", "group.create"]
    assert set(acme[0]) == {"id", "at", "workspace_id", "actor", "action", "target", "detail"}
    newest = cli.json("audit", "tail", "-n", "1")
    assert [e["target"] for e in newest] == ["beta"]
    assert cli.json("audit", "tail", "--until", "1h") == []
    assert len(cli.json("audit", "tail", "--since", "1h", "--action", "workspace.")) == 2
    assert cli.json("audit", "tail", "--decision", "deny") == []
    assert cli.json("audit", "tail", "--workspace", "acme", "--group", "ops", "--token", "x") == []
    assert "give the workspace too" in cli.fails("audit", "tail", "--group", "ops")
    someday = cli.run("audit", "tail", "--since", "someday")
    assert someday.returncode == 2 and "argument --since: expected an ISO" in someday.stderr
    assert "--follow takes --workspace and --action only" in cli.fails(
        "audit", "tail", "--follow", "--tool", "x"
    )
