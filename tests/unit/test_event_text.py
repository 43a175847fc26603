"""The words an event is found by, what a search asks for, and the times a list is cut at."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentws.core.errors import ValidationError
from agentws.domain.event_lists import parse_time
from agentws.domain.event_text import (
    MAX_SCANNED_BYTES,
    MAX_SEARCH_WORDS,
    MAX_WORDS,
    Search,
    SearchPart,
    event_words,
    parse_search,
    words_of,
)
from agentws.store.sql_event_search import fts5_match, tsquery, tsvector

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_words_are_letters_and_digits_folded() -> None:
    assert words_of("Deploy FAILED: api-v2 (eu_west_1)") == [
        "deploy",
        "failed",
        "api",
        "v2",
        "eu",
        "west",
        "1",
    ]
    assert words_of("Crème brûlée, Zoë, Straße, Łódź, ﬁne") == [
        "creme",
        "brulee",
        "zoe",
        "strasse",
        "lodz",
        "fine",
    ]
    assert words_of("ann@example.com https://x.io/a?b=1") == [
        "ann",
        "example",
        "com",
        "https",
        "x",
        "io",
        "a",
        "b",
        "1",
    ]
    assert words_of("東京都 🚀 ship") == ["東京都", "ship"]
    # Runs longer than 100 are no words (hashes, base64); 100 is.
    assert words_of("a" * 101 + " " + "b" * 100) == ["b" * 100]


def test_an_event_is_found_by_its_header_values_and_its_body_values_not_its_keys() -> None:
    body = (
        b'{"action": "opened", "number": 42, "amount": -12.5e3,'
        b' "nested": {"list": ["Alpha", {"deep": "beta"}], "flag": true, "none": null},'
        b' "escaped": "caf\\u00e9 \\"quoted\\" back\\\\slash"}'
    )
    assert json.loads(body)["escaped"] == 'café "quoted" back\\slash'
    words = event_words({"X-GitHub-Event": "pull_request"}, body)
    assert words == [
        "pull",
        "request",  # the header's value first
        "opened",
        "42",
        "12",
        "5e3",
        "alpha",
        "beta",
        "cafe",
        "quoted",
        "back",
        "slash",
    ]
    assert "action" not in words and "true" not in words and "none" not in words


def test_only_the_start_of_a_body_is_read_and_the_words_are_bounded() -> None:
    head = b'{"first": "early", "pad": "' + b"x " * (MAX_SCANNED_BYTES // 2)
    body = head + b'", "last": "late"}'
    words = event_words({}, body)
    assert words[0] == "early" and "late" not in words
    # A string cut off by the end of the scan still gives the words before the cut.
    cut = b'{"a": "one two three' + b" four" * 10
    assert event_words({}, cut[:30]) == []  # unterminated: not a string token
    many = json.dumps({"w": " ".join(f"w{n}" for n in range(MAX_WORDS + 10))}).encode()
    assert len(event_words({}, many)) == MAX_WORDS
    # Not UTF-8, not JSON: whatever strings there are.
    assert event_words({}, b'\xff\xfe "valid" \x00 "x') == ["valid"]


def test_a_search_is_parts_that_must_all_match() -> None:
    assert parse_search("Deploy  failed") == Search(
        "Deploy  failed", (SearchPart(("deploy",)), SearchPart(("failed",)))
    )
    assert parse_search('"deploy failed" api*').parts == (
        SearchPart(("deploy", "failed")),
        SearchPart(("api",), prefix=True),
    )
    assert parse_search('"deploy fa"*').parts == (SearchPart(("deploy", "fa"), prefix=True),)
    # Punctuated text is a phrase of its words; an unclosed quote runs to the end.
    assert parse_search("ann@example.com").parts == (SearchPart(("ann", "example", "com")),)
    assert parse_search('"open ended').parts == (SearchPart(("open", "ended")),)
    # Repeats go; text without words does not count.
    assert parse_search("a a ! ok").parts == (SearchPart(("a",)), SearchPart(("ok",)))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no word"),
        ('!! "" *', "no word"),
        ("d*", "at least 2"),
        (" ".join(f"w{n}" for n in range(MAX_SEARCH_WORDS + 1)), f"{MAX_SEARCH_WORDS} words"),
    ],
)
def test_searches_that_cannot_be_made(text: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        parse_search(text)


def test_a_search_in_each_index_syntax() -> None:
    search = parse_search('"deploy failed" api* eu')
    assert fts5_match(search) == '"deploy failed" AND "api"* AND "eu"'
    assert tsquery(search) == "('deploy' <-> 'failed') & ('api':*) & ('eu')"
    assert tsvector(["b", "a", "b"]) == "'b':1,3 'a':2"


def test_times_are_iso_8601_or_a_span_before_now() -> None:
    assert parse_time("2026-04-30", now=NOW) == datetime(2026, 4, 30, tzinfo=UTC)
    assert parse_time("2026-04-30T10:00", now=NOW) == datetime(2026, 4, 30, 10, tzinfo=UTC)
    assert parse_time("2026-04-30 10:00:00Z", now=NOW) == datetime(2026, 4, 30, 10, tzinfo=UTC)
    assert parse_time("2026-04-30T12:00:00+02:00", now=NOW) == datetime(2026, 4, 30, 10, tzinfo=UTC)
    assert parse_time(" 90s ", now=NOW) == NOW - timedelta(seconds=90)
    assert parse_time("30m", now=NOW) == NOW - timedelta(minutes=30)
    assert parse_time("24H", now=NOW) == NOW - timedelta(hours=24)
    assert parse_time("7d", now=NOW) == NOW - timedelta(days=7)
    assert parse_time("2w", now=NOW) == NOW - timedelta(weeks=2)
    # ASCII digits only: "\u0663" (Arabic-Indic three) is a digit to int(), "²" to isdigit().
    for bad in (
        "yesterday",
        "1y",
        "-3h",
        "999999999w",
        "0001-01-01T00:00:00+01:00",
        "\u0663h",
        "²h",
    ):
        with pytest.raises(ValidationError, match="since must be"):
            parse_time(bad, now=NOW, name="since")
