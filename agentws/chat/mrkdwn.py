"""Markdown, as models write it, to Slack's ``mrkdwn``.

Slack reads ``*bold*``, ``_italic_``, ``~strike~``, ``<url|text>`` links and
code spans and blocks, and wants ``&``, ``<`` and ``>`` escaped (they start
its own markup: ``<!channel>``, ``<@U…>``). Escaping also keeps a payload
quoted by the model from pinging the channel; the plain ``@channel``,
``@here`` and ``@everyone`` are made inert too (:mod:`agentws.chat.mentions`)
unless mentions are allowed, and then Slack's own ``<!channel>``,
``<!here>`` and ``<!everyone>`` are kept as they are. Code is left as it is,
but for the escaping.
"""

from __future__ import annotations

import re

from agentws.chat.mentions import quiet_at_mentions

__all__ = ["MAX_TEXT_CHARS", "to_mrkdwn"]

#: Slack truncates longer messages; we cut first, and say so.
MAX_TEXT_CHARS = 39_000

# Every pattern here reads each character a bounded number of times: the text is the
# model's, and a prompt injected into a payload can make it write anything. A pattern
# that searches on from an opening that is never closed (``.+?`` to the end of the line)
# is quadratic in the length of the line: 40,000 characters of ``**a `` took 2.4 s.
_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
# One level of parentheses in a URL (Wikipedia's ``Foo_(bar)``) stays in the URL. A
# label holds no ``[``: an opening bracket is read only up to the next one.
_LINK = re.compile(r"\[([^\[\]\n]+)\]\((https?://(?:[^()\s]|\([^()\s]*\))+)\)")
# Emphasis holds no pair of its markers (a single one is fine: ``**2*3**``), so an
# opening is read only up to the next pair.
_BOLD = re.compile(
    r"\*\*(?=\S)((?:[^*\n]|\*(?!\*))+?)(?<=\S)\*\*|__(?=\S)((?:[^_\n]|_(?!_))+?)(?<=\S)__"
)
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)((?:[^~\n]|~(?!~))+?)(?<=\S)~~")
# A heading's line; its closing ``#`` sequence is found by :func:`_heading`.
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+)$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[*-][ \t]+", re.MULTILINE)
_SPECIAL = re.compile(r"&lt;!(channel|here|everyone)((?:\|[^&<>\n]*)?)&gt;")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _styled(text: str) -> str:
    """Prose without links or code: escaped, then Markdown's styles in Slack's."""
    text = _escape(text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _ITALIC.sub(lambda m: f"_{m.group(1)}_", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _HEADING.sub(_heading, text)
    return _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)


def _heading(match: re.Match[str]) -> str:
    """A heading as one bold line (Slack has no nested bold), without its closing ``#``s."""
    text = match.group(1).rstrip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and unclosed[-1:] in (" ", "\t"):
        text = unclosed.rstrip(" \t")
    return "*" + text.replace("*", "") + "*" if text else match.group(0)


def _prose(text: str, mentions: bool) -> str:
    out: list[str] = []
    last = 0
    for match in _LINK.finditer(text):
        out.append(_styled(text[last : match.start()]))
        label = _escape(match.group(1)).replace("|", "¦")
        out.append(f"<{_escape(match.group(2))}|{label}>")
        last = match.end()
    out.append(_styled(text[last:]))
    prose = "".join(out)
    return _SPECIAL.sub(r"<!\1\2>", prose) if mentions else prose


def to_mrkdwn(markdown: str, *, mentions: bool = False) -> str:
    """``markdown`` as Slack shows it, cut to :data:`MAX_TEXT_CHARS`.

    ``mentions``: Slack's mass mentions may ping (else they are made inert).
    """
    # What could not be sent is not converted either.
    too_long = len(markdown) > MAX_TEXT_CHARS
    markdown = markdown[:MAX_TEXT_CHARS]
    if not mentions:
        markdown = quiet_at_mentions(markdown)
    out: list[str] = []
    last = 0
    for match in _CODE.finditer(markdown):
        out.append(_prose(markdown[last : match.start()], mentions))
        out.append(_escape(match.group(0)))
        last = match.end()
    out.append(_prose(markdown[last:], mentions))
    text = "".join(out)
    if too_long or len(text) > MAX_TEXT_CHARS:
        # Cut at a space, so that no escape or link is cut in half.
        cut = text.rfind(" ", 0, MAX_TEXT_CHARS - 40)
        cut = max(cut, text.rfind("\n", 0, MAX_TEXT_CHARS - 40))
        text = text[: cut if cut > 0 else MAX_TEXT_CHARS - 40].rstrip()
        text += "\n… (cut: the message was too long)"
    return text
