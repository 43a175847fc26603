"""Characters that draw nothing or reorder what follows, and their visible escapes.

Text from outside (a self-registered OAuth client's name, a webhook body,
a tool's arguments) may hold characters that make a screen show something
else than what is there: a terminal control sequence (``ESC [ 2 J``
clears the screen, ``ESC ] 0 ;`` retitles the window), a right-to-left
override that turns ``invoice‮fdp.exe`` into what reads as
``invoiceexe.pdf``, a zero-width space or a Unicode tag character that
hides text from the eye. :data:`HIDDEN` finds them; :func:`show_hidden`
writes each as a visible escape (``\\u202e``; ``\\U000e0041`` beyond the
BMP). Tab, line feed and carriage return are not in it: each door decides
about those (the dashboard keeps them; the CLI escapes a lone CR).

The dashboard (:mod:`agentws.doors.dashboard.visible`) and the CLI
(:mod:`agentws.cli.output`) both show text through this one set.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN", "escape_match", "show_hidden"]

HIDDEN = re.compile(
    "["
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 (but tab, LF, CR), DEL, C1
    "\u00ad"  # soft hyphen
    "\u034f"  # combining grapheme joiner
    "\u061c"  # Arabic letter mark
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers: blank letters
    "\u180e"  # Mongolian vowel separator
    "\u200b-\u200f"  # zero-width space, (non-)joiner, left-to-right and right-to-left marks
    "\u2028-\u202e"  # line and paragraph separators; bidi embeddings and overrides
    "\u2060-\u206f"  # word joiner, invisible operators; bidi isolates; deprecated formats
    "\ufeff"  # zero-width no-break space (byte order mark)
    "\ufff9-\ufffb"  # interlinear annotation
    "\ud800-\udfff"  # lone surrogates (no stored text holds one; no encoder takes one)
    "\U0001d173-\U0001d17a"  # musical formatting
    "\U000e0000-\U000e007f"  # tags: invisible copies of ASCII
    "]"
)


def escape_match(match: re.Match[str]) -> str:
    """The visible escape of the one character ``match`` found."""
    point = ord(match.group())
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def show_hidden(text: str) -> str:
    """``text`` with each character of :data:`HIDDEN` written as its escape."""
    return HIDDEN.sub(escape_match, text) if HIDDEN.search(text) else text
