"""The words of an event that search finds it by, and what a search asks for.

Both stores index the same words, made here, so that a search finds the
same events on SQLite (FTS5) and on PostgreSQL (``tsvector``): the
databases' own tokenizers, which part ways on e-mail addresses, URLs,
accents and stop words, only ever see words already cut, folded and
lowercased by :func:`words_of`.

An event's words are the values of its allow-listed request headers (so
``push``, from ``X-GitHub-Event``, finds GitHub's pushes), then the string
and number values of its JSON body, in order. Keys are left out: every
event of a sender has the same keys, so they tell none apart. A word is a
run of letters and digits: everything else separates words, the
underscore included; case and accents are folded (``Crème`` is
``creme``, ``Łódź`` is ``lodz``), and "words" longer than :data:`MAX_WORD_CHARS` (hashes,
base64) are dropped. Only the first :data:`MAX_SCANNED_BYTES` of a body are
read, and at most :data:`MAX_WORDS` words kept: a body of many megabytes
costs the indexer no more than one of 256 KiB.

A search (:func:`parse_search`) is a list of parts that must all match,
anywhere in the event, in any order:

- ``word`` matches that word;
- ``word*`` matches words starting with it (at least 2 letters or digits);
- ``"several words"`` matches them next to each other, in that order (a
  phrase; it may run from one value into the next);
- text that folds to several words, such as ``alice@example.com`` or
  ``order-1234``, is a phrase of them (``alice example com``), so it finds
  the value it was copied from.

There is no OR and no NOT.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping

import attrs

from agentws.core.errors import ValidationError

__all__ = [
    "MAX_SCANNED_BYTES",
    "MAX_SEARCH_WORDS",
    "MAX_WORDS",
    "MAX_WORD_CHARS",
    "Search",
    "SearchPart",
    "event_words",
    "parse_search",
    "words_of",
]

#: Bytes of a body read for its words: the indexer's work per event is bounded.
MAX_SCANNED_BYTES = 256 * 1024
#: Words kept per event: PostgreSQL numbers a tsvector's positions up to 16,383,
#: and phrases must match the same on both stores.
MAX_WORDS = 16_383
#: Longer runs of letters and digits are no words a person types (hashes, base64).
MAX_WORD_CHARS = 100
#: Characters of all the words kept per event: a tsvector holds at most 1 MiB,
#: and a character is up to 4 bytes of it.
MAX_TEXT_CHARS = 200_000
#: Words one search may hold: each is a lookup in the index.
MAX_SEARCH_WORDS = 16
#: Letters of a prefix at least (``de*``): shorter ones match most of the index.
MIN_PREFIX_CHARS = 2

# Letters and digits; everything else separates words, the underscore
# included, as in context search (agentws.store.sql_catalog).
_WORD = re.compile(r"[^\W_]+")
# A JSON string literal (its text in group 1, a key when followed by ':'), or a
# number. Scanning tokens instead of parsing the document reads a prefix of
# any size in one pass, and a body cut off in the middle still gives the words
# before the cut.
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')
# Latin letters that carry their mark in themselves (no decomposition takes it
# off), written as a person without them on the keyboard would: Łódź is lodz.
_PLAIN = str.maketrans(
    {
        "ł": "l",
        "ø": "o",
        "đ": "d",
        "ð": "d",
        "ħ": "h",
        "ŧ": "t",
        "\u0131": "i",  # dotless i
        "ŀ": "l",
        "æ": "ae",
        "œ": "oe",
        "þ": "th",
    }
)
# A search's parts: a quoted phrase (maybe unterminated), or a run without spaces.
_PART = re.compile(r'"([^"]*)"?(\*?)|(\S+)')


def words_of(text: str) -> list[str]:
    """The words of ``text``: runs of letters and digits, case and accents folded."""
    if not text.isascii():
        # NFKD splits a letter from its accents (and ﬁ into f i), which are then dropped.
        decomposed = unicodedata.normalize("NFKD", text.casefold())
        text = "".join(c for c in decomposed if not unicodedata.combining(c)).translate(_PLAIN)
    else:
        text = text.lower()
    return [w for w in _WORD.findall(text) if len(w) <= MAX_WORD_CHARS]


def _body_values(body: bytes) -> Iterator[str]:
    """The string and number values of a JSON body, in order, from its first bytes."""
    text = body[:MAX_SCANNED_BYTES].decode("utf-8", "ignore")
    for token in _TOKEN.finditer(text):
        literal, key, number = token.groups()
        if number is not None:
            yield number
        elif key is None:
            if "\\" in literal:
                try:
                    literal = json.loads(f'"{literal}"')
                except ValueError:  # an escape cut off by the end of the scan
                    continue
            yield literal


def event_words(headers: Mapping[str, str], body: bytes) -> list[str]:
    """The words an event is found by: its headers' values, then its body's values.

    At most :data:`MAX_WORDS` (and :data:`MAX_TEXT_CHARS`), from the first
    :data:`MAX_SCANNED_BYTES` of the body.
    """
    found: list[str] = []
    chars = 0
    for value in _values(headers, body):
        for word in words_of(value):
            chars += len(word)
            if chars > MAX_TEXT_CHARS:
                return found
            found.append(word)
            if len(found) == MAX_WORDS:
                return found
    return found


def _values(headers: Mapping[str, str], body: bytes) -> Iterator[str]:
    yield from headers.values()
    yield from _body_values(body)


@attrs.frozen
class SearchPart:
    """Words that must appear next to each other, in order; the last maybe as a prefix."""

    words: tuple[str, ...]
    prefix: bool = False


@attrs.frozen
class Search:
    """What a search asks for: every part must match (see the module docstring)."""

    text: str
    parts: tuple[SearchPart, ...]


def parse_search(text: str) -> Search:
    """The search ``text`` asks for.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for text without a word,
        with more than :data:`MAX_SEARCH_WORDS` words, or with a prefix
        shorter than :data:`MIN_PREFIX_CHARS`.
    """
    parts: list[SearchPart] = []
    for match in _PART.finditer(text):
        quoted, star, bare = match.groups()
        if bare is not None:
            star = "*" if bare.endswith("*") else ""
            quoted = bare
        words = tuple(words_of(quoted))
        if not words:
            continue
        prefix = bool(star)
        if prefix and len(words[-1]) < MIN_PREFIX_CHARS:
            raise ValidationError(
                f"a prefix search needs at least {MIN_PREFIX_CHARS} letters or digits"
                f" before the *: {match[0]!r}"
            )
        part = SearchPart(words, prefix)
        if part not in parts:
            parts.append(part)
    if not parts:
        raise ValidationError("the search has no word to look for (letters or digits)")
    if sum(len(p.words) for p in parts) > MAX_SEARCH_WORDS:
        raise ValidationError(f"a search may hold {MAX_SEARCH_WORDS} words at most")
    return Search(text, tuple(parts))
