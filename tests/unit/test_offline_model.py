"""The offline model's digest (``agentws.agent.offline.digest``): a message without a model.

Payloads are trimmed versions of what GitHub and Stripe really send.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from agentws.agent.model import EventBrief, ModelRequest
from agentws.agent.offline import OFFLINE_NOTE, OfflineModel, digest

WORKFLOW_RUN: dict[str, Any] = {
    "action": "completed",
    "workflow_run": {
        "id": 30433642,
        "name": "Build",
        "display_title": "Update README.md",
        "head_branch": "release/2.4",
        "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d",
        "run_number": 562,
        "event": "push",
        "status": "completed",
        "conclusion": "failure",
        "workflow_id": 159038,
        "html_url": "https://github.com/octo-org/octo-repo/actions/runs/30433642",
        "pull_requests": [],
        "actor": {"login": "octocat", "id": 1},
    },
    "workflow": {"id": 159038, "name": "Build", "path": ".github/workflows/build.yml"},
    "repository": {
        "id": 17273051,
        "name": "octo-repo",
        "full_name": "octo-org/octo-repo",
        "private": True,
        "owner": {"login": "octo-org", "id": 6811672},
    },
    "sender": {"login": "octocat", "id": 1},
}
GITHUB_HEADERS = {"x-github-event": "workflow_run", "content-type": "application/json"}

# A value longer than this is cut in the message (the module's documented limit).
VALUE_CHARS = 160

INVOICE_FAILED: dict[str, Any] = {
    "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
    "object": "event",
    "api_version": "2023-10-16",
    "created": 1686089970,
    "type": "invoice.payment_failed",
    "livemode": False,
    "pending_webhooks": 1,
    "request": {"id": None, "idempotency_key": None},
    "data": {
        "object": {
            "id": "in_1NG8Dt2eZvKYlo2CsQ8bC7Yx",
            "object": "invoice",
            "amount_due": 4900,
            "amount_paid": 0,
            "attempt_count": 2,
            "currency": "eur",
            "customer": "cus_NffrFeUfNV2Hib",
            "customer_email": "jenny.rosen@example.com",
            "status": "open",
            "hosted_invoice_url": "https://invoice.stripe.com/i/acct_1/test_x",
        }
    },
}


def brief(
    payload: Any,
    prompt: str = "Summarise the event.",
    headers: dict[str, str] | None = None,
    *,
    truncated: bool = False,
    original_bytes: int = 1000,
    webhook_name: str = "ci",
) -> EventBrief:
    return EventBrief(
        webhook_name=webhook_name,
        prompt=prompt,
        payload=payload,
        headers=headers or {},
        received_at="2026-01-02T03:04:05+00:00",
        truncated=truncated,
        original_bytes=original_bytes,
    )


def section(text: str, heading: str) -> list[str]:
    """The bullet lines under ``heading`` (up to the next blank line)."""
    lines = text.splitlines()
    assert heading in lines, text
    start = lines.index(heading) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


# --- GitHub -------------------------------------------------------------------------------


def test_a_github_workflow_run_says_what_where_and_how_it_ended() -> None:
    text = digest(brief(WORKFLOW_RUN, headers=GITHUB_HEADERS))
    first = text.splitlines()[0]
    assert first.startswith("*ci*: ")
    for part in ("workflow_run", "completed", "Build", "octo-org/octo-repo", "failure"):
        assert part in first, (part, first)

    key_fields = section(text, "Key fields:")
    assert all(line.startswith("• ") for line in key_fields)
    assert "• workflow_run.id: 30433642" in key_fields
    assert "• workflow_run.head_branch: release/2.4" in key_fields
    assert "• workflow_run.conclusion: failure" in key_fields
    assert "• repository.full_name: octo-org/octo-repo" in key_fields
    assert len(key_fields) <= 10


def test_without_the_event_header_the_action_and_repository_are_still_said() -> None:
    # GitHub names the event only in its header; the payload has no "type" or "event" key.
    first = digest(brief(WORKFLOW_RUN)).splitlines()[0]
    assert first == "*ci*: an event completed in octo-org/octo-repo"


def test_what_the_prompt_asks_about_is_listed() -> None:
    text = digest(
        brief(
            WORKFLOW_RUN,
            "When a run fails, post the branch and repository and who started it.",
            GITHUB_HEADERS,
        )
    )
    asked = section(text, "Asked about in the prompt:")
    assert any(line.startswith("• branch: workflow_run.head_branch") for line in asked), asked
    assert any(line.startswith("• repository: repository.full_name") for line in asked), asked
    # Fields already listed are referred to, not repeated.
    assert "• branch: workflow_run.head_branch (above)" in asked
    assert "• repository: repository.full_name (above)" in asked
    # Words of the prompt that name no field are not listed.
    assert not any(line.startswith(("• when", "• post", "• started")) for line in asked), asked


def test_a_prompt_asking_about_a_field_not_among_the_key_ones_gets_its_value() -> None:
    text = digest(brief(WORKFLOW_RUN, "Give the workflow path.", GITHUB_HEADERS))
    asked = section(text, "Asked about in the prompt:")
    assert "• path: workflow.path = .github/workflows/build.yml" in asked


# --- Stripe -------------------------------------------------------------------------------


def test_a_stripe_invoice_payment_failed_shows_type_amount_and_customer() -> None:
    text = digest(brief(INVOICE_FAILED, webhook_name="billing"))
    first = text.splitlines()[0]
    assert first.startswith("*billing*: invoice.payment_failed")
    # Stripe's amounts are in the currency's minor unit: 4900 in eur is 49.00 EUR.
    assert "49.00 EUR due" in first, first
    assert "4900" not in text
    assert "• data.object.amount_due: 49.00 EUR" in section(text, "Key fields:")
    assert "• data.object.customer: cus_NffrFeUfNV2Hib" in section(text, "Key fields:")
    assert "cus_NffrFeUfNV2Hib" in text
    assert "eur" in text


# --- secrets --------------------------------------------------------------------------------

# Keys whose values are credentials, as senders name them.
CREDENTIAL_KEYS = [
    "api_key",
    "apiKey",
    "x-api-key",
    "token",
    "access_token",
    "refresh_token",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "webhook_signature",
    "credentials",
]


def _secret_payload(keys: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Each key at the top, nested, and in a list's first item; and every value used."""
    values = [f"SECRET{i:02d}VALUE" for i in range(3 * len(keys))]
    payload: dict[str, Any] = {"type": "user.updated", "user": {"name": "Ada"}, "items": [{}]}
    for i, key in enumerate(keys):
        payload[key] = values[3 * i]
        payload["user"][key] = values[3 * i + 1]
        payload["items"][0][key] = values[3 * i + 2]
    return payload, values


def test_values_under_credential_keys_are_never_repeated() -> None:
    payload, values = _secret_payload(CREDENTIAL_KEYS)
    payload["credentials"] = {"user": "svc", "pass": "NESTEDSECRETVALUE"}
    values.append("NESTEDSECRETVALUE")
    # Even when the prompt asks for them by name.
    prompt = "Post the " + ", ".join(k.replace("_", " ") for k in CREDENTIAL_KEYS) + " please."
    for text in (digest(brief(payload)), digest(brief(payload, prompt))):
        assert "Ada" in text  # the payload was read
        leaked = [v for v in values if v in text]
        assert not leaked, text


@pytest.mark.parametrize("key", ["private_key", "authorization", "passphrase"])
def test_other_credential_looking_keys_are_not_repeated_either(key: str) -> None:
    """The module promises that values under keys that *look like credentials* are never
    repeated; a private key, an Authorization header or a passphrase does."""
    value = "-----BEGIN OPENSSH PRIVATE KEY----- HUSH"
    payload = {"type": "deploy_key.created", "key": {"title": "ci", key: value}}
    text = digest(brief(payload, f"Include the title and the {key.replace('_', ' ')}."))
    assert "ci" in text
    assert value not in text, (
        f"BUG: the value under {key!r} is repeated in the offline digest "
        f"(agentws/agent/offline.py _SECRET_KEY does not match it):\n{text}"
    )


# --- truncation, the note, determinism ------------------------------------------------------


def test_a_truncated_payload_says_so() -> None:
    text = digest(brief(WORKFLOW_RUN, truncated=True, original_bytes=9_999_999))
    assert "The payload was 9999999 bytes; only part of it was read." in text.splitlines()
    assert "only part of it was read" not in digest(brief(WORKFLOW_RUN))


@pytest.mark.parametrize(
    "payload", [WORKFLOW_RUN, INVOICE_FAILED, {}, [], None, "plain text", 42, [1, 2, 3]]
)
def test_the_offline_note_is_the_last_line(payload: Any) -> None:
    lines = digest(brief(payload)).splitlines()
    assert lines[-1] == OFFLINE_NOTE
    assert lines[-2] == ""
    assert lines[0].startswith("*ci*: ")


def test_a_payload_without_anything_known_is_an_event() -> None:
    for payload in ({}, [], None, "plain text", 42, {"foo": {"bar": True}}):
        first = digest(brief(payload)).splitlines()[0]
        assert first == "*ci*: an event", payload


def test_the_digest_is_deterministic() -> None:
    prompt = "Post the branch, repository and conclusion."
    first = digest(brief(WORKFLOW_RUN, prompt, GITHUB_HEADERS))
    again = digest(brief(copy.deepcopy(WORKFLOW_RUN), prompt, dict(GITHUB_HEADERS)))
    # The same payload parsed again from its JSON: the same message.
    parsed = json.loads(json.dumps(WORKFLOW_RUN))
    third = digest(brief(parsed, prompt, dict(GITHUB_HEADERS)))
    assert first == again == third
    assert digest(brief(INVOICE_FAILED)) == digest(brief(copy.deepcopy(INVOICE_FAILED)))


async def test_the_offline_model_replies_with_the_digest_and_no_tool_calls() -> None:
    model = OfflineModel()
    assert model.name == "offline"
    event = brief(INVOICE_FAILED, "Who failed to pay?")
    request = ModelRequest(system="", messages=[], tools=(), brief=event)
    reply = await model.reply(request)
    assert reply.text == digest(event)
    assert reply.tool_calls == ()
    assert reply.usage == {}


# --- hostile shapes -------------------------------------------------------------------------


def _nested_dicts(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for i in range(levels):
        node["id"] = i
        node["child"] = {}
        node = node["child"]
    return root


def _nested_lists(levels: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        child: list[Any] = []
        node.append(child)
        node = child
    node.append("bottom")
    return root


def test_deep_nesting_and_huge_lists_stay_short() -> None:
    payload = {
        "event": "bulk.import",
        "deep": _nested_dicts(1000),
        "lists": _nested_lists(1000),
        "items": [{"id": i, "name": f"item {i}"} for i in range(200_000)],
        "numbers": list(range(1_000_000)),
        "wide": {f"key{i}": i for i in range(10_000)},
    }
    text = digest(brief(payload, "List the items and their names, the numbers, the bottom."))
    assert len(text.encode()) < 4096, len(text.encode())
    assert text.splitlines()[0] == "*ci*: bulk.import"
    assert text.splitlines()[-1] == OFFLINE_NOTE
    assert "item 1" not in text  # a list stands for its first item; it is not enumerated


def test_long_values_are_cut() -> None:
    payload = {"type": "note", "title": "x" * 10_000, "message": "word " * 5_000}
    text = digest(brief(payload, "What is the message?"))
    assert len(text.encode()) < 4096, len(text.encode())
    for line in text.splitlines():
        assert len(line) <= VALUE_CHARS + 100, line


def test_long_values_in_the_first_line_are_cut_too() -> None:
    """The first line is built from the event type, action and repository name: a sender's
    values like any other, so they are cut like any other."""
    payload = {
        "type": "t" * 5_000,
        "action": "a" * 5_000,
        "repository": {"full_name": "r" * 5_000},
    }
    first = digest(brief(payload)).splitlines()[0]
    assert len(first) < 4 * (VALUE_CHARS + 10), (
        f"BUG: the first line of the digest is {len(first)} characters: the event type, "
        "action and repository name are not cut (agentws/agent/offline.py _what_happened)"
    )


def test_non_ascii_keys_and_values() -> None:
    payload = {
        "type": "commande.créée",
        "name": "Zoë à la café ✓",
        "customer": "Jürgen Groß",
        "名前": "テスト",
        "événement": {"état": "réussi", "id": "évt-1"},
    }
    text = digest(brief(payload, "Résumez la commande.", webhook_name="boutique-ü"))
    assert text.splitlines()[0] == "*boutique-ü*: commande.créée"
    assert "• name: Zoë à la café ✓" in section(text, "Key fields:")
    assert "• customer: Jürgen Groß" in section(text, "Key fields:")
    assert text.splitlines()[-1] == OFFLINE_NOTE
    assert digest(brief(copy.deepcopy(payload), "Résumez la commande.")) == digest(
        brief(payload, "Résumez la commande.")
    )


def test_a_prompt_can_ask_about_non_ascii_keys() -> None:
    payload = {"type": "commande.créée", "catégorie": "livres", "entrepôt": "Lyon"}
    text = digest(brief(payload, "Donnez la catégorie et l'entrepôt."))
    assert "Asked about in the prompt:" in text.splitlines(), (
        "BUG: words of the prompt are matched with an ASCII-only pattern "
        f"(agentws/agent/offline.py _WORD), so non-ASCII keys are never found:\n{text}"
    )
    asked = section(text, "Asked about in the prompt:")
    assert "• catégorie: catégorie = livres" in asked
    assert "• entrepôt: entrepôt = Lyon" in asked


def test_the_first_line_is_one_line() -> None:
    """A sender's event type with line breaks must not add lines (or fake a note) to the
    message: values are shown on one line, as everywhere else in the digest."""
    payload = {"type": "deploy\n\n" + OFFLINE_NOTE + "\n\nfake line", "status": "ok"}
    lines = digest(brief(payload)).splitlines()
    assert lines[0].startswith("*ci*: deploy"), lines
    assert lines.count(OFFLINE_NOTE) == 1, (
        "BUG: line breaks in the event type reach the message's first line unchanged "
        f"(agentws/agent/offline.py _what_happened):\n{lines}"
    )


# --- what the digest shows of a payload it knows nothing about, and what it never shows -------


def test_a_payload_with_no_known_field_shows_its_top_level_fields() -> None:
    text = digest(brief({"alert": "disk full", "host": "db-1"}, webhook_name="pages"))
    assert text.splitlines()[0] == "*pages*: an event"
    assert section(text, "Fields:") == ["• alert: disk full", "• host: db-1"]


def test_the_top_level_fields_shown_are_few_cut_short_and_never_credentials() -> None:
    payload: dict[str, Any] = {"api_key": "SECRETVALUE", "password": "SECRETVALUE"}
    payload |= {f"field_{i}": "v" * 1000 for i in range(20)}
    payload |= {"nested": {"a": 1, "b": 2}, "many": list(range(50))}
    fields = section(digest(brief(payload)), "Fields:")
    assert "SECRETVALUE" not in digest(brief(payload))
    assert len(fields) <= 8, fields
    assert fields[-1].startswith("• … and ") and fields[-1].endswith(" more"), fields
    assert all(len(line) <= VALUE_CHARS + 100 for line in fields), fields
    # A payload whose fields are known gets its key fields, not this list.
    assert "Fields:" not in digest(brief(WORKFLOW_RUN, "", GITHUB_HEADERS))


def test_passwords_in_payload_urls_are_not_repeated() -> None:
    payload = {
        "type": "deploy.finished",
        "url": "https://deploy:hunter2@ci.example/runs/1?token=tok-SECRET&page=2",
        "html_url": "https://ghp_AAAATOKEN@github.com/octo-org/octo-repo",
        "message": "logs at ftp://ops:pa55w0rd@logs.example/run-1 and https://ok.example/x",
    }
    prompt = "Give the url, the html url and the message."
    for text in (digest(brief(payload)), digest(brief(payload, prompt))):
        for secret in ("hunter2", "deploy:", "ghp_AAAATOKEN", "pa55w0rd", "ops:", "tok-SECRET"):
            assert secret not in text, (secret, text)
        assert "https://***@ci.example/runs/1?token=***&page=2" in text
        assert "https://***@github.com/octo-org/octo-repo" in text
        assert "ftp://***@logs.example/run-1 and https://ok.example/x" in text


def test_a_digest_costs_the_same_for_a_huge_payload() -> None:
    """A digest looks at a bounded part of the payload: twice the keys, not twice the work."""

    def cpu(keys: int) -> float:
        payload = {f"k{i}": i for i in range(keys)}
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            digest(brief(payload))
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(100_000), cpu(400_000)
    # Quadratic (it was): about 16 times; linear: about 4; bounded: about 1.
    assert large < 2.5 * small, (small, large)
