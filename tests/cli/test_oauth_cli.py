"""``agentws oauth client``: register, list and remove OAuth clients by hand, on both stores."""

from __future__ import annotations

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
