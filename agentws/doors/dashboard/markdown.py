"""Chat messages as the dashboard draws them: Markdown, and Slack's mrkdwn, made safe HTML.

The agent writes its messages in Markdown as models write it, and the
service's own messages (the offline digest, approval reports, alerts) in
the style Slack reads: ``*ci*`` for bold, ``_note_`` for italics,
``<https://…|text>`` for a link. :func:`render_markdown` (the ``markdown``
filter) draws both with markdown-it-py's CommonMark parser, so:

- ``*text*`` is bold, as in Slack (CommonMark would make it italic); ``**text**``
  too; ``_text_`` is italic; ``~text~`` and ``~~text~~`` are struck through;
- ``<url|text>`` is a link reading ``text``; a newline is a line break;
- raw HTML is never HTML: ``<script>`` is shown as text (``"html": False``);
- links go only to ``http:``, ``https:`` and ``mailto:`` addresses (any other
  is left as the text it was written as), with
  ``rel="noopener noreferrer nofollow"``;
- an image is never loaded (the page would fetch another site's address,
  and the CSP forbids it anyway): it is drawn as a link to its address;
- characters that draw nothing or reorder text are written as escapes
  first, as everywhere in the dashboard (:mod:`agentws.doors.dashboard.visible`).

Code spans and blocks are left as they are (mrkdwn's translation skips them).

Drawing is pure Python, 7 to 11 µs a character for the worst texts (``[``
or ``![`` repeated; a model writes what a payload's injected prompt tells it
to), and a channel's page draws its 100 newest messages. So a message is
drawn from its first :data:`DRAWN_CHARS` characters only, ending with ``…``
where it was cut (the Channels page shows the whole text beside it, as
text), and :func:`draw_messages` draws a page's messages in a worker
thread, where pure Python gives the event loop its turn every few
milliseconds instead of holding it for the whole page.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import trio
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markupsafe import Markup

from agentws.doors.dashboard.visible import visible

__all__ = ["DRAWN_CHARS", "LINK_REL", "draw_messages", "render_markdown"]

#: What every link of a message says of itself: no window handle, no referrer, no endorsement.
LINK_REL = "noopener noreferrer nofollow"
_SCHEMES = ("http://", "https://", "mailto:")

# Messages drawn lately, kept drawn: a message never changes, and a channel's page
# draws its 100 newest at every load (about 1 ms each for a 1 KB message). Only
# messages up to _CACHED_CHARS are kept, so the cache holds a few MB at most.
_CACHED = 256
_CACHED_CHARS = 8192
#: A message is drawn from this many characters at most (all of them kept drawn).
DRAWN_CHARS = _CACHED_CHARS
# Where a longer message is cut: the last line end this far before the bound, if any.
_CUT_AT_LINE = 1024

_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
# Slack's link: <https://example.com/a|the text>; the address without spaces or brackets.
_SLACK_LINK = re.compile(r"<((?:https?://|mailto:)[^\s|<>]+)\|([^<>\n]+)>")
# Slack's strike: one tilde on each side (two already mean strike in Markdown).
_SLACK_STRIKE = re.compile(r"(?<![~\w])~(?=[^\s~])([^~\n]+?)(?<=[^\s~])~(?![~\w])")
_LABEL_SPECIALS = re.compile(r"([\[\]\\])")


def _allowed(url: str) -> bool:
    return url.strip().lower().startswith(_SCHEMES)


def _slack_link(match: re.Match[str]) -> str:
    label = _LABEL_SPECIALS.sub(r"\\\1", match.group(2))
    return f"[{label}](<{match.group(1)}>)"


def _from_mrkdwn(text: str) -> str:
    """Slack's links and strikes in Markdown's syntax, outside code."""

    def prose(part: str) -> str:
        part = _SLACK_LINK.sub(_slack_link, part)
        return _SLACK_STRIKE.sub(r"~~\1~~", part)

    out: list[str] = []
    last = 0
    for match in _CODE.finditer(text):
        out.append(prose(text[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(prose(text[last:]))
    return "".join(out)


def _link_open(href: str, title: str | None) -> Token:
    token = Token("link_open", "a", 1)
    token.attrSet("href", href)
    if title:
        token.attrSet("title", title)
    return token


def _safe_inline(state: StateCore) -> None:
    """Slack's bold, links marked, images made links: a pass over the parsed inline tokens."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        for token in block.children:
            if token.type in ("em_open", "em_close") and token.markup == "*":
                token.type = token.type.replace("em_", "strong_")
                token.tag = "strong"
            if token.type == "link_open":
                token.attrSet("rel", LINK_REL)
            if token.type == "image":
                src = str(token.attrGet("src") or "")
                title = token.attrGet("title")
                link = _link_open(src, str(title) if title else None)
                link.attrSet("rel", LINK_REL)
                label = Token("text", "", 0)
                label.content = "image: " + (token.content or src)
                children += [link, label, Token("link_close", "a", -1)]
                continue
            children.append(token)
        block.children = children


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True})
    md.enable("strikethrough")
    md.validateLink = _allowed  # type: ignore[method-assign]
    md.core.ruler.push("agentws_safe_inline", _safe_inline)
    return md


_MD = _parser()


def _html(text: str) -> str:
    html: str = _MD.render(_from_mrkdwn(str(visible(text))))
    return html


_cached_html = functools.lru_cache(maxsize=_CACHED)(_html)


def render_markdown(text: Any) -> Markup:
    """The ``markdown`` filter: ``text`` (a chat message) as safe HTML; see the module."""
    if text is None:
        return Markup("")
    text = str(text)
    cut = len(text) > DRAWN_CHARS
    if cut:
        line_end = text.rfind("\n", DRAWN_CHARS - _CUT_AT_LINE, DRAWN_CHARS)
        text = text[: line_end if line_end > 0 else DRAWN_CHARS]
    # markdown-it escapes every text and attribute it writes; raw HTML is off.
    html = _cached_html(text)
    return Markup(html + "<p>…</p>\n" if cut else html)  # noqa: S704


async def draw_messages(texts: Sequence[str]) -> list[Markup]:
    """Each of ``texts`` as :func:`render_markdown` draws it, drawn in a worker thread.

    Resource handling:
        One thread per call, from trio's thread pool; the event loop waits
        for it without holding the GIL's every turn.
    """
    return await trio.to_thread.run_sync(lambda: [render_markdown(text) for text in texts])
