"""What the common senders' events say, read the way each sender means them.

The offline digest (:mod:`agentws.agent.offline`) reads any payload by its
keys. For the shapes most webhooks come in, that reading gets facts wrong:
a GitHub push names its branch in ``ref`` (``refs/heads/<branch>``), not in
the one key that has "branch" in its name (the repository's default); its
commits are a list a digest must not cut to the first; Stripe's amounts are
integers in the currency's minor unit (``amount_due: 129900`` in ``usd`` is
1,299.00 USD). :func:`sender_facts` recognises:

- GitHub (its ``X-GitHub-Event`` header): ``push`` (branch or tag from
  ``ref``, created / deleted / forced, the commits), ``pull_request``
  (number, title, branches, merged), ``workflow_run`` / ``workflow_job`` /
  ``check_run`` / ``check_suite`` (name, branch, outcome), ``issues`` and
  ``issue_comment``, ``release``; any other GitHub event by its name,
  action, repository and sender;
- Stripe events (``"object": "event"``): the type, the object and its id,
  the customer, and every amount beside a ``currency`` formatted in it;
- Standard Webhooks envelopes (``type``, ``timestamp``, ``data``): the type
  and what ``data`` names.

Each recognised event gives a headline, lines of facts, the values shown
for fields the payload holds in another form (formatted amounts), and
terms a prompt may use for a fact (``branch`` for a push's ``ref``).
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Facts", "format_minor_units", "sender_facts"]

# Commits listed for a push; the rest are counted.
_MAX_COMMITS = 5
# Stripe's zero-decimal and three-decimal currencies (docs.stripe.com/currencies).
_ZERO_DECIMAL = frozenset({"bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga"}) | frozenset(
    {"pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"}
)
_THREE_DECIMAL = frozenset({"bhd", "jod", "kwd", "omr", "tnd"})
# Keys that hold an amount in minor units when a currency sits beside them.
_AMOUNT_KEYS = (
    frozenset({"amount", "amount_due", "amount_paid", "amount_remaining"})
    | frozenset({"amount_refunded", "amount_captured", "amount_received", "amount_capturable"})
    | frozenset({"amount_total", "amount_subtotal", "unit_amount", "total", "subtotal", "tax"})
    | frozenset({"balance", "starting_balance", "ending_balance"})
)
# How deep into a Stripe object amounts are looked for.
_AMOUNT_DEPTH = 4


@attrs.frozen
class Facts:
    """What a recognised event says.

    Attributes:
        headline: what happened, for the digest's first line.
        lines: further facts, one line each (a push's commits, say).
        shown: payload paths whose value is better shown another way (a
            formatted amount), path -> text.
        terms: words a prompt may use for a fact, word -> (what, value).
    """

    headline: str
    lines: tuple[str, ...] = ()
    shown: dict[str, str] = attrs.field(factory=dict)
    terms: dict[str, tuple[str, str]] = attrs.field(factory=dict)


def sender_facts(payload: Any, headers: dict[str, str]) -> Facts | None:
    """The facts of a GitHub, Stripe or Standard Webhooks event; None for another shape."""
    if not isinstance(payload, dict):
        return None
    github_event = headers.get("x-github-event")
    if github_event:
        return _github(github_event, payload)
    if payload.get("object") == "event" and isinstance(payload.get("type"), str):
        return _stripe(payload)
    if (
        isinstance(payload.get("type"), str)
        and isinstance(payload.get("data"), dict)
        and "timestamp" in payload
    ):
        return _standard(payload)
    return None


def format_minor_units(amount: int, currency: str) -> str:
    """``129900, "usd"`` -> ``"1,299.00 USD"``; ``500, "jpy"`` -> ``"500 JPY"``."""
    code = currency.lower()
    places = 0 if code in _ZERO_DECIMAL else 3 if code in _THREE_DECIMAL else 2
    sign = "-" if amount < 0 else ""
    whole, part = divmod(abs(amount), 10**places)
    text = f"{whole:,}" + (f".{part:0{places}d}" if places else "")
    return f"{sign}{text} {code.upper()}"


# --- GitHub ------------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return " ".join(value.split())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _get(payload: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(payload, dict):
            return None
        payload = payload.get(key)
    return payload


def _github(event: str, payload: dict[str, Any]) -> Facts:
    action = _text(payload.get("action"))
    repo = _text(_get(payload, "repository", "full_name"))
    sender = _text(_get(payload, "sender", "login"))
    if event == "push":
        return _push(payload, repo)
    subject = payload.get(event) if isinstance(payload.get(event), dict) else {}
    head = f"{event} {action}" if action else event
    terms: dict[str, tuple[str, str]] = {}
    lines: list[str] = []
    if event == "pull_request" and subject:
        if action == "closed" and subject.get("merged") is True:
            head = f"{event} merged"
        head += _numbered(subject)
        base, branch = _text(_get(subject, "base", "ref")), _text(_get(subject, "head", "ref"))
        if branch and base:
            lines.append(f"Branch: {branch} → {base}")
            terms["branch"] = ("pull_request.head.ref", branch)
    elif event in ("issues", "issue_comment") and isinstance(payload.get("issue"), dict):
        head += _numbered(payload["issue"])
    elif event in ("workflow_run", "workflow_job", "check_run", "check_suite") and subject:
        name = _text(subject.get("name")) or _text(_get(subject, "app", "name"))
        branch = _text(subject.get("head_branch"))
        if name:
            head += f" — {name}"
        if branch:
            head += f" on {branch}"
        outcome = _text(subject.get("conclusion")) or _text(subject.get("status"))
        if repo:
            head += f" in {repo}"
            repo = None
        if outcome and outcome != action:
            head += f": {outcome}"
    elif event == "release" and subject:
        tag = _text(subject.get("tag_name"))
        if tag:
            head += f" — {tag}"
    if repo:
        head += f" in {repo}"
    if sender:
        head += f" by {sender}"
    return Facts(headline=head, lines=tuple(lines), terms=terms)


def _numbered(item: dict[str, Any]) -> str:
    number, title = _text(item.get("number")), _text(item.get("title"))
    if number and title:
        return f" — #{number} {title}"
    return f" — {title}" if title else ""


def _push(payload: dict[str, Any], repo: str | None) -> Facts:
    ref = _text(payload.get("ref")) or ""
    kind, name = "branch", ref
    if ref.startswith("refs/heads/"):
        name = ref[len("refs/heads/") :]
    elif ref.startswith("refs/tags/"):
        kind, name = "tag", ref[len("refs/tags/") :]
    commits = [c for c in payload.get("commits") or [] if isinstance(c, dict)]
    if payload.get("deleted") is True:
        head = f"push: {kind} {name} deleted"
    elif payload.get("created") is True:
        head = f"push: new {kind} {name}"
    else:
        head = f"push to {name}" if kind == "branch" else f"push of tag {name}"
    if repo:
        head += f" in {repo}"
    pusher = _text(_get(payload, "pusher", "name")) or _text(_get(payload, "sender", "login"))
    if pusher:
        head += f" by {pusher}"
    if payload.get("forced") is True:
        head += " (forced)"
    if commits:
        head += f", {len(commits)} commit{'s' if len(commits) != 1 else ''}"
    lines = [_commit_line(commit) for commit in commits[:_MAX_COMMITS]]
    if len(commits) > _MAX_COMMITS:
        lines.append(f"… and {len(commits) - _MAX_COMMITS} more")
    compare = _text(payload.get("compare"))
    if compare and commits:
        lines.append(f"Compare: {compare}")
    terms = {kind: ("ref", name), "ref": ("ref", name)}
    if kind == "tag":  # a prompt asking for "the branch" must not get the default branch
        terms["branch"] = ("ref", f"none, {name} is a tag")
    return Facts(headline=head, lines=tuple(lines), terms=terms)


def _commit_line(commit: dict[str, Any]) -> str:
    sha = (_text(commit.get("id")) or "")[:7]
    message = (commit.get("message") or "").strip().splitlines()
    title = " ".join(message[0].split()) if message else "(no message)"
    author = _text(_get(commit, "author", "name")) or _text(_get(commit, "author", "username"))
    return f"• {sha} {title}" + (f" — {author}" if author else "")


# --- Stripe ------------------------------------------------------------------------------------


def _stripe(payload: dict[str, Any]) -> Facts:
    kind = str(payload["type"])
    subject = _get(payload, "data", "object")
    if not isinstance(subject, dict):
        return Facts(headline=kind)
    shown = dict(_amounts(subject, "data.object", 0))
    head = kind
    object_kind, object_id = _text(subject.get("object")), _text(subject.get("id"))
    if object_kind and object_id:
        head += f" — {object_kind} {object_id}"
    customer = (
        _text(subject.get("customer_email"))
        or _text(subject.get("receipt_email"))
        or _text(_get(subject, "billing_details", "email"))
        or _text(subject.get("customer"))
    )
    if customer:
        head += f" for {customer}"
    for key in ("amount_due", "amount", "amount_total", "total"):
        if f"data.object.{key}" in shown:
            head += f": {shown[f'data.object.{key}']}"
            if key == "amount_due":
                head += " due"
            break
    status = _text(subject.get("status"))
    if status:
        head += f" ({status})"
    terms = {"amount": ("amount", shown[next(iter(shown))])} if shown else {}
    return Facts(headline=head, shown=shown, terms=terms)


def _amounts(item: dict[str, Any], path: str, depth: int) -> list[tuple[str, str]]:
    """``(path, formatted)`` of every amount beside a currency, in ``item`` and below."""
    found: list[tuple[str, str]] = []
    currency = item.get("currency")
    for key, value in item.items():
        where = f"{path}.{key}"
        if (
            key in _AMOUNT_KEYS
            and isinstance(value, int)
            and not isinstance(value, bool)
            and isinstance(currency, str)
            and len(currency) == 3
        ):
            found.append((where, format_minor_units(value, currency)))
        elif isinstance(value, dict) and depth < _AMOUNT_DEPTH:
            found += _amounts(value, where, depth + 1)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            found += _amounts(value[0], f"{where}[0]", depth + 1) if depth < _AMOUNT_DEPTH else []
    return found


# --- Standard Webhooks -------------------------------------------------------------------------


def _standard(payload: dict[str, Any]) -> Facts:
    data: dict[str, Any] = payload["data"]
    head = str(payload["type"])
    named = next(
        (
            _text(data[key])
            for key in ("name", "title", "id", *sorted(k for k in data if k.endswith("_id")))
            if key in data and _text(data[key])
        ),
        None,
    )
    if named:
        head += f" — {named}"
    return Facts(headline=head)
