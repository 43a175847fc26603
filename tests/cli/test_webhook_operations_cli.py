"""``agentws webhook`` failure alert options, ``replay`` and ``test``, through the CLI.

Alert settings are set by ``create`` and changed by ``update`` (checked as
a channel is), and ``show`` tells the failure streak. ``replay`` and
``test`` need no running service to queue their events: the events are
inserted straight through the store here (as a failed run would leave
them), and what the CLI queued is read back from it. The runs themselves
are in tests/e2e (test_webhook_replays, test_webhook_test_events).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.cli import main
from agentws.domain.models import AuditEntry, Event, EventStatus, FailureStreak, Webhook
from agentws.domain.rules import utcnow
from agentws.store import open_store
from tests.cli.conftest import Cli, seeded_copy

ALICE = {"LOGNAME": "alice"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("acme")
    cli = Cli(directory, f"sqlite:///{directory / 'a.db'}")
    cli.ok("init")
    cli.ok("workspace", "create", "acme")
    cli.ok("webhook", "create", "acme", "--name", "ci", "--channel", "ops", "--prompt", "Say.")
    return directory


@pytest.fixture
def acme(template: Path, tmp_path: Path) -> Cli:
    return seeded_copy(template, tmp_path)


def _store_call(cli: Cli, work: Any) -> Any:
    async def run() -> Any:
        async with open_store(cli.database, pool_size=1) as store:
            return await work(store)

    return trio.run(run)


def _failed(cli: Cli, count: int, *, error: str = "model: refused (400)") -> list[str]:
    """``count`` failed events of webhook ci, received a minute apart, an hour ago."""

    async def insert(store: Any) -> list[str]:
        hook = await store.find(Webhook, name="ci")
        start = utcnow() - timedelta(hours=1)
        events = [
            Event(
                webhook_id=hook.id,
                body=b'{"n": %d}' % n,
                status=EventStatus.FAILED,
                error=error,
                attempts=1,
                received_at=start + timedelta(minutes=n),
                available_at=start + timedelta(minutes=n),
            )
            for n in range(count)
        ]
        await store.insert_many(events)
        return [e.id for e in events]

    ids: list[str] = _store_call(cli, insert)
    return ids


def test_alert_settings_are_made_changed_and_shown(acme: Cli) -> None:
    cli = acme
    created = cli.json(
        "webhook",
        "create",
        "acme",
        "--name",
        "pages",
        "--channel",
        "ops",
        "--prompt",
        "Say.",
        "--alert-after",
        "5",
        "--alerts-channel",
        "#alerts",
        "--pause-on-failure",
    )
    assert (created["alert_after"], created["alerts_channel"], created["pause_on_failure"]) == (
        5,
        "local:alerts",
        True,
    )
    assert cli.json("webhook", "show", "acme", "ci")["alert_after"] == 3  # the default
    changed = cli.json(
        "webhook",
        "update",
        "acme",
        "pages",
        "--alert-after",
        "0",
        "--alerts-channel",
        "",
        "--no-pause-on-failure",
        env=ALICE,
    )
    assert (changed["alert_after"], changed["alerts_channel"], changed["pause_on_failure"]) == (
        0,
        None,
        False,
    )
    text = cli.ok("webhook", "show", "acme", "pages")
    assert "Failure alerts: off. No failed events in a row so far." in text
    updates = _store_call(cli, lambda store: store.select(AuditEntry, action="webhook.update"))
    assert updates[-1].detail["changed"] == ["alert_after", "alerts_channel", "pause_on_failure"]
    # Refused: out of range (argparse), a channel that cannot be.
    assert cli.run("webhook", "update", "acme", "pages", "--alert-after", "1001").returncode == 2
    error = cli.fails("webhook", "update", "acme", "pages", "--alerts-channel", "slack:nope")
    assert "slack" in error


def test_show_tells_the_failure_streak_and_its_alert(acme: Cli) -> None:
    cli = acme
    (last,) = _failed(cli, 1)

    async def streak(store: Any) -> None:
        hook = await store.find(Webhook, name="ci")
        await store.insert(
            FailureStreak(
                webhook_id=hook.id,
                failures=4,
                last_event_id=last,
                last_error="chat: channel_not_found",
                alerted_at=utcnow(),
                alert_posted_at=utcnow(),
                alert_message_id="msg_x",
            )
        )

    _store_call(cli, streak)
    shown = cli.json("webhook", "show", "acme", "ci")
    assert shown["failure_streak"]["failures"] == 4 and shown["failure_streak"]["open"]
    text = cli.ok("webhook", "show", "acme", "ci")
    assert "Failing: 4 events in a row since" in text
    assert f"last error: chat: channel_not_found (event {last})" in text
    assert "alert: posted at" in text


def test_replay_queues_each_failed_event_once_and_a_dry_run_nothing(acme: Cli) -> None:
    cli = acme
    failed = _failed(cli, 3, error="Model: refused (400)")
    _failed(cli, 1, error="chat: channel_not_found")
    dry = cli.json(
        "webhook", "replay", "acme", "ci", "--failed", "--dry-run", "--error-contains", "model"
    )
    assert [e["id"] for e in dry["events"]] == failed
    assert (dry["dry_run"], dry["queued"], dry["rate_per_min"]) == (True, 0, 60)
    text = cli.ok("webhook", "replay", "acme", "ci", "--failed", "--error-contains", "MODEL")
    assert text.startswith("Queued 3 replays of failed events whose error contains 'MODEL'")
    assert "at 60/min (the last 2 s after the first)" in text

    async def replays(store: Any) -> list[Event]:
        return [e for e in await store.select(Event) if e.replay_of is not None]

    queued = _store_call(cli, replays)
    assert sorted(e.replay_of for e in queued) == sorted(failed)
    assert all(e.status is EventStatus.QUEUED and e.prompt == "Say." for e in queued)
    again = cli.json("webhook", "replay", "acme", "ci", "--failed", "--error-contains", "model")
    assert (again["matched"], again["queued"]) == (0, 0)
    assert "Nothing to replay" in cli.ok(
        "webhook", "replay", "acme", "ci", "--failed", "--until", "2000-01-01"
    )


def test_replay_needs_failed_and_understands_times(acme: Cli) -> None:
    cli = acme
    assert cli.run("webhook", "replay", "acme", "ci").returncode == 2
    assert cli.run("webhook", "replay", "acme", "ci", "--failed", "--since", "soon").returncode == 2
    assert cli.run("webhook", "replay", "acme", "ci", "--failed", "--rate", "0/min").returncode == 2
    error = cli.fails(
        "webhook", "replay", "acme", "ci", "--failed", "--since", "1h", "--until", "2h"
    )
    assert "'since' must come before 'until'" in error


def test_a_test_event_is_queued_and_waits_for_a_service(acme: Cli) -> None:
    cli = acme
    shown = cli.json("webhook", "test", "acme", "ci", "--wait", "0")
    assert (shown["sample"], shown["status"], shown["event"]["status"]) == ("plain", 202, "queued")
    text = cli.ok("webhook", "test", "acme", "ci", "--wait", "0", "--scheme-sample", "slack")
    assert "Sent a slack test event to webhook 'ci'" in text
    assert "The door answered 202: queued as event evt_" in text
    assert "no service ran it within 0 s" in text
    cli.ok("webhook", "deactivate", "acme", "ci")
    refused = cli.run("webhook", "test", "acme", "ci", "--json")
    assert refused.returncode == 1
    answer = json.loads(refused.stdout)
    assert (answer["status"], answer["answer"]["error"]["code"]) == (403, "webhook_inactive")


# Numbers and durations typed on the command line: ASCII digits, bounded, or exit 2 naming
# the option ('²' is a digit to str.isdigit(), '\u0663' to int(); 20 digits overflow a date).
TYPED = [
    (["webhook", "rotate", "acme", "ci", "--grace", "²h"], "--grace"),
    (["webhook", "rotate", "acme", "ci", "--grace", "99999999999999999999d"], "--grace"),
    (["webhook", "rotate-secret", "acme", "ci", "--grace", "31d"], "--grace"),
    (["webhook", "replay", "acme", "ci", "--failed", "--since", "999999w"], "--since"),
    (["webhook", "replay", "acme", "ci", "--failed", "--until", "\u0663h"], "--until"),
    (["webhook", "replay", "acme", "ci", "--failed", "--rate", "²/min"], "--rate"),
    (["webhook", "replay", "acme", "ci", "--failed", "--limit", "1_000"], "--limit"),
    (["webhook", "test", "acme", "ci", "--wait", "nan"], "--wait"),
    (["webhook", "test", "acme", "ci", "--wait", "-1"], "--wait"),
    (["webhook", "update", "acme", "ci", "--alert-after", "²"], "--alert-after"),
    (["webhook", "create", "acme", "--name", "x", "--channel", "c", "--rate", "9" * 30], "--rate"),
    (["audit", "tail", "--since", "99999999999999999999d"], "--since"),
    (["event", "list", "acme", "--since", "²h"], "--since"),
    (["channel", "tail", "acme", "ops", "-n", "99999999999999999999"], "--lines"),
    (["doctor", "--timeout", "inf"], "--timeout"),
    (["approval", "approve", "apr_x", "--wait", "1e3"], "--wait"),
]


def test_typed_numbers_are_read_strictly_or_refused_naming_the_option(acme: Cli) -> None:
    for command, option in TYPED:
        result = acme.run(*command)
        assert (result.returncode, result.stdout) == (2, ""), (command, result.stderr)
        assert f"argument {option}" in result.stderr or f"/{option}" in result.stderr, (
            command,
            result.stderr,
        )
        assert "expected" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("command", "mentions"),
    [
        (["webhook", "create"], ["--alert-after N", "--alerts-channel CHANNEL", "--pause-on"]),
        (["webhook", "update"], ["--alert-after N", "--no-pause-on-failure"]),
        (["webhook", "replay"], ["--failed", "--since TIME", "--dry-run", "--rate R/min"]),
        (["webhook", "test"], ["--scheme-sample", "stripe", "standard_webhooks", "--wait"]),
    ],
)
def test_help(command: list[str], mentions: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    words = " ".join(capsys.readouterr().out.split())
    for mention in mentions:
        assert mention in words, f"{mention!r} missing from:\n{words}"
