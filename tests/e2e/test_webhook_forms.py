"""Form-encoded deliveries (``application/x-www-form-urlencoded``) end to end.

GitHub's "application/x-www-form-urlencoded" content type and Slack's
interactivity requests post a form whose ``payload`` field holds the event's
JSON; slash commands post the fields themselves. The signature covers the
body as sent, so each delivery here is signed by the sender's own library
(GitHub's ``@octokit/webhooks-methods`` under Node, Slack's ``slack_sdk``);
the event stored and run is the JSON the form carries.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import trio
from slack_sdk.signature import SignatureVerifier

from agentws.domain.models import EventStatus, VerificationScheme
from tests.e2e.node_support import NODE_DIR, require_node
from tests.e2e.test_webhooks import accepted, assert_nothing_stored
from tests.e2e.webhook_support import (
    all_finished,
    assert_error,
    hook_server,
    make_hook,
    post,
    wait_for_messages,
)

GITHUB_SECRET = "gh-form-secret-93b1"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


async def octokit_signature(secret: str, body: bytes) -> str:
    """``X-Hub-Signature-256`` for ``body``, computed by ``@octokit/webhooks-methods``."""
    node = require_node("@octokit/webhooks-methods")
    request = json.dumps({"secret": secret, "body": body.decode()}).encode()
    done = await trio.run_process(
        [node, str(NODE_DIR / "sign_github.mjs")],
        stdin=request,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    signature = done.stdout.decode()
    assert signature.startswith("sha256="), signature
    return signature


def slack_headers(body: bytes) -> dict[str, str]:
    """The headers Slack sends, from ``slack_sdk``'s own signer."""
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SLACK_SECRET).generate_signature(timestamp=stamp, body=body)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature, **FORM}


def push_payload() -> dict[str, Any]:
    return {
        "ref": "refs/heads/release-2.4",
        "before": "9049f1265b7d61be4a8904a9a27120d2064dab3b",
        "after": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
        "repository": {"full_name": "acme/shop", "default_branch": "main"},
        "pusher": {"name": "octocat"},
        "commits": [
            {"id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", "message": "Fix the tax rounding"}
        ],
    }


async def test_a_github_form_encoded_push_verifies_and_runs(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server, "github-form", verification=VerificationScheme.GITHUB, secret=GITHUB_SECRET
        )
        event_json = json.dumps(push_payload())
        body = urlencode({"payload": event_json}).encode()
        headers = {
            **FORM,
            "X-Hub-Signature-256": await octokit_signature(GITHUB_SECRET, body),
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "5f6c1e00-1d6e-11ef-8a4f-3a1b9c0de111",
        }
        event_id = accepted(await post(hook.url, body, headers))

        (message,) = await wait_for_messages(server.store, 1)
        assert message.event_id == event_id
        assert "acme/shop" in message.text, message.text
        # The offline digest names the pushed branch (from ref) and lists the commit.
        assert "push to release-2.4" in message.text, message.text
        assert "0d1a26e Fix the tax rounding" in message.text, message.text
        (event,) = await all_finished(server.store, hook.id)
        assert event.status is EventStatus.DONE
        assert event.body == event_json.encode(), "the event is the form's payload JSON"
        assert event.dedup_key == "github:5f6c1e00-1d6e-11ef-8a4f-3a1b9c0de111"

        # The same form with a signature over something else is refused, and stores nothing.
        other = urlencode({"payload": json.dumps({**push_payload(), "ref": "refs/heads/x"})})
        forged = {**headers, "X-GitHub-Delivery": "another-delivery"}
        assert_error(await post(hook.url, other.encode(), forged), 401, "invalid_signature")
        assert len(await all_finished(server.store, hook.id)) == 1


async def test_slack_interactivity_and_slash_command_forms(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(
            server, "slack-forms", verification=VerificationScheme.SLACK, secret=SLACK_SECRET
        )
        action = {
            "type": "block_actions",
            "user": {"id": "U061F7AUR", "username": "ana"},
            "actions": [{"action_id": "approve_deploy", "value": "deploy-812"}],
        }
        interactive = urlencode({"payload": json.dumps(action)}).encode()
        first = accepted(await post(hook.url, interactive, slack_headers(interactive)))
        command = urlencode(
            [
                ("command", "/deploy"),
                ("text", "shop to production"),
                ("user_name", "ana"),
                ("tag", "a"),
                ("tag", "b"),
            ]
        ).encode()
        second = accepted(await post(hook.url, command, slack_headers(command)))

        found = await wait_for_messages(server.store, 2)
        assert sorted(str(m.event_id) for m in found) == sorted([first, second])
        stored = {str(e.id): e for e in await all_finished(server.store, hook.id)}
        assert json.loads(stored[first].body) == action
        assert json.loads(stored[second].body) == {
            "command": "/deploy",
            "text": "shop to production",
            "user_name": "ana",
            "tag": ["a", "b"],
        }
        assert all(e.status is EventStatus.DONE for e in stored.values())


async def test_forms_that_carry_no_event_are_refused(tmp_path: Path) -> None:
    async with hook_server(tmp_path) as server:
        hook = await make_hook(server, "plain-forms")
        cases = [
            (b"payload=%7Bnot+json", 400, "invalid_json"),
            (urlencode({"payload": "[1, 2]"}).encode(), 422, "not_an_object"),
            (urlencode({"payload": '{"a": NaN}'}).encode(), 400, "invalid_json"),
            (b"payload=%7B%7D&payload=%7B%7D", 400, "invalid_form"),
            (b"\xff\xfe=1", 400, "invalid_form"),
            (b"a=%ff", 400, "invalid_form"),
            (b'{"a": 1}', 400, "invalid_form"),
        ]
        for body, status, code in cases:
            assert_error(await post(hook.url, body, FORM), status, code)
        # JSON sent as a form (what `curl -d '{"a":1}'` does) is told how to send JSON.
        for body in (b'{"a":1}', b'{"a": "b=c"}', b" [1, 2]\n"):
            refused = assert_error(await post(hook.url, body, FORM), 400, "invalid_form")
            message = refused["error"]["message"]
            assert "is JSON" in message and "Content-Type: application/json" in message, message
        await assert_nothing_stored(server, hook.id)

        # An empty form is an empty object: an event like any other.
        accepted(await post(hook.url, b"", FORM))


def test_the_node_signer_is_github_s() -> None:
    """The signer script signs as GitHub documents (a known vector), so the tests above prove it."""
    node = require_node("@octokit/webhooks-methods")
    done = subprocess.run(
        [node, str(NODE_DIR / "sign_github.mjs")],
        input=json.dumps({"secret": "It's a Secret to Everybody", "body": "Hello, World!"}),
        capture_output=True,
        text=True,
        check=True,
    )
    # The example in GitHub's "Validating webhook deliveries" documentation.
    assert done.stdout == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )
