"""``agentws admin``: admins, and admin API tokens shown once and kept hashed."""

from __future__ import annotations

import hashlib

from tests.cli.conftest import Cli


def test_admins_and_their_api_tokens(cli: Cli) -> None:
    cli.ok("init")
    created = cli.json("admin", "create", "bob", "--password-stdin", input="a-long-password-1\n")
    assert created["username"] == "bob" and "password" not in created
    generated = cli.json("admin", "create", "carol")
    assert len(generated["password"]) >= 20
    assert [a["username"] for a in cli.json("admin", "list")] == ["admin", "bob", "carol"]
    short = cli.fails("admin", "create", "dave", "--password-stdin", input="short\n")
    assert "at least 12 characters" in short

    token = cli.json("admin", "token", "create", "bob", "--name", "deploy")
    assert token["token"].startswith("agwa_") and token["admin"] == "bob"
    text = cli.ok("admin", "token", "create", "bob", "--name", "other")
    assert "shown once" in text and "/api/v1/workspaces" in text
    stored = b"".join(p.read_bytes() for p in cli.cwd.glob("a.db*"))
    assert token["token"].encode() not in stored  # only its SHA-256 is kept
    assert hashlib.sha256(token["token"].encode()).hexdigest().encode() in stored
    listed = cli.json("admin", "token", "list")
    assert [(t["name"], t["revoked"]) for t in listed] == [("deploy", False), ("other", False)]
    assert token["token"] not in str(listed)
    assert "already has a token named 'deploy'" in cli.fails(
        "admin", "token", "create", "bob", "--name", "deploy"
    )
    assert "no admin 'zed'" in cli.fails("admin", "token", "create", "zed", "--name", "x")

    revoked = cli.json("admin", "token", "revoke", token["id"])
    assert revoked["revoked"] is True and revoked["revoked_at"]
    assert "no admin token 'atk_nope'" in cli.fails("admin", "token", "revoke", "atk_nope")


def test_deleting_admins_never_the_last(cli: Cli) -> None:
    cli.ok("init")
    cli.json("admin", "create", "bob")
    cli.json("admin", "token", "create", "bob", "--name", "deploy")
    deleted = cli.json("admin", "delete", "bob")
    assert deleted == {"id": deleted["id"], "username": "bob", "deleted": True}
    assert [a["username"] for a in cli.json("admin", "list")] == ["admin"]
    assert cli.json("admin", "token", "list") == []  # its tokens went with it
    assert "only admin" in cli.fails("admin", "delete", "admin")
    assert "no admin 'bob'" in cli.fails("admin", "delete", "bob")
    actions = [e["action"] for e in cli.json("audit", "tail", "--action", "admin.")]
    assert "admin.delete" in actions
