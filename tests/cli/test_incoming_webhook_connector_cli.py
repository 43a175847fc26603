"""``agentws connector add --kind incoming_webhook``: a chat's incoming-webhook URL as a secret.

Whoever has a Slack, Mattermost or Discord incoming-webhook URL can post to
the channel, so the URL *is* the credential: it comes from ``--secret-env``
or ``--secret-stdin`` only, is sealed at rest, and nothing shows more of it
than its origin (``scheme://host[:port]``): not the listings, not the
database file, not the errors of a URL the outbound guard refuses. Such a
connector has no tools to attach; webhooks post to it with the channel
``webhook:NAME``. ``connector test`` is run against a local HTTP server
(allowed by ``AGENTWS_CONNECTOR_ALLOWLIST``) to check it GETs the sealed
URL and posts nothing.
"""

from __future__ import annotations

import http.server
import shlex
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import trio

from agentws.domain.models import Connector
from agentws.settings.config import Settings
from agentws.settings.secret_box import SecretBox
from agentws.store import open_store
from tests.cli.conftest import Cli

ALICE = {"LOGNAME": "alice"}
ACTOR = "cli:alice"
# The path of an incoming-webhook URL is what opens it.
TOKEN = "Zq8TopSecretHookPathToken0123"
HOOK_PATH = f"/services/T0ACME0001/B0ACME0002/{TOKEN}"
HOOK_URL = f"https://hooks.slack.com{HOOK_PATH}"
OTHER_TOKEN = "Mm4AnotherSecretHookToken987"
OTHER_URL = f"https://chat.example.com:8443/hooks/{OTHER_TOKEN}"
# Their hosts (and GitHub's), allow-listed: saving a URL with a named host asks no DNS
# (no test may). What is refused without an allowlist is tested with addresses.
NAMED = {"AGENTWS_CONNECTOR_ALLOWLIST": "hooks.slack.com,chat.example.com,api.github.com"}
# What `connector list/show --json` say of a connector.
CONNECTOR_KEYS = {"id", "workspace", "name", "kind", "url", "headers", "secret", "active"}
CONNECTOR_KEYS |= {"relay_requests", "protocol", "auth", "created_at"}


def _set_up(cli: Cli) -> None:
    cli.ok("init")
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")


@pytest.fixture
def acme(cli: Cli) -> Cli:
    _set_up(cli)
    return cli


@pytest.fixture
def acme_both(any_cli: Cli) -> Cli:
    """Set up on SQLite, then on a fresh PostgreSQL schema."""
    _set_up(any_cli)
    return any_cli


def _add(cli: Cli, name: str, url: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    """``connector add acme NAME --kind incoming_webhook --secret-env HOOK --json``."""
    return cli.json(
        "connector",
        "add",
        "acme",
        name,
        "--kind",
        "incoming_webhook",
        "--secret-env",
        "HOOK",
        *extra,
        env={**ALICE, "HOOK": url, **NAMED, **(env or {})},
    )


def _database_bytes(cli: Cli) -> bytes:
    """The SQLite database as stored: the file and any write-ahead log beside it."""
    files = sorted(cli.cwd.glob("a.db*"))
    assert files, list(cli.cwd.iterdir())
    return b"".join(path.read_bytes() for path in files)


async def _sealed_url(cli: Cli, name: str) -> str:
    """The connector's secret, opened with the key ``agentws init`` made."""
    async with open_store(cli.database, pool_size=1) as store:
        workspace = await store.workspace_by_slug("acme")
        connector = await store.find(Connector, workspace_id=workspace.id, name=name)
        assert connector is not None, name
        assert connector.secret is not None
        return SecretBox.from_settings(Settings(data_dir=cli.cwd)).open(connector.secret)


# --- adding, listing, showing ---------------------------------------------------------------


def test_the_url_is_kept_sealed_and_only_its_origin_is_shown(acme_both: Cli) -> None:
    cli = acme_both
    outputs: list[str] = []

    added = _add(cli, "alerts", HOOK_URL)
    outputs.append(str(added))
    assert set(added) == CONNECTOR_KEYS
    assert added["kind"] == "incoming_webhook"
    assert added["url"] == "https://hooks.slack.com"
    assert added["headers"] == {}
    assert added["active"] is True

    # From stdin too, surrounding blanks dropped; the origin keeps a port.
    result = cli.run(
        "connector",
        "add",
        "acme",
        "team_chat",
        "--kind",
        "incoming_webhook",
        "--secret-stdin",
        input=f"  {OTHER_URL}  \n",
        env={**ALICE, **NAMED},
    )
    assert result.returncode == 0, result.stderr
    outputs += [result.stdout, result.stderr]
    assert "at https://chat.example.com:8443." in result.stdout
    assert "--channel webhook:team_chat" in result.stdout
    assert "connector attach" not in result.stdout  # it has no tools to attach

    listed = cli.json("connector", "list", "acme")
    outputs += [str(listed), cli.ok("connector", "list", "acme")]
    assert [(c["name"], c["kind"], c["url"], c["headers"]) for c in listed] == [
        ("alerts", "incoming_webhook", "https://hooks.slack.com", {}),
        ("team_chat", "incoming_webhook", "https://chat.example.com:8443", {}),
    ]
    shown = cli.json("connector", "show", "acme", "alerts")
    outputs += [str(shown), cli.ok("connector", "show", "acme", "alerts")]
    assert shown["url"] == "https://hooks.slack.com"
    assert (shown["groups"], shown["tools"]) == ([], [])
    outputs.append(str(cli.json("audit", "tail")))

    for text in outputs:
        assert TOKEN not in text
        assert OTHER_TOKEN not in text
        assert "/services/" not in text
        assert "/hooks/" not in text
    # The whole URL is kept, sealed: it opens to what was given (blanks dropped).
    assert trio.run(_sealed_url, cli, "alerts") == HOOK_URL
    assert trio.run(_sealed_url, cli, "team_chat") == OTHER_URL
    if cli.database.startswith("sqlite"):
        stored = _database_bytes(cli)
        assert b"hooks.slack.com" in stored  # the scan does see the connector rows
        for secret in (TOKEN, OTHER_TOKEN, "/services/T0ACME0001"):
            assert secret.encode() not in stored, secret


def test_listings_say_the_connector_has_a_secret(acme: Cli) -> None:
    _add(acme, "alerts", HOOK_URL)
    assert acme.json("connector", "show", "acme", "alerts")["secret"] is not None
    assert "secret:   none" not in acme.ok("connector", "show", "acme", "alerts")


def test_refused_urls_are_named_by_their_origin_only(acme: Cli) -> None:
    cli = acme
    base = ("connector", "add", "acme", "alerts", "--kind", "incoming_webhook")
    cases: list[tuple[list[str], dict[str, str], str]] = [
        # The URL is the secret: never on the command line, never as a header.
        (["--url", HOOK_URL], {}, "URL is its secret"),
        (["--url", HOOK_URL, "--secret-env", "HOOK"], {"HOOK": HOOK_URL}, "not --url or --header"),
        (["--header", "X-Team: ops", "--secret-env", "HOOK"], {"HOOK": HOOK_URL}, "--header"),
        ([], {}, "needs its URL: --secret-env VAR or --secret-stdin"),
        (["--secret-env", "HOOK"], {"HOOK": ""}, "HOOK is not set or empty"),
        (["--secret-env", "HOOK"], {"HOOK": "   "}, "needs its URL"),
        # Not http(s), credentials in it, not a URL: only the origin is named.
        (
            ["--secret-env", "HOOK"],
            {"HOOK": f"ftp://hooks.slack.com{HOOK_PATH}"},
            "the URL at ftp://hooks.slack.com may not be used",
        ),
        (
            ["--secret-env", "HOOK"],
            {"HOOK": f"https://bot:{OTHER_TOKEN}@hooks.slack.com{HOOK_PATH}"},
            "the URL at https://hooks.slack.com may not be used",
        ),
        (
            ["--secret-env", "HOOK"],
            {"HOOK": f"hooks.slack.com{HOOK_PATH}"},
            "the URL at (not a URL) may not be used",
        ),
        # A host the allowlist does not name.
        (
            ["--secret-env", "HOOK"],
            {"HOOK": HOOK_URL, "AGENTWS_CONNECTOR_ALLOWLIST": "*.corp.example"},
            "the URL at https://hooks.slack.com may not be used",
        ),
    ]
    for extra, env, message in cases:
        stderr = cli.fails(*base, *extra, env=env)
        assert message in stderr, (extra, stderr)
        assert TOKEN not in stderr
        assert OTHER_TOKEN not in stderr
        assert "/services/" not in stderr
    allowlisted = cli.fails(
        *base,
        "--secret-env",
        "HOOK",
        # A port, a query and a fragment: the port is shown, the rest is not.
        env={
            "HOOK": f"https://hooks.slack.com:8443{HOOK_PATH}?t={OTHER_TOKEN}#x",
            "AGENTWS_CONNECTOR_ALLOWLIST": "10.0.0.0/8",
        },
    )
    assert "the URL at https://hooks.slack.com:8443 may not be used" in allowlisted
    assert "AGENTWS_CONNECTOR_ALLOWLIST" in allowlisted
    assert TOKEN not in allowlisted
    assert OTHER_TOKEN not in allowlisted
    error = cli.fails_json(
        *base, "--secret-env", "HOOK", env={"HOOK": f"ftp://hooks.slack.com{HOOK_PATH}"}
    )
    assert error["message"].startswith("the URL at ftp://hooks.slack.com may not be used")
    assert TOKEN not in str(error)
    assert cli.json("connector", "list", "acme") == []

    # The allowlist naming the host lets it in.
    added = _add(cli, "alerts", HOOK_URL, env={"AGENTWS_CONNECTOR_ALLOWLIST": "*.slack.com"})
    assert added["url"] == "https://hooks.slack.com"
    assert "already exists" in cli.fails(
        *base, "--secret-env", "HOOK", env={"HOOK": OTHER_URL, **NAMED}
    )


def test_a_url_to_a_non_public_address_is_refused_when_saved(acme: Cli) -> None:
    cli = acme
    for origin in ("http://169.254.169.254", "http://10.0.0.5:8080", "http://localhost:9"):
        stderr = cli.fails(
            *("connector", "add", "acme", "alerts", "--kind", "incoming_webhook"),
            *("--secret-env", "HOOK"),
            env={"HOOK": f"{origin}{HOOK_PATH}"},
        )
        assert f"the URL at {origin} may not be used" in stderr, stderr
        assert "not a public address" in stderr
        assert "AGENTWS_CONNECTOR_ALLOWLIST" in stderr
        assert TOKEN not in stderr
        assert "/services/" not in stderr
    assert cli.json("connector", "list", "acme") == []
    allowed = _add(
        cli,
        "alerts",
        f"http://10.0.0.5:8080{HOOK_PATH}",
        env={"AGENTWS_CONNECTOR_ALLOWLIST": "10.0.0.0/8"},
    )
    assert allowed["url"] == "http://10.0.0.5:8080"


def test_it_has_no_tools_to_attach(acme: Cli) -> None:
    cli = acme
    _add(cli, "alerts", HOOK_URL)
    tools_before = cli.json("tool", "list", "acme", "ops")
    for action in ("attach", "detach"):
        stderr = cli.fails("connector", action, "acme", "ops", "alerts")
        assert "'alerts' is an incoming webhook: it has no tools" in stderr
        assert "--channel webhook:alerts" in stderr
    assert TOKEN not in cli.fails("connector", "refresh", "acme", "alerts")
    assert cli.json("tool", "list", "acme", "ops") == tools_before
    assert cli.json("connector", "show", "acme", "alerts")["groups"] == []

    removed = cli.run("connector", "remove", "acme", "alerts", env=ALICE)
    assert removed.returncode == 0, removed.stderr
    assert TOKEN not in removed.stdout
    assert cli.json("connector", "list", "acme") == []


# --- webhooks post to it --------------------------------------------------------------------


def test_webhooks_post_to_it_by_name(acme_both: Cli) -> None:
    cli = acme_both
    create = ("webhook", "create", "acme", "--prompt", "Say what happened.")
    missing = cli.fails(*create, "--name", "ci", "--channel", "webhook:alerts")
    assert "channel webhook:alerts: there is no connector 'alerts'" in missing
    assert "--kind incoming_webhook" in missing

    _add(cli, "alerts", HOOK_URL)
    created = cli.json(
        *create, "--name", "ci", "--channel", "webhook:alerts", env={**ALICE, **NAMED}
    )
    assert created["channel"] == "webhook:alerts"
    assert TOKEN not in str(created)
    assert cli.json("webhook", "show", "acme", "ci")["channel"] == "webhook:alerts"
    assert cli.json("webhook", "list", "acme")[0]["channel"] == "webhook:alerts"

    # A connector of another kind is not a channel.
    cli.ok("connector", "add", "acme", "gh", "--kind", "github", env=NAMED)
    other = cli.fails(*create, "--name", "cd", "--channel", "webhook:gh")
    assert "connector 'gh' is a github connector, not incoming_webhook" in other

    # An existing webhook moves to it with update.
    cli.json(*create, "--name", "cd", "--channel", "ops", env=ALICE)
    moved = cli.json(
        "webhook", "update", "acme", "cd", "--channel", "webhook:alerts", env={**ALICE, **NAMED}
    )
    assert moved["channel"] == "webhook:alerts"

    # Once the connector is gone, it can be chosen no more.
    cli.ok("connector", "remove", "acme", "alerts", env=ALICE)
    gone = cli.fails(*create, "--name", "cd2", "--channel", "webhook:alerts")
    assert "there is no connector 'alerts'" in gone
    assert [w["name"] for w in cli.json("webhook", "list", "acme")] == ["ci", "cd"]


# Loopback, so that saving checks no public name (the allowlist lets it through).
LOOPBACK_HOOK = f"http://127.0.0.1:9{HOOK_PATH}"
LOOPBACK = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}


def _printed_command(text: str, starts: str) -> list[str]:
    """The words of the command printed in ``text``, from ``starts`` to the end of its line."""
    lines = [line[line.index(starts) :] for line in text.splitlines() if starts in line]
    assert len(lines) == 1, text
    words = shlex.split(lines[0])
    assert words[0] == "agentws", lines[0]
    return words[1:]


def test_the_hint_connector_add_prints_creates_a_webhook_as_printed(acme: Cli) -> None:
    env = {**ALICE, **LOOPBACK, "HOOK": LOOPBACK_HOOK, "BOT": "xoxb-1-2-test"}
    added = acme.ok(
        *("connector", "add", "acme", "alerts", "--kind", "incoming_webhook"),
        *("--secret-env", "HOOK"),
        env=env,
    )
    command = _printed_command(added, "agentws webhook create")
    assert acme.json(*command, env=env)["channel"] == "webhook:alerts"

    added = acme.ok(
        *("connector", "add", "acme", "chat", "--kind", "slack", "--secret-env", "BOT"),
        *("--url", "http://127.0.0.1:9/api"),
        env=env,
    )
    command = _printed_command(added, "agentws webhook create")
    created = acme.json(*command, env=env)
    assert created["channel"].startswith("slack:chat/C")
    names = [w["name"] for w in acme.json("webhook", "list", "acme")]
    assert len(names) == 2 and all(names), names


def test_a_webhook_channel_is_refused_when_its_url_is_not_public(acme: Cli) -> None:
    """Saving a channel checks its connector's URL as saving the connector did: one
    saved while the allowlist named its private address cannot be chosen once it
    no longer does (create and update)."""
    cli = acme
    private = {"AGENTWS_CONNECTOR_ALLOWLIST": "10.0.0.0/8"}
    _add(cli, "alerts", f"http://10.0.0.5:8080{HOOK_PATH}", env=private)
    create = ("webhook", "create", "acme", "--prompt", "Say what happened.")
    refused = cli.fails(*create, "--name", "ci", "--channel", "webhook:alerts")
    assert "channel webhook:alerts: connector 'alerts' at http://10.0.0.5:8080" in refused
    assert "not a public address" in refused
    assert "AGENTWS_CONNECTOR_ALLOWLIST" in refused
    assert TOKEN not in refused
    assert "/services/" not in refused
    assert cli.json("webhook", "list", "acme") == []

    cli.json(*create, "--name", "cd", "--channel", "ops", env=ALICE)
    update = ("webhook", "update", "acme", "cd", "--channel", "webhook:alerts")
    moved = cli.fails(*update, env=ALICE)
    assert "not a public address" in moved
    assert TOKEN not in moved
    assert cli.json("webhook", "show", "acme", "cd")["channel"] == "local:ops"

    # Allow-listed, both are saved.
    cli.json(*create, "--name", "ci", "--channel", "webhook:alerts", env={**ALICE, **private})
    assert cli.json(*update, env={**ALICE, **private})["channel"] == "webhook:alerts"


# --- connector test -------------------------------------------------------------------------


@attrs.define
class _Hook:
    """A local stand-in for a chat's incoming-webhook endpoint."""

    port: int
    requests: list[tuple[str, str]] = attrs.Factory(list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def hook() -> Iterator[_Hook]:
    """Answers 405 to a GET of a live hook (under /services/), 404 to anything else."""
    state = _Hook(0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(("GET", self.path))
            self.send_response(405 if self.path.startswith("/services/") else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            state.requests.append(("POST", self.path))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the CLI under test owns stderr while it runs."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_connector_test_gets_the_sealed_url_and_posts_nothing(acme: Cli, hook: _Hook) -> None:
    cli = acme
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
    origin = f"http://127.0.0.1:{hook.port}"
    assert _add(cli, "alerts", hook.url(HOOK_PATH), env=env)["url"] == origin

    tested = cli.json("connector", "test", "acme", "alerts", "--timeout", "10", env=env)
    assert tested["ok"] is True
    assert tested["url"] == origin
    assert tested["detail"] == f"{origin} answers (HTTP 405 to a GET; nothing was posted)"
    text = cli.ok("connector", "test", "acme", "alerts", env=env)
    said = f"Connector 'alerts' works: {origin} answers (HTTP 405 to a GET; nothing was posted) ("
    assert text.startswith(said), text
    # The URL is the secret: the sentence names no more of it than the detail's origin.
    assert text.strip().endswith(" ms). Nothing was changed."), text
    assert TOKEN not in str(tested) + text
    assert hook.requests == [("GET", HOOK_PATH), ("GET", HOOK_PATH)]

    # A URL the chat no longer knows: refused, named by its origin.
    _add(cli, "revoked", hook.url(f"/gone/{OTHER_TOKEN}"), env=env)
    stderr = cli.fails("connector", "test", "acme", "revoked", env=env)
    assert f"{origin} answered HTTP 404: the URL was refused" in stderr
    assert OTHER_TOKEN not in stderr

    # Without the allowlist the guard refuses the loopback address before connecting.
    refused = cli.fails("connector", "test", "acme", "alerts")
    assert "not a public address" in refused
    assert TOKEN not in refused
    assert ("GET", f"/gone/{OTHER_TOKEN}") in hook.requests
    assert len(hook.requests) == 3
    assert all(method == "GET" for method, _ in hook.requests)
