"""``agentws oauth client``: register, list and remove OAuth clients by hand, on both stores."""

from __future__ import annotations

import json

import pytest
import trio

from agentws.cli.output import print_error
from agentws.core.errors import UpstreamError
from agentws.domain.models import Group, McpToken
from agentws.domain.oauth_records import ClientKind, OAuthClient
from agentws.store import open_store
from tests.cli.conftest import Cli

LOOPBACK = "http://127.0.0.1:53682/callback"


def test_clients_are_registered_listed_and_removed(any_cli: Cli) -> None:
    public = any_cli.json(
        "oauth", "client", "add", "--name", "Team VS Code", "--redirect-uri", LOOPBACK
    )
    assert public["client_id"].startswith("agwoi_")
    assert (public["kind"], public["confidential"]) == ("operator", False)
    assert public["redirect_uris"] == [LOOPBACK]
    assert "client_secret" not in public

    text = any_cli.ok(
        "oauth",
        "client",
        "add",
        "--name",
        "CI bot",
        "--redirect-uri",
        "https://ci.example/oauth/cb",
        "--confidential",
        env={"AGENTWS_SECRET_KEY": "x" * 43 + "="},
    )
    assert "Secret:" in text and "cannot be shown again" in text

    listed = any_cli.json("oauth", "client", "list")
    assert [(c["name"], c["confidential"]) for c in listed] == [
        ("Team VS Code", False),
        ("CI bot", True),
    ]
    assert all("client_secret" not in c for c in listed)

    removed = any_cli.json("oauth", "client", "remove", public["client_id"])
    assert removed["client_id"] == public["client_id"]
    assert [c["name"] for c in any_cli.json("oauth", "client", "list")] == ["CI bot"]
    assert "no OAuth client" in any_cli.fails("oauth", "client", "remove", public["client_id"])


def test_a_plain_http_redirect_uri_is_for_loopback_only(cli: Cli) -> None:
    error = cli.fails(
        "oauth", "client", "add", "--name", "x", "--redirect-uri", "http://app.example/cb"
    )
    assert "not loopback" in error
    assert "fragment" in cli.fails(
        "oauth", "client", "add", "--name", "x", "--redirect-uri", "https://a.example/cb#f"
    )
    assert "scheme javascript:" in cli.fails(
        "oauth", "client", "add", "--name", "x", "--redirect-uri", "javascript:alert(1)//"
    )


# A self-registered name that would retitle the terminal, turn it red, and reorder the rest.
EVIL = "Good\x1b]0;owned\x07\x1b[31m client\u202etxt.exe\x9b2J\r"


def test_names_from_outside_reach_the_terminal_escaped(cli: Cli) -> None:
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")

    async def register() -> None:
        # As dynamic registration stores it (no CLI or form in between).
        async with open_store(cli.database, pool_size=1) as store:
            group = await store.find(Group, slug="ops")
            assert group is not None
            client = OAuthClient(client_id="dyn-1", kind=ClientKind.DYNAMIC, name=EVIL, metadata={})
            await store.insert(client)
            await store.insert(
                McpToken(group_id=group.id, name=EVIL, token_hash="0" * 64, hint="abcd")
            )

    trio.run(register)
    for command in (("oauth", "client", "list"), ("token", "list", "acme", "ops")):
        text = cli.ok(*command)
        # Nothing a terminal acts on, nothing that reorders: each shown as its escape.
        assert not any(c in text for c in "\x1b\x07\x9b\r\u202e"), repr(text)
        assert "Good\\u001b]0;owned\\u0007\\u001b[31m client\\u202etxt.exe\\u009b2J" in text
        # --json stays exact (and JSON escapes them itself).
        listed = cli.json(*command)
        assert listed[0]["name"] == EVIL
        assert "\x1b" not in cli.ok(*command, "--json")
    assert json.loads(cli.run("token", "list", "acme", "ops", "--json").stdout)[0]["name"] == EVIL


def test_an_error_quoting_outside_text_reaches_the_terminal_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # An upstream's answer, a stored error: what an error message may quote.
    assert print_error(UpstreamError(f"the remote said: {EVIL}"), as_json=False) == 1
    shown = capsys.readouterr().err
    assert shown.startswith("agentws: error: the remote said: Good\\u001b]0;owned")
    assert not any(c in shown for c in "\x1b\x07\x9b\r\u202e")
    print_error(UpstreamError(EVIL), as_json=True)
    assert json.loads(capsys.readouterr().err)["error"]["message"] == EVIL
