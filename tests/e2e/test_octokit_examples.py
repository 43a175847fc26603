"""The offline digest of GitHub's own examples: the 329 of ``@octokit/webhooks-examples``.

An npm package, locked in tests/node (``scripts/test`` installs it with
``npm ci``), so the test lives here with the other tests that need Node's
packages; ``tests/unit/test_sender_facts.py`` covers the same reading with
payloads of its own. Each example is read with the ``X-GitHub-Event``
header GitHub sends with it.
"""

from __future__ import annotations

import json
from typing import Any

from agentws.agent.model import EventBrief
from agentws.agent.offline import OFFLINE_NOTE, digest
from tests.e2e.node_support import require_package

EXAMPLES = "@octokit/webhooks-examples"


def _brief(payload: Any, event: str) -> EventBrief:
    return EventBrief(
        webhook_name="hook",
        prompt="Post the branch and who did it.",
        payload=payload,
        headers={"x-github-event": event},
        received_at="2026-11-25T10:00:00Z",
        truncated=False,
        original_bytes=len(json.dumps(payload)),
    )


def _examples() -> list[tuple[str, dict[str, Any]]]:
    index = require_package(EXAMPLES) / "api.github.com" / "index.json"
    groups = json.loads(index.read_text())
    return [(group["name"], example) for group in groups for example in group["examples"]]


def test_every_github_example_names_its_event_and_a_push_its_branch() -> None:
    examples = _examples()
    assert len(examples) == 329, len(examples)
    for event, payload in examples:
        text = digest(_brief(payload, event))
        first, *_ = text.splitlines()
        assert event in first, (event, first)
        assert text.endswith(OFFLINE_NOTE), (event, text)
        if event != "push":
            continue
        name = payload["ref"].removeprefix("refs/heads/").removeprefix("refs/tags/")
        assert name in first, (payload["ref"], first)
        tag = payload["ref"].startswith("refs/tags/")
        said = f"• branch: none, {name} is a tag (ref)" if tag else f"• branch: {name} (ref)"
        assert said in text.splitlines(), (payload["ref"], text)
        for commit in payload["commits"]:
            assert commit["message"].splitlines()[0] in text, (commit, text)
