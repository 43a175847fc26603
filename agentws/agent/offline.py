"""OfflineModel: a deterministic digest of the event, written without a language model.

It is the default when no model is configured, so that a fresh install turns
every event into a useful message: what happened (the sender's event type,
action and outcome), the fields that usually matter (ids, names, statuses,
amounts, links), and the fields the webhook's prompt asks about, found by
name. The common senders' events (GitHub, Stripe, Standard Webhooks) are read
as their senders mean them (:mod:`agentws.agent.sender_facts`): a push's
branch and commits, amounts in their currency. A payload with none of the
usual fields (``{"alert": "disk full", "host": "db-1"}``) gets its first
few top-level fields instead. It calls no tools and says plainly that no
model wrote it. Values under keys that look like credentials are never
repeated, nor the credentials a URL carries (``https://user:pass@host``,
``?token=``): each is shown as ``***``.
"""

from __future__ import annotations

import json
import re
from collections import deque
from itertools import islice
from typing import Any

import attrs

from agentws.agent.model import EventBrief, ModelReply, ModelRequest
from agentws.agent.sender_facts import sender_facts
from agentws.core.redaction import hide_url_credentials

__all__ = ["OFFLINE_NOTE", "OfflineModel", "digest"]

OFFLINE_NOTE = (
    "_Digest written without a language model (offline mode): set ANTHROPIC_API_KEY "
    "for the agent's own answer._"
)
# The offline model reads the payload as data, so it has no context to fill;
# still, a payload this large is cut as it would be for a model.
_PAYLOAD_BYTES = 256 * 1024
# Fields listed at most, in each part of the digest.
_MAX_KEY_FIELDS = 10
_MAX_ASKED = 8
# How deep into the payload fields are looked for.
_MAX_DEPTH = 5
# Values of a payload a digest looks at, at most (shallow ones first).
_MAX_NODES = 20_000
# A value longer than this is cut in the message.
_MAX_VALUE_CHARS = 160
# How much of a value is read for the URLs in it (more than is shown: a URL's
# user info must be seen whole to be hidden, though only its start is shown).
_SCAN_CHARS = 1024
# Top-level fields listed, at most, of a payload with none of the usual fields.
_MAX_TOP_FIELDS = 6

# Key names that say what happened, in order of preference.
_EVENT_KEYS = ("event", "type", "event_type", "eventType", "kind", "topic", "hook_event_name")
# Key names whose value says how it turned out.
_OUTCOME_KEYS = ("conclusion", "status", "state", "result", "outcome", "severity", "level")
# Key names worth showing whatever the event, best first.
_KEY_FIELDS = (
    "full_name",
    "name",
    "title",
    "summary",
    "id",
    "number",
    "conclusion",
    "status",
    "state",
    "action",
    "head_branch",
    "branch",
    "ref",
    "head_sha",
    "environment",
    "customer",
    "customer_email",
    "email",
    "login",
    "amount",
    "amount_due",
    "amount_paid",
    "currency",
    "attempt_count",
    "reason",
    "error",
    "message",
    "html_url",
    "hosted_invoice_url",
    "url",
)
_SECRET_KEY = re.compile(
    r"secret|token|passw|passphrase|api[_-]?key|private[_-]?key|signature|credential"
    r"|authori[sz]ation|cookie|session[_-]?id",
    re.I,
)
# Words of four letters or more, in any script.
_WORD = re.compile(r"[^\W\d_]\w{3,}")
# A field path longer than this is cut in the message.
_MAX_PATH_CHARS = 80
# Words of a prompt that are not about a field.
_STOPWORD_TEXT = """
about above after again against all also and any are as because been before being
below between both but can could did does doing down during each event events few for
from further had has have having here how into its itself just like more most must not
now off once only other our out over own post posts same say should some such than
that the their them then there these they this those through too under until very was
were what when where which while who whom why will with would you your message
messages channel summary summarise summarize report tell write short brief please
include mention include list field fields payload webhook agent give keep what
happened anything something
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@attrs.frozen
class OfflineModel:
    """The stand-in model: one turn, a digest, no tool calls, no network."""

    name: str = "offline"
    max_payload_bytes: int = _PAYLOAD_BYTES

    async def reply(self, request: ModelRequest) -> ModelReply:
        return ModelReply(text=digest(request.brief))


def digest(brief: EventBrief) -> str:
    """The message for ``brief``: what happened, key fields, what the prompt asks about."""
    payload = brief.payload
    leaves = list(_leaves(payload))
    facts = sender_facts(payload, brief.headers)
    happened = _show(facts.headline) if facts else _what_happened(payload, brief.headers)
    lines = [f"*{_show(brief.webhook_name)}*: {happened}"]
    shown_as = facts.shown if facts else {}
    if facts and facts.lines:
        lines += ["", *(_show(line) for line in facts.lines)]
    key_fields = _key_fields(leaves)
    if key_fields:
        lines += ["", "Key fields:"]
        lines += [
            f"• {_path(path)}: {shown_as.get(path) or _show(value)}" for path, value in key_fields
        ]
    elif facts is None and isinstance(payload, dict) and (top := _top_fields(payload)):
        lines += ["", "Fields:", *top]
    shown = {path for path, _ in key_fields}
    asked = _asked_about(brief.prompt, leaves, facts.terms if facts else {})
    if asked:
        lines += ["", "Asked about in the prompt:"]
        for word, path, value, named in asked:
            if named:
                lines.append(f"• {word}: {_show(value)} ({_path(path)})")
            elif path in shown:
                lines.append(f"• {word}: {_path(path)} (above)")
            else:
                lines.append(f"• {word}: {_path(path)} = {shown_as.get(path) or _show(value)}")
    if brief.truncated:
        lines += [
            "",
            f"The payload was {brief.original_bytes} bytes; only part of it was read.",
        ]
    lines += ["", OFFLINE_NOTE]
    return "\n".join(lines)


def _leaves(value: Any, path: str = "", depth: int = 0) -> Any:
    """``(path, key, value)`` of the scalars in ``value``, shallow ones first.

    At most ``_MAX_NODES`` values are looked at: a digest names a few fields,
    and a payload may hold a million.
    """
    queue: deque[tuple[str, str, Any, int]] = deque([(path, "", value, depth)])
    looked = 0
    while queue and looked < _MAX_NODES:
        prefix, key, item, level = queue.popleft()
        looked += 1
        if isinstance(item, dict):
            if level >= _MAX_DEPTH:
                continue
            for name, child in islice(item.items(), _MAX_NODES - looked - len(queue)):
                if _SECRET_KEY.search(str(name)[:_SCAN_CHARS]):
                    continue
                child_path = f"{prefix}.{name}" if prefix else str(name)
                queue.append((child_path, str(name), child, level + 1))
        elif isinstance(item, list):
            # The first item stands for a list: a digest does not enumerate.
            if item and level < _MAX_DEPTH:
                queue.append((f"{prefix}[0]", key, item[0], level + 1))
        elif item is not None and item != "":
            yield prefix, key, item


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    text = hide_url_credentials(" ".join(str(text)[:_SCAN_CHARS].split()))
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 1] + "…"
    return text


def _top_fields(payload: dict[str, Any]) -> list[str]:
    """The first few top-level fields, one line each; an object or a list by its size."""
    # The first few names only: a payload may have a million.
    names = list(
        islice(
            (name for name in payload if not _SECRET_KEY.search(str(name)[:_SCAN_CHARS])),
            _MAX_TOP_FIELDS,
        )
    )
    lines = []
    for name in names:
        value = payload[name]
        if isinstance(value, dict):
            shown = f"(an object of {len(value)} field{'s' if len(value) != 1 else ''})"
        elif isinstance(value, list):
            shown = f"(a list of {len(value)} item{'s' if len(value) != 1 else ''})"
        else:
            shown = _show(value)
        lines.append(f"• {_path(str(name))}: {shown}")
    if len(payload) > len(names):
        lines.append(f"• … and {len(payload) - len(names)} more")
    return lines


def _path(path: str) -> str:
    shown = _show(path)
    if len(shown) > _MAX_PATH_CHARS:
        shown = "…" + shown[-(_MAX_PATH_CHARS - 1) :]
    return shown


def _first(payload: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(payload, dict):
        return None
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
            return value
    return None


def _what_happened(payload: Any, headers: dict[str, str]) -> str:
    kind = headers.get("x-github-event") or headers.get("x-gitlab-event")
    kind = kind or headers.get("x-shopify-topic") or headers.get("x-event-type")
    kind = kind or _first(payload, _EVENT_KEYS)
    action = _first(payload, ("action",))
    # The object the event is about: GitHub names it after the event, Stripe
    # puts it in data.object, others nest it under a key of their own.
    subject: Any = None
    if isinstance(payload, dict):
        if isinstance(kind, str) and isinstance(payload.get(kind), dict):
            subject = payload[kind]
        elif isinstance(payload.get("data"), dict):
            data = payload["data"]
            subject = data.get("object") if isinstance(data.get("object"), dict) else data
    outcome = _first(subject, _OUTCOME_KEYS) or _first(payload, _OUTCOME_KEYS)
    name = _first(subject, ("name", "title", "display_title", "description"))
    where = None
    if isinstance(payload, dict) and isinstance(payload.get("repository"), dict):
        where = _first(payload["repository"], ("full_name", "name"))
    parts = [_show(kind) if kind is not None else "an event"]
    if action is not None and action != kind:
        parts.append(_show(action))
    text = " ".join(parts)
    if name is not None:
        text += f" — {_show(name)}"
    if where is not None:
        text += f" in {_show(where)}"
    if outcome is not None and outcome != action:
        text += f": {_show(outcome)}"
    return text


def _key_fields(leaves: list[tuple[str, str, Any]]) -> list[tuple[str, Any]]:
    rank = {key: i for i, key in enumerate(_KEY_FIELDS)}
    found = [
        (rank[key], i, path, value) for i, (path, key, value) in enumerate(leaves) if key in rank
    ]
    picked: list[tuple[str, Any]] = []
    seen_keys: dict[str, int] = {}
    for _, _, path, value in sorted(found):
        key = path.rsplit(".", 1)[-1]
        # The same key from many nested objects (every "id") is noise after two.
        if seen_keys.get(key, 0) >= 2:
            continue
        seen_keys[key] = seen_keys.get(key, 0) + 1
        picked.append((path, value))
        if len(picked) >= _MAX_KEY_FIELDS:
            break
    order = {path: i for i, (path, _, _) in enumerate(leaves)}
    return sorted(picked, key=lambda item: order[item[0]])


def _object_named(
    word: str, terms: tuple[str, ...], leaves: list[tuple[str, str, Any]]
) -> tuple[str, str, Any] | None:
    """An object the prompt names (``repository``), shown by its name or id."""
    for wanted in ("full_name", "name", "title", "id"):
        for path, key, value in leaves:
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            if key == wanted and parent.rsplit(".", 1)[-1].lower() in terms:
                return word, path, value
    return None


def _asked_about(
    prompt: str, leaves: list[tuple[str, str, Any]], terms: dict[str, tuple[str, str]]
) -> list[tuple[str, str, Any, bool]]:
    """``(word, path, value, named)`` for each word of the prompt that names a field.

    ``named``: found among the sender's ``terms`` (a push's branch is its
    ``ref``), whose value is the fact itself rather than the field's.
    """
    asked: list[tuple[str, str, Any, bool]] = []
    seen: set[str] = set()
    for word in _WORD.findall(prompt):
        term = word.lower()
        if term in _STOPWORDS or term in seen:
            continue
        seen.add(term)
        singular = term[:-1] if term.endswith("s") and len(term) > 3 else term
        match: tuple[str, str, Any, bool] | None = None
        named = terms.get(term) or terms.get(singular)
        if named is not None:
            match = (word, named[0], named[1], True)
        for path, key, value in leaves if match is None else ():
            parts = key.lower().split("_")
            if key.lower() in (term, singular) or singular in parts:
                match = (word, path, value, False)
                break
        if match is None:
            found = _object_named(word, (term, singular), leaves)
            match = (*found, False) if found else None
        if match is not None and all(match[1] != a[1] for a in asked):
            asked.append(match)
        if len(asked) >= _MAX_ASKED:
            break
    return asked
