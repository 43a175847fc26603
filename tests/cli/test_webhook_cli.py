"""``agentws webhook``, ``event`` and ``channel``, run as the program would run.

Every test starts from ``agentws init`` (which makes the secret key in the
working directory, the default data dir), a workspace ``acme`` and its
group ``ops``: on SQLite from a copy of a database seeded once per module,
on PostgreSQL (where the test runs on both) from scratch. What the CLI
cannot make without a live server, webhook events and chat messages, is
inserted straight through the store. ``--help`` is checked in-process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.cli import main
from agentws.domain.models import ChatMessage, Event, Webhook
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.settings.secret_box import KEY_FILE, SecretBox
from agentws.store import open_store
from tests.cli.conftest import Cli, seeded_copy
from tests.support import clean_env

# Who runs the commands that change something: getpass reads LOGNAME first.
ALICE = {"LOGNAME": "alice"}
ACTOR = "cli:alice"

PROMPT = "Summarise the deploy: say which branch and repository, and whether it failed.\n"
EVENT_BODY = b'{"event":"deploy"}'
EVENT_HEADERS = {"content-type": "application/json"}
URL = re.compile(r"http://127\.0\.0\.1:8080/hooks/(agwh_[A-Za-z0-9_-]{43})")
# What `webhook list/show --json` say of a webhook: nothing that opens it.
WEBHOOK_KEYS = {
    "id",
    "workspace",
    "name",
    "channel",
    "group",
    "active",
    "status",
    "verification",
    "rate_per_min",
    "burst",
    "max_body_bytes",
    "concurrency",
    "allowed_tools",
    "allow_mentions",
    "capture",
    "alert_after",
    "alerts_channel",
    "pause_on_failure",
    "paused_at",
    "prompt",
    "url_generation",
    "previous_url_until",
    "secret_generation",
    "previous_secret_until",
    "created_at",
    "updated_at",
}
EVENT_KEYS = {
    "id",
    "webhook",
    "status",
    "attempts",
    "error",
    "message_id",
    "dedup_key",
    "replay_of",
    "received_at",
    "finished_at",
    # The URL and secret generation it came through (docs/webhooks.md, rotation).
    "url_generation",
    "secret_generation",
}
MESSAGE_KEYS = {"id", "channel", "text", "event_id", "thread", "external_id", "created_at"}
# How long `channel tail --follow` may take to start, or to print a new message (it polls 4x/s).
FOLLOW_S = 30.0


# --- set-up -------------------------------------------------------------------------------


def _set_up(cli: Cli) -> None:
    cli.ok("init")
    assert (cli.cwd / KEY_FILE).is_file(), "agentws init makes the key in the data dir (cwd)"
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("acme")
    _set_up(Cli(directory, f"sqlite:///{directory / 'a.db'}"))
    return directory


@pytest.fixture
def sqlite_acme(template: Path, tmp_path: Path) -> Cli:
    """The CLI on this test's copy of the seeded SQLite database (and its key)."""
    return seeded_copy(template, tmp_path)


@pytest.fixture
def acme(sqlite_acme: Cli) -> Cli:
    """Seeded, on SQLite: the commands' queries run on both stores in tests/contract."""
    return sqlite_acme


@pytest.fixture
def acme_both(request: pytest.FixtureRequest, any_cli: Cli, template: Path) -> Cli:
    """Seeded on SQLite (a copy) and on PostgreSQL (from scratch)."""
    if any_cli.database.startswith("sqlite"):
        return request.getfixturevalue("sqlite_acme")
    _set_up(any_cli)
    return any_cli


def _database_bytes(cli: Cli) -> bytes:
    """The SQLite database as stored: the file and any write-ahead log beside it."""
    files = sorted(cli.cwd.glob("a.db*"))
    assert files, list(cli.cwd.iterdir())
    return b"".join(path.read_bytes() for path in files)


def _prompt_file(cli: Cli, text: str = PROMPT, name: str = "prompt.txt") -> str:
    path = cli.cwd / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _create(cli: Cli, name: str, *extra: str, input: str | None = None) -> dict[str, Any]:
    """``webhook create acme --name NAME --channel ops --prompt-file F EXTRA --json``."""
    return cli.json(
        "webhook",
        "create",
        "acme",
        "--name",
        name,
        "--channel",
        "ops",
        "--prompt-file",
        _prompt_file(cli),
        *extra,
        env=ALICE,
        input=input,
    )


async def _webhook(url: str, name: str) -> Webhook:
    async with open_store(url, pool_size=1) as store:
        workspace = await store.workspace_by_slug("acme")
        webhook = await store.find(Webhook, workspace_id=workspace.id, name=name)
        assert webhook is not None, name
        return webhook


async def _insert_event(url: str, webhook_name: str, body: bytes = EVENT_BODY) -> str:
    async with open_store(url, pool_size=1) as store:
        workspace = await store.workspace_by_slug("acme")
        webhook = await store.find(Webhook, workspace_id=workspace.id, name=webhook_name)
        assert webhook is not None, webhook_name
        event = await store.insert(
            Event(webhook_id=webhook.id, body=body, headers=dict(EVENT_HEADERS), url_generation=1)
        )
        return event.id


async def _event(url: str, event_id: str) -> Event | None:
    async with open_store(url, pool_size=1) as store:
        return await store.find(Event, id=event_id)


async def _insert_messages(
    url: str, channel: str, texts: list[str], workspace: str = "acme"
) -> list[ChatMessage]:
    """Messages in ``channel``, a millisecond apart, oldest first."""
    async with open_store(url, pool_size=1) as store:
        workspace_id = (await store.workspace_by_slug(workspace)).id
        start = utcnow()
        return [
            await store.insert(
                ChatMessage(
                    workspace_id=workspace_id,
                    channel=channel,
                    text=text,
                    event_id=None,
                    created_at=start + timedelta(milliseconds=i),
                )
            )
            for i, text in enumerate(texts)
        ]


def _message_json(m: ChatMessage) -> dict[str, Any]:
    """What ``channel tail --json`` says of a message, as the test expects it."""
    return {
        "id": m.id,
        "channel": m.channel,
        "text": m.text,
        "event_id": m.event_id,
        "thread": m.thread,
        "external_id": m.external_id,
        "created_at": m.created_at.isoformat(),
    }


# --- help ---------------------------------------------------------------------------------


HELP_PAGES = [
    (["webhook"], ["create", "list", "show", "activate", "deactivate", "delete", "replay", "test"]),
    (
        ["webhook", "create"],
        [
            "WORKSPACE",
            "--name NAME",
            "--channel CHANNEL",
            "--prompt-file FILE",
            "--prompt PROMPT",
            "--group GROUP",
            "--draft",
            "--concurrency K",
            "--verify",
            "standard_webhooks",
            "--secret-stdin",
            "--rate R/min",
            "--burst N",
            "--max-body-bytes B",
            "printed once",
        ],
    ),
    (["webhook", "list"], ["WORKSPACE"]),
    (["webhook", "show"], ["WORKSPACE", "WEBHOOK"]),
    (["webhook", "activate"], ["WORKSPACE", "WEBHOOK"]),
    (["webhook", "deactivate"], ["WORKSPACE", "WEBHOOK"]),
    (["webhook", "delete"], ["WORKSPACE", "WEBHOOK"]),
    (["event"], ["list", "show", "replay"]),
    (
        ["event", "list"],
        [
            "WORKSPACE",
            "--webhook WEBHOOK",
            "--status",
            "--since TIME",
            "--until TIME",
            "--search TEXT, -q TEXT",
            "--limit N",
            "--cursor CURSOR",
            '"a phrase"',
            "24h",
            "next_cursor",
        ],
    ),
    (["event", "show"], ["EVENT"]),
    (["event", "replay"], ["EVENT", "--current-prompt"]),
    (["channel"], ["tail"]),
    (["channel", "tail"], ["WORKSPACE", "CHANNEL", "--limit N", "--follow, -f", "JSON lines"]),
]


@pytest.mark.parametrize(
    ("command", "mentions"), HELP_PAGES, ids=[" ".join(command) for command, _ in HELP_PAGES]
)
def test_help(command: list[str], mentions: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """In-process: a process per page would cost a second each and test nothing more."""
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: agentws {' '.join(command)}")
    words = " ".join(out.split())  # the same whatever the terminal's width
    if len(command) == 2:  # leaf commands all take the common options
        mentions = [*mentions, "--database URL", "--json"]
    for mention in mentions:
        assert mention in words, f"{mention!r} missing from:\n{out}"


# --- webhook create: the URL once, only its hash kept -------------------------------------


def test_create_shows_the_url_once_and_keeps_only_the_tokens_hash(sqlite_acme: Cli) -> None:
    cli = sqlite_acme
    created = _create(cli, "ci", "--group", "ops")
    match = URL.fullmatch(created["url"])
    assert match, created["url"]
    token = match.group(1)
    assert created["id"].startswith("wh_")
    assert {k: v for k, v in created.items() if k not in ("id", "created_at", "updated_at")} == {
        "workspace": "acme",
        "name": "ci",
        "channel": "local:ops",  # a bare name is a local channel
        "group": "ops",
        "active": True,
        "status": "active",
        "verification": "none",
        "rate_per_min": 60,
        "burst": 30,
        "max_body_bytes": 1024 * 1024,
        "concurrency": 4,
        "allowed_tools": [],
        "allow_mentions": False,
        "capture": False,
        "alert_after": 3,
        "alerts_channel": None,
        "pause_on_failure": False,
        "paused_at": None,
        "prompt": PROMPT,
        "url_generation": 1,
        "previous_url_until": None,
        "secret_generation": None,
        "previous_secret_until": None,
        "url": created["url"],
    }

    # Only the token's SHA-256 is stored: not the token, not the URL.
    stored = _database_bytes(cli)
    assert token.encode() not in stored, "the webhook token is stored in clear"
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored

    # Listing and showing never tell the URL or the token again.
    listed = cli.json("webhook", "list", "acme")
    assert len(listed) == 1
    assert set(listed[0]) == WEBHOOK_KEYS
    assert listed[0] == {k: v for k, v in created.items() if k != "url"}
    shown = cli.json("webhook", "show", "acme", "ci")
    assert set(shown) == WEBHOOK_KEYS | {"recent_events", "rotation", "failure_streak"}
    assert (shown["recent_events"], shown["failure_streak"]) == ([], None)
    assert shown["rotation"]["url_generation"] == 1
    assert shown["rotation"]["previous_url_until"] is None
    shown_only = ("recent_events", "rotation", "failure_streak")
    assert {k: v for k, v in shown.items() if k not in shown_only} == listed[0]
    assert cli.json("webhook", "show", "acme", created["id"]) == shown  # by id as by name
    for document in (listed, shown):
        text = json.dumps(document)
        assert token not in text
        assert "/hooks/" not in text
    # Nor does the audit log.
    audit = cli.json("audit", "tail", "--action", "webhook.")
    assert [(e["actor"], e["action"], e["target"]) for e in audit] == [
        (ACTOR, "webhook.create", "acme/ci")
    ]
    assert audit[0]["detail"]["webhook_id"] == created["id"]
    assert token not in json.dumps(audit)

    # Text mode: the URL under its heading, and never again.
    out = cli.ok(
        "webhook",
        "create",
        "acme",
        "--name",
        "ci-text",
        "--channel",
        "#ops",
        "--prompt",
        "Post what happened.",
    )
    lines = out.splitlines()
    assert lines[0].startswith("Created webhook 'ci-text' (wh_")
    assert lines[0].endswith(") in acme, active.")
    heading = lines.index("Endpoint URL (shown once; the token in it is the webhook's credential):")
    text_url = lines[heading + 1].strip()
    text_token = URL.fullmatch(text_url)
    assert text_token, out
    assert text_token.group(1) != token
    assert f"'{text_url}'" in out  # the curl example
    assert text_token.group(1).encode() not in _database_bytes(cli)
    listing = cli.ok("webhook", "list", "acme")
    assert listing.splitlines()[0].split() == [
        "ID",
        "NAME",
        "STATUS",
        "CHANNEL",
        "GROUP",
        "VERIFICATION",
        "RATE_PER_MIN",
    ]
    showing = cli.ok("webhook", "show", "acme", "ci-text")
    assert "channel: local:ops" in showing
    assert "The URL is not kept" in showing
    for text in (listing, showing):
        assert "agwh_" not in text
        assert "/hooks/" not in text


# --- webhook create: what is refused ------------------------------------------------------


def test_refused_creates_say_why_and_store_nothing(acme: Cli) -> None:
    cli = acme
    assert _create(cli, "ci")["name"] == "ci"
    prompt = _prompt_file(cli)
    empty = _prompt_file(cli, "", "empty.txt")
    blank = _prompt_file(cli, "  \n\n", "blank.txt")

    def create(workspace: str = "acme", *extra: str, input: str = "") -> str:
        return cli.fails(
            "webhook",
            "create",
            workspace,
            "--name",
            "new",
            *extra,
            env=ALICE,
            input=input,
        )

    base = ("--channel", "ops", "--prompt-file", prompt)
    assert "no workspace 'nope'" in create("nope", *base)
    assert "no group 'nope' in workspace 'acme'" in create("acme", *base, "--group", "nope")
    assert "use the channel's id" in create(
        "acme", "--channel", "slack:ops", "--prompt-file", prompt
    )
    slack = create("acme", "--channel", "slack:C0123456789", "--prompt-file", prompt)
    assert "no active Slack connector" in slack
    assert "agentws connector add" in slack
    hook = create("acme", "--channel", "webhook:alerts", "--prompt-file", prompt)
    assert "there is no connector 'alerts'" in hook
    assert "--kind incoming_webhook" in hook
    bad = create("acme", "--channel", "Bad Name!", "--prompt-file", prompt)
    assert "invalid local channel name 'Bad Name!'" in bad
    teams = create("acme", "--channel", "teams:x", "--prompt-file", prompt)
    assert "unknown chat sink 'teams'" in teams
    for path in (empty, blank):
        assert "the prompt is empty" in create("acme", "--channel", "ops", "--prompt-file", path)
    unsigned = create("acme", *base, "--verify", "github")
    assert "--verify github needs the secret" in unsigned
    assert "--secret-stdin" in unsigned
    no_secret = create("acme", *base, "--verify", "github", "--secret-stdin", input="\n")
    assert "verification 'github' needs a secret" in no_secret
    standard = create(
        "acme", *base, "--verify", "standard_webhooks", "--secret-stdin", input="not-whsec!\n"
    )
    assert "whsec_" in standard
    assert "not-whsec!" not in standard  # an error never repeats the secret
    unneeded = create("acme", *base, "--secret-stdin", input="s3cret\n")
    assert "verification 'none' takes no secret" in unneeded
    taken = cli.fails("webhook", "create", "acme", "--name", "ci", *base, env=ALICE, input="")
    assert "webhook 'ci' already exists in workspace 'acme'" in taken
    conflict = cli.fails_json("webhook", "create", "acme", "--name", "ci", *base)
    assert conflict["code"] == "conflict"
    assert cli.fails_json("webhook", "create", "nope", "--name", "x", *base)["code"] == "not_found"
    slack_json = cli.fails_json(
        "webhook", "create", "acme", "--name", "x", "--channel", "slack:C1", "--prompt", "p"
    )
    assert slack_json["code"] == "invalid"

    # A malformed command line is argparse's: exit 2 and usage, before anything runs.
    for flag, value, why in (
        ("--rate", "abc", "expected a rate such as 60/min or 2/s, got 'abc'"),
        ("--rate", "0/min", "expected 1 to 100000 a minute, got '0/min'"),
        ("--concurrency", "0", "expected a whole number from 1 to 64, got '0'"),
        ("--concurrency", "65", "expected a whole number from 1 to 64, got '65'"),
        ("--max-body-bytes", "2097153", "expected a whole number from 1 to 2097152, got"),
    ):
        result = cli.run("webhook", "create", "acme", "--name", "new", *base, flag, value)
        assert result.returncode == 2, (flag, value, result.stderr)
        assert result.stdout == ""
        assert result.stderr.startswith("usage: agentws webhook create")
        assert f"argument {flag}: {why}" in result.stderr

    # Nothing of the above was stored, nor audited.
    assert [w["name"] for w in cli.json("webhook", "list", "acme")] == ["ci"]
    creates = cli.json("audit", "tail", "--action", "webhook.")
    assert [(e["action"], e["target"]) for e in creates] == [("webhook.create", "acme/ci")]


def test_options_are_kept(acme: Cli) -> None:
    cli = acme
    created = _create(
        cli,
        "tuned",
        "--rate",
        "2/s",
        "--burst",
        "5",
        "--concurrency",
        "1",
        "--max-body-bytes",
        str(2 * 1024 * 1024),
    )
    assert (
        created["rate_per_min"],
        created["burst"],
        created["concurrency"],
        created["max_body_bytes"],
    ) == (120, 5, 1, 2 * 1024 * 1024)
    shown = cli.json("webhook", "show", "acme", "tuned")
    assert (shown["rate_per_min"], shown["burst"], shown["concurrency"]) == (120, 5, 1)
    # The burst defaults to min(30, rate).
    assert _create(cli, "slow", "--rate", "10")["burst"] == 10


# --- verification secrets -----------------------------------------------------------------


def test_a_verification_secret_is_read_from_stdin_and_stored_sealed(sqlite_acme: Cli) -> None:
    cli = sqlite_acme
    secret = "gh-" + secrets.token_hex(16)
    created = _create(cli, "gh", "--verify", "github", "--secret-stdin", input=secret + "\n")
    assert created["verification"] == "github"
    assert secret not in json.dumps(created)
    assert secret not in json.dumps(cli.json("webhook", "show", "acme", "gh"))
    assert secret not in json.dumps(cli.json("audit", "tail"))
    assert secret.encode() not in _database_bytes(cli), "the secret is stored in clear"

    # Sealed, not lost: the service key (made by `agentws init`) opens it, newline stripped.
    webhook = trio.run(_webhook, cli.database, "gh")
    assert webhook.secret is not None
    box = SecretBox.from_settings(Settings(data_dir=cli.cwd))
    assert box.open(webhook.secret) == secret

    standard = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    created = _create(cli, "std", "--verify", "standard_webhooks", "--secret-stdin", input=standard)
    assert created["verification"] == "standard_webhooks"
    assert standard.encode() not in _database_bytes(cli)


# --- draft, activate, deactivate, delete ---------------------------------------------------


def test_a_draft_is_activated_deactivated_and_deleted(acme: Cli) -> None:
    cli = acme
    draft = _create(cli, "ci", "--draft")
    assert (draft["status"], draft["active"]) == ("draft", False)
    assert cli.json("webhook", "show", "acme", "ci")["status"] == "draft"

    active = cli.json("webhook", "activate", "acme", "ci", env=ALICE)
    assert (active["status"], active["active"]) == ("active", True)
    assert set(active) == WEBHOOK_KEYS
    assert cli.json("webhook", "activate", "acme", "ci", env=ALICE)["status"] == "active"
    out = cli.ok("webhook", "deactivate", "acme", draft["id"], env=ALICE)
    assert out.strip() == "Webhook 'ci' is a draft: deliveries get 403 until it is activated."
    assert [w["status"] for w in cli.json("webhook", "list", "acme")] == ["draft"]
    out = cli.ok("webhook", "activate", "acme", "ci", env=ALICE)
    assert out.strip() == "Webhook 'ci' is active: it accepts events."
    assert [w["status"] for w in cli.json("webhook", "list", "acme")] == ["active"]

    # Deleting drops its events too.
    event_id = trio.run(_insert_event, cli.database, "ci")
    deleted = cli.json("webhook", "delete", "acme", "ci", env=ALICE)
    assert deleted == {"id": draft["id"], "name": "ci", "deleted": True}
    assert cli.json("webhook", "list", "acme") == []
    assert "has no webhooks" in cli.ok("webhook", "list", "acme")
    for action in ("show", "activate", "deactivate", "delete"):
        stderr = cli.fails("webhook", action, "acme", "ci")
        assert "no webhook 'ci' in workspace 'acme'" in stderr, action
    assert cli.json("event", "list", "acme")["items"] == []
    assert "no event" in cli.fails("event", "show", event_id)
    assert trio.run(_event, cli.database, event_id) is None

    audit = cli.json("audit", "tail", "--action", "webhook.")
    # Activating an active webhook changes nothing and is not audited.
    assert [(e["actor"], e["action"], e["target"]) for e in audit] == [
        (ACTOR, "webhook.create", "acme/ci"),
        (ACTOR, "webhook.activate", "acme/ci"),
        (ACTOR, "webhook.deactivate", "acme/ci"),
        (ACTOR, "webhook.activate", "acme/ci"),
        (ACTOR, "webhook.delete", "acme/ci"),
    ]


# --- event list, show, replay -------------------------------------------------------------


def test_events_are_listed_shown_and_replayed(acme_both: Cli) -> None:
    acme = acme_both
    cli = acme
    webhook = _create(cli, "ci")
    _create(cli, "other")
    event_id = trio.run(_insert_event, cli.database, "ci")

    page = cli.json("event", "list", "acme")
    listed = page["items"]
    assert page == {"items": listed, "next_cursor": None, "previous_cursor": None, "unindexed": 0}
    assert len(listed) == 1
    row = listed[0]
    assert set(row) == EVENT_KEYS
    assert (row["id"], row["webhook"], row["status"], row["attempts"]) == (
        event_id,
        "ci",
        "queued",
        0,
    )
    assert (row["replay_of"], row["error"], row["finished_at"]) == (None, None, None)
    assert (row["url_generation"], row["secret_generation"]) == (1, None)
    assert cli.json("event", "list", "acme", "--webhook", "ci")["items"] == listed
    assert cli.json("event", "list", "acme", "--webhook", "other")["items"] == []
    assert cli.json("event", "list", "acme", "--status", "queued")["items"] == listed
    assert cli.json("event", "list", "acme", "--status", "done")["items"] == []
    assert cli.json("events", "list", "acme", "--search", "deploy")["items"] == listed
    assert cli.ok("event", "list", "acme", "--status", "failed").strip() == "No events."
    assert cli.json("webhook", "show", "acme", "ci")["recent_events"] == listed

    shown = cli.json("event", "show", event_id)
    # Any further key (such as a count of unfinished attempts) must say nothing happened yet.
    extra = {k: v for k, v in shown.items() if k not in ("event", "request", "attempts", "message")}
    assert all(not v for v in extra.values()), extra
    assert {k: v for k, v in shown.items() if k not in extra} == {
        "event": row,
        "request": {
            "headers": EVENT_HEADERS,
            "bytes": len(EVENT_BODY),
            "body": {"event": "deploy"},
        },
        "attempts": [],
        "message": None,
    }
    text = cli.ok("event", "show", event_id)
    assert text.startswith(f"Event {event_id} of webhook 'ci': queued after 0 attempt(s)\n")
    assert f"received ({len(EVENT_BODY)} bytes)" in text
    assert "content-type: application/json" in text
    assert '"event": "deploy"' in text

    replayed = cli.json("event", "replay", event_id, env=ALICE)
    assert set(replayed) == {"event_id", "replay_of", "status"}
    replay_id = replayed["event_id"]
    assert replay_id.startswith("evt_") and replay_id != event_id
    assert (replayed["replay_of"], replayed["status"]) == (event_id, "queued")
    replay = cli.json("event", "show", replay_id)
    assert replay["event"]["replay_of"] == event_id
    assert replay["event"]["url_generation"] is None  # not delivered to the URL
    assert replay["event"]["status"] == "queued"
    assert replay["request"] == shown["request"]  # the same body and headers
    assert "(replay of " + event_id + ")" in cli.ok("event", "show", replay_id)
    # Never run, the original would have run with the webhook's prompt: the replay keeps it.
    stored = trio.run(_event, cli.database, replay_id)
    assert stored is not None
    assert stored.body == EVENT_BODY
    assert stored.prompt == webhook["prompt"]

    out = cli.ok("event", "replay", event_id, "--current-prompt", env=ALICE)
    current_id = re.match(r"Queued (evt_\w+), a replay of ", out)
    assert current_id, out
    assert "with the webhook's current prompt" in out
    current = trio.run(_event, cli.database, current_id.group(1))
    assert current is not None
    assert (current.replay_of, current.prompt) == (event_id, None)

    # Newest first.
    assert [e["id"] for e in cli.json("event", "list", "acme")["items"]] == [
        current_id.group(1),
        replay_id,
        event_id,
    ]
    assert [e["id"] for e in cli.json("event", "list", "acme", "--limit", "1")["items"]] == [
        current_id.group(1)
    ]

    for command in (["event", "show", "evt_nope"], ["event", "replay", "evt_nope"]):
        assert "no event 'evt_nope'" in cli.fails(*command)
    assert cli.fails_json("event", "show", "evt_nope")["code"] == "not_found"
    assert "no workspace 'nope'" in cli.fails("event", "list", "nope")
    assert "no webhook 'nope'" in cli.fails("event", "list", "acme", "--webhook", "nope")

    audit = cli.json("audit", "tail", "--action", "event.")
    assert [(e["actor"], e["action"], e["target"]) for e in audit] == [
        (ACTOR, "event.replay", event_id),
        (ACTOR, "event.replay", event_id),
    ]
    assert [e["detail"]["current_prompt"] for e in audit] == [False, True]


def test_a_body_that_is_not_json_is_shown_as_text(acme: Cli) -> None:
    cli = acme
    _create(cli, "ci")
    event_id = trio.run(_insert_event, cli.database, "ci", b"plain \xff text")
    request = cli.json("event", "show", event_id)["request"]
    assert request["bytes"] == 12
    assert request["body"] == "plain \ufffd text"


# --- channel tail ---------------------------------------------------------------------------


def test_channel_tail_shows_a_channels_newest_messages_oldest_first(acme: Cli) -> None:
    cli = acme
    cli.ok("workspace", "create", "beta")
    ops = trio.run(_insert_messages, cli.database, "local:ops", ["first", "second", "third"])
    trio.run(_insert_messages, cli.database, "local:dev", ["elsewhere"])
    trio.run(_insert_messages, cli.database, "local:ops", ["other workspace"], "beta")

    tail = cli.json("channel", "tail", "acme", "ops")
    assert tail == [_message_json(m) for m in ops]
    assert all(set(m) == MESSAGE_KEYS for m in tail)
    for name in ("#ops", "local:ops", "LOCAL:ops"):
        assert cli.json("channel", "tail", "acme", name) == tail, name
    assert cli.json("channel", "tail", "acme", "ops", "--limit", "2") == tail[1:]
    assert [m["text"] for m in cli.json("channel", "tail", "acme", "dev")] == ["elsewhere"]
    assert [m["text"] for m in cli.json("channel", "tail", "beta", "ops")] == ["other workspace"]
    assert cli.json("channel", "tail", "acme", "quiet") == []
    assert cli.ok("channel", "tail", "acme", "quiet").strip() == "No messages in local:quiet yet."

    text = cli.ok("channel", "tail", "acme", "ops")
    blocks = text.rstrip("\n").split("\n\n")
    assert [b.splitlines()[1:] for b in blocks] == [["first"], ["second"], ["third"]]
    assert all(b.startswith("── ") and " local:ops" in b.splitlines()[0] for b in blocks)

    # Other sinks' channels show the record of what was posted there (nothing yet).
    assert "No messages in slack:C0123456789 yet" in cli.ok(
        "channel", "tail", "acme", "slack:C0123456789"
    )
    assert "use the channel's id" in cli.fails("channel", "tail", "acme", "slack:general")
    assert "invalid local channel name" in cli.fails("channel", "tail", "acme", "Bad Name!")
    assert "no workspace 'nope'" in cli.fails("channel", "tail", "nope", "ops")
    result = cli.run("channel", "tail", "acme", "ops", "--limit", "0")
    assert result.returncode == 2
    assert "argument -n/--lines/--limit:" in result.stderr


class _Lines:
    """A process's output, line by line."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> str:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                raise AssertionError(f"the output ended; unfinished line: {self._buffer!r}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    async def rest(self) -> str:
        while chunk := await self._stream.receive_some(65536):
            self._buffer += chunk
        rest, self._buffer = self._buffer, b""
        return rest.decode()


async def _start_following(
    cli: Cli, channel: str, *, task_status: trio.TaskStatus[trio.Process] = trio.TASK_STATUS_IGNORED
) -> None:
    """``channel tail acme CHANNEL --follow --json``, killed if the nursery is cancelled."""
    command = [sys.executable, "-m", "agentws", "channel", "tail", "acme", channel]
    await trio.run_process(
        [*command, "--follow", "--json", "--database", cli.database],
        cwd=cli.cwd,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=False,
        task_status=task_status,
    )


async def _follow(nursery: trio.Nursery, cli: Cli, channel: str) -> tuple[trio.Process, _Lines]:
    process: trio.Process = await nursery.start(_start_following, cli, channel)
    assert process.stdout is not None
    return process, _Lines(process.stdout)


async def _interrupt(process: trio.Process, lines: _Lines) -> None:
    """Ctrl+C: the process stops at once, status 130, nothing more printed, no traceback."""
    assert process.stderr is not None
    process.send_signal(signal.SIGINT)
    with trio.fail_after(FOLLOW_S):
        await process.wait()
        stdout = await lines.rest()
        stderr = await _Lines(process.stderr).rest()
    assert "Traceback" not in stderr, stderr
    assert process.returncode == 130, stderr
    assert stdout == ""
    assert stderr == ""


@pytest.fixture
def follow_acme(acme: Cli) -> tuple[Cli, list[ChatMessage]]:
    """Set up outside trio (the CLI runs blocking); two messages in local:ops already."""
    return acme, trio.run(_insert_messages, acme.database, "local:ops", ["one", "two"])


async def test_channel_tail_follow_prints_new_messages_as_json_lines(
    follow_acme: tuple[Cli, list[ChatMessage]],
) -> None:
    cli, before = follow_acme
    # Should the test fail, leaving the nursery kills the process.
    async with trio.open_nursery() as nursery:
        process, lines = await _follow(nursery, cli, "ops")
        with trio.fail_after(FOLLOW_S):
            first = [json.loads(await lines.next()) for _ in before]
        assert first == [_message_json(m) for m in before]

        # Another channel's message is not printed; the new one in ops is, once.
        await _insert_messages(cli.database, "local:dev", ["not here"])
        (new,) = await _insert_messages(cli.database, "local:ops", ["three ✓"])
        with trio.fail_after(FOLLOW_S):
            line = await lines.next()
        assert json.loads(line) == _message_json(new)
        assert "\n" not in line  # one JSON document per line

        (newer,) = await _insert_messages(cli.database, "local:ops", ["four"])
        with trio.fail_after(FOLLOW_S):
            assert json.loads(await lines.next()) == _message_json(newer)
        await _interrupt(process, lines)


async def test_channel_tail_follow_of_an_empty_channel_prints_its_first_message(
    follow_acme: tuple[Cli, list[ChatMessage]],
) -> None:
    cli, _ = follow_acme
    async with trio.open_nursery() as nursery:
        process, lines = await _follow(nursery, cli, "#quiet")
        # Printed once, whether the process saw the channel empty or not.
        (first,) = await _insert_messages(cli.database, "local:quiet", ["hello"])
        with trio.fail_after(FOLLOW_S):
            assert json.loads(await lines.next()) == _message_json(first)
        (second,) = await _insert_messages(cli.database, "local:quiet", ["again"])
        with trio.fail_after(FOLLOW_S):
            assert json.loads(await lines.next()) == _message_json(second)
        await _interrupt(process, lines)


def test_channel_tail_takes_n_like_audit_tail(acme: Cli) -> None:
    cli = acme
    messages = trio.run(_insert_messages, cli.database, "local:ops", ["a", "b", "c", "d"])
    newest = [_message_json(m) for m in messages[-2:]]
    assert cli.json("channel", "tail", "acme", "ops", "-n", "2") == newest
    assert cli.json("channel", "tail", "acme", "ops", "--lines", "2") == newest
    assert cli.json("channel", "tail", "acme", "ops", "--limit", "2") == newest


def _closed_pipe_run(cli: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m agentws ARGS`` writing into a pipe whose reader has already gone.

    What ``agentws … | head -2`` does once ``head`` has what it wants, without
    the race of a reader that may still be there when the output comes.
    """
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "agentws", *args, "--database", cli.database],
            cwd=cli.cwd,
            env=clean_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=FOLLOW_S,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "command",
    [
        ["webhook", "show", "acme", "ci"],
        ["webhook", "show", "acme", "ci", "--json"],
        ["channel", "tail", "acme", "ops", "-n", "5"],
        ["channel", "tail", "acme", "ops", "--follow"],
    ],
    ids=["show", "show-json", "tail", "tail-follow"],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(acme: Cli, command: list[str]) -> None:
    _create(acme, "ci")
    trio.run(_insert_messages, acme.database, "local:ops", ["one", "two"])
    result = _closed_pipe_run(acme, *command)
    assert result.stderr == ""
    assert result.returncode == 1
