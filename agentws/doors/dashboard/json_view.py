"""JSON shown indented, cut by its structure once the view is long enough: :func:`indented`.

The event page shows a webhook's body, which its sender chose and which may
be megabytes (10 MiB before webhooks were held to 2 MiB); parsing it all and
indenting it with :mod:`json` (whose indenting encoder is pure Python) took
2.2 s of the event loop and made a 45 MB page.
:func:`indented` reads the JSON text token by token and stops once it has
written ``limit`` characters: its work is bounded by the view, not by the
body. What it could not show it says it cut (``…``), closing the brackets
still open, so the view stays readable as JSON; the page links to the whole
body. Strings are written as :func:`json.dumps` writes them (escapes decoded);
numbers and literals as they were sent. A text that is not JSON is shown as
text, cut at ``limit``.
"""

from __future__ import annotations

import json
import re

import attrs

__all__ = ["JsonView", "indented"]

# One token after optional whitespace: a string, an opening, a closing, a comma, a colon,
# or a number or literal. Each repetition is possessive: a token is read once.
_TOKEN = re.compile(
    r'\s*+(?:("[^"\\]*+(?:\\.[^"\\]*+)*+")|([{\[])|([}\]])|(,)|(:)|([^\s{}\[\],:"]++))',
    re.DOTALL,
)
_STRING, _OPEN, _CLOSE, _COMMA, _COLON, _ATOM = range(1, 7)
_CLOSING = {"{": "}", "[": "]"}
_INDENT = "  "
# Input read at most, per character of the view: what is not shown need not be read, but
# whitespace and escapes take more input than view.
_INPUT_PER_VIEW_CHAR = 4


@attrs.frozen
class JsonView:
    """JSON text indented for people, and whether some of it is not shown."""

    text: str
    cut: bool


def indented(document: bytes | str, *, limit: int) -> JsonView:
    """``document`` (JSON text) indented by two spaces, at most ``limit`` characters.

    Past ``limit`` the view ends with ``…`` where the rest would be, and the
    brackets still open are closed (``cut`` is True). Text that is not JSON
    is shown as it is, to ``limit`` characters.
    """
    read = limit * _INPUT_PER_VIEW_CHAR
    if isinstance(document, bytes):
        whole = len(document) <= read
        text = document[:read].decode("utf-8", "replace")
    else:
        whole = len(document) <= read
        text = document[:read]
    view = _indent(text, limit, whole)
    if view is None:
        return JsonView(text[:limit], len(text) > limit or not whole)
    return view


def _indent(text: str, limit: int, whole: bool) -> JsonView | None:
    """The view of JSON ``text``, or None if it is not JSON (as far as it was read)."""
    out: list[str] = []
    size = 0
    brackets: list[str] = []  # the containers open, outermost first
    wants_value = True  # at the start, and after an opening, a comma or a colon
    opened = False  # the last token opened a container: an empty one closes on its line
    at = 0
    while (token := _TOKEN.match(text, at)) is not None:
        at = token.end()
        kind = token.lastindex
        value = token.group(kind or 0)
        depth = len(brackets)  # after this token
        if kind == _CLOSE:
            if not brackets or _CLOSING[brackets[-1]] != value or (wants_value and not opened):
                return None
            depth -= 1
            piece = value if opened else "\n" + _INDENT * depth + value
            wants_value = False
        elif kind in (_COMMA, _COLON):
            if wants_value or not brackets or (kind == _COLON and brackets[-1] != "{"):
                return None
            piece = ",\n" + _INDENT * depth if kind == _COMMA else ": "
            wants_value = True
        else:
            if not wants_value or (not brackets and out):
                return None
            piece = "\n" + _INDENT * depth if opened else ""
            if kind == _OPEN:
                piece += value
                depth += 1
            else:
                piece += _string(value) if kind == _STRING else value
                wants_value = False
        # What a cut after this piece adds: "…" on a line of its own, and the closings.
        if size + len(piece) + _cut_chars(depth) > limit:
            if kind == _STRING:  # a long string: its start
                out.append(piece[: max(0, limit - size - _cut_chars(depth))])
                return _cut(out, brackets)
            return _cut(out, brackets, own_line=True)
        out.append(piece)
        size += len(piece)
        if kind == _OPEN:
            brackets.append(value)
        elif kind == _CLOSE:
            brackets.pop()
        opened = kind == _OPEN
    rest = text[at:].lstrip()
    if rest:
        # Not a token: not JSON, or a string the input read ends in (its start is shown).
        if whole or not out or not rest.startswith('"') or not wants_value:
            return None if whole or not out else _cut(out, brackets)
        start = "\n" + _INDENT * len(brackets) if opened else ""
        out.append((start + rest)[: max(0, limit - size - _cut_chars(len(brackets)))])
        return _cut(out, brackets)
    if brackets or wants_value:
        return _cut(out, brackets) if out and not whole else None
    return JsonView("".join(out), not whole)


def _cut_chars(depth: int) -> int:
    """The length of what :func:`_cut` adds at ``depth``: ``…`` on a line of its own and a
    line closing each container (``depth + 1`` characters at ``depth``)."""
    return 2 + 2 * depth + depth * (depth + 1)


def _cut(out: list[str], brackets: list[str], *, own_line: bool = False) -> JsonView:
    """The view so far, saying where the rest would be (on a line of its own between
    values), with what is open closed."""
    if own_line and brackets:
        out = ["".join(out).rstrip(), "\n" + _INDENT * len(brackets)]
    out.append("…")
    for depth in range(len(brackets) - 1, -1, -1):
        out.append("\n" + _INDENT * depth + _CLOSING[brackets[depth]])
    return JsonView("".join(out), True)


def _string(token: str) -> str:
    """A JSON string token as :func:`json.dumps` writes it, escapes decoded (bar those it keeps)."""
    if "\\" not in token:
        return token
    try:
        return json.dumps(json.loads(token), ensure_ascii=False)
    except ValueError:
        return token
