"""Capture and "Try a prompt" through the CLI: ``webhook create --capture``, ``update
--capture/--no-capture``, ``webhook samples`` and ``webhook try``.

The CLI's try runs the model its settings choose: with no ``ANTHROPIC_API_KEY``
here, the offline digest, which calls no tools (tests/e2e/test_prompt_try.py
tries with the real model client, its tools and a recording remote). Samples
are inserted through the store, as the webhook door would keep them
(tests/e2e/test_webhook_capture.py delivers them).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trio

from agentws.cli import main
from agentws.domain.models import ChatMessage, Event, Webhook, WebhookSample
from agentws.store import open_store
from tests.cli.conftest import Cli, seeded_copy
from tests.cli.test_webhook_cli import ACTOR, ALICE, PROMPT, _create, _insert_event, _set_up

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
CANDIDATE = "Only failures matter: name the service."


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("acme")
    _set_up(Cli(directory, f"sqlite:///{directory / 'a.db'}"))
    return directory


@pytest.fixture
def acme(template: Path, tmp_path: Path) -> Cli:
    """The CLI on this test's copy of the seeded SQLite database (and its key)."""
    return seeded_copy(template, tmp_path)


async def _insert_samples(url: str, webhook_name: str, count: int) -> list[str]:
    async with open_store(url, pool_size=1) as store:
        workspace = await store.workspace_by_slug("acme")
        webhook = await store.find(Webhook, workspace_id=workspace.id, name=webhook_name)
        assert webhook is not None
        ids = []
        for n in range(count):
            body = json.dumps({"event": "deploy.failed", "service": f"api-{n}"}).encode()
            sample = WebhookSample(
                webhook_id=webhook.id,
                body=body,
                headers={"content-type": "application/json"},
                received_at=T0 + timedelta(seconds=n),
            )
            ids.append((await store.insert(sample)).id)
        return ids


async def _posted(url: str) -> tuple[int, int]:
    async with open_store(url, pool_size=1) as store:
        return await store.count(ChatMessage), await store.count(Event)


@pytest.mark.parametrize(
    ("command", "mentions"),
    [
        (["webhook", "samples"], ["WORKSPACE", "WEBHOOK", "SAMPLE", "capture"]),
        (
            ["webhook", "try"],
            ["--sample ID", "--event ID", "--prompt-file FILE", "would queue", "would ask"],
        ),
        (["webhook", "create"], ["--capture"]),
        (["webhook", "update"], ["--capture, --no-capture"]),
    ],
)
def test_help(command: list[str], mentions: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    words = " ".join(capsys.readouterr().out.split())
    for mention in mentions:
        assert mention in words, f"{mention!r} missing from:\n{words}"


def test_capture_is_set_on_create_and_update(acme: Cli) -> None:
    created = _create(acme, "ci", "--capture")
    assert (created["active"], created["status"], created["capture"]) == (False, "draft", True)
    text = acme.ok("webhook", "create", "acme", "--name", "b", "--channel", "ops", "--prompt", "p",
                   "--capture")  # fmt: skip
    assert "a draft that keeps its deliveries as samples" in text
    off = acme.json("webhook", "update", "acme", "ci", "--no-capture", env=ALICE)
    assert (off["capture"], off["active"]) == (False, False)
    on = acme.json("webhook", "update", "acme", "ci", "--capture", env=ALICE)
    assert on["capture"] is True
    assert "keeps its deliveries as samples" in acme.ok("webhook", "update", "acme", "ci")
    live = _create(acme, "live")
    assert live["capture"] is False and live["active"] is True
    audit = acme.json("audit", "tail", "--action", "webhook.update")
    assert [e["detail"]["capture"] for e in audit] == [False, True]


def test_samples_are_listed_newest_first_and_shown_whole(acme: Cli) -> None:
    _create(acme, "ci", "--capture")
    empty = acme.ok("webhook", "samples", "acme", "ci")
    assert "captures, and has no samples yet" in empty
    ids = trio.run(_insert_samples, acme.database, "ci", 3)
    listed = acme.json("webhook", "samples", "acme", "ci")
    assert [s["id"] for s in listed] == list(reversed(ids))
    assert set(listed[0]) == {"id", "webhook_id", "received_at", "size", "headers", "preview"}
    assert listed[0]["preview"] == '{"event": "deploy.failed", "service": "api-2"}'
    text = acme.ok("webhook", "samples", "acme", "ci")
    assert text.splitlines()[1].startswith(ids[-1])
    assert f"agentws webhook try acme ci --sample {ids[-1]}" in text
    shown = acme.json("webhook", "samples", "acme", "ci", ids[0])
    assert shown["body"] == {"event": "deploy.failed", "service": "api-0"}
    assert '"service": "api-0"' in acme.ok("webhook", "samples", "acme", "ci", ids[0])
    assert "has no sample 'smp_nope'" in acme.fails("webhook", "samples", "acme", "ci", "smp_nope")


def test_try_on_a_sample_and_an_event_posts_nothing(acme: Cli) -> None:
    _create(acme, "ci", "--capture")
    _create(acme, "other")
    (sample_id,) = trio.run(_insert_samples, acme.database, "ci", 1)
    event_id = trio.run(_insert_event, acme.database, "ci")
    foreign = trio.run(_insert_event, acme.database, "other")
    prompt_file = acme.cwd / "candidate.md"
    prompt_file.write_text(CANDIDATE, encoding="utf-8")

    tried = acme.json(
        "webhook", "try", "acme", "ci", "--sample", sample_id, "--prompt-file", str(prompt_file),
        env=ALICE,
    )  # fmt: skip
    assert set(tried) == {"text", "model", "prompt", "source", "source_id", "tool_calls", "usage"}
    assert (tried["model"], tried["prompt"], tried["source"]) == ("offline", CANDIDATE, "sample")
    assert tried["source_id"] == sample_id and tried["tool_calls"] == []
    assert tried["text"].startswith("*ci*: deploy.failed")
    assert "api-0" in tried["text"]

    text = acme.ok("webhook", "try", "acme", "ci", "--event", event_id)
    assert text.startswith(f"Tried the webhook's prompt on event {event_id} (model: offline)")
    assert "The message it would post:\n  *ci*: deploy" in text
    assert "Tool calls: none." in text
    by_event = acme.json("webhook", "try", "acme", "ci", "--event", event_id)
    assert (by_event["prompt"], by_event["source"]) == (PROMPT, "event")

    # Nothing was posted, and no event was stored or run (the one inserted stays queued).
    assert trio.run(_posted, acme.database) == (0, 2)
    assert acme.json("event", "show", event_id)["event"]["status"] == "queued"
    audit = acme.json("audit", "tail", "--action", "webhook.try")
    assert [e["detail"]["source_id"] for e in audit] == [sample_id, event_id, event_id]
    assert audit[0]["actor"] == ACTOR and audit[0]["target"] == "acme/ci"

    assert "has no event" in acme.fails("webhook", "try", "acme", "ci", "--event", foreign)
    assert "has no sample" in acme.fails("webhook", "try", "acme", "ci", "--sample", "smp_x")
    assert "prompt is empty" in acme.fails(
        "webhook", "try", "acme", "ci", "--sample", sample_id, "--prompt", " "
    )
    missing = acme.run("webhook", "try", "acme", "ci")
    assert missing.returncode == 2 and "one of the arguments --sample --event" in missing.stderr
