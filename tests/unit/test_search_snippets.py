"""A search hit's snippet is the same whatever the opening's length (``store/sql_catalog.py``).

The snippet is about two dozen words from a few before the first match,
matches marked ``**``, a cut shown as ``…``. It is made by splitting off only
the words around the first match; :func:`_reference` is the definition, by
splitting the whole opening into words.
"""

from __future__ import annotations

import random

import pytest

from agentws.store.sql_catalog import _CLOSE, _MARK, _OPEN, _SNIPPET_LEAD, _SNIPPET_WORDS, _snippet


def _reference(opening: str) -> str:
    words = opening.split()
    first = next((n for n, word in enumerate(words) if _OPEN in word), 0)
    start = max(0, first - _SNIPPET_LEAD)
    shown = " ".join(words[start : start + _SNIPPET_WORDS])
    if shown.count(_OPEN) > shown.count(_CLOSE):
        shown += _CLOSE
    shown = shown.replace(_OPEN, _MARK).replace(_CLOSE, _MARK)
    return ("…" if start else "") + shown + ("…" if start + _SNIPPET_WORDS < len(words) else "")


HIT = f"{_OPEN}refund{_CLOSE}"


@pytest.mark.parametrize(
    "opening",
    [
        "",
        "   ",
        HIT,
        f"{HIT} policy",
        " ".join(f"w{n}" for n in range(100)),  # no match: the opening's start
        " ".join([*(f"w{n}" for n in range(6)), HIT, *(f"v{n}" for n in range(17))]),
        " ".join([*(f"w{n}" for n in range(7)), HIT, *(f"v{n}" for n in range(17))]),
        " ".join([*(f"w{n}" for n in range(7)), HIT, *(f"v{n}" for n in range(18))]),
        " ".join([*(f"w{n}" for n in range(300)), f"pre{HIT}post", "tail"]),
        f"a\u00a0b\nc\td {_OPEN}open without close " + "x " * 40,
        "word" * 5000 + HIT,  # one long "word" before the match
    ],
)
def test_the_snippet_is_the_reference(opening: str) -> None:
    assert _snippet(opening) == _reference(opening)


def test_random_openings() -> None:
    rng = random.Random(20261129)  # noqa: S311 - reproducible test data, not a secret
    spaces = [" ", "  ", "\n", "\t", "\u00a0", "\u2003", "\x1c", ""]
    words = ["a", "deploy", "roll-back", "é—…", HIT, _OPEN + "hit", "hit" + _CLOSE, _OPEN, _CLOSE]
    for _ in range(20_000):
        opening = "".join(
            rng.choice(words[:4] if rng.random() < 0.85 else words) + rng.choice(spaces)
            for _ in range(rng.choice([0, 1, 5, 6, 7, 23, 24, 25, 31, 120]))
        )
        assert _snippet(opening) == _reference(opening), repr(opening)
