"""Line ranges of document URIs (``?lines=``), as resources/read understands them."""

from __future__ import annotations

import pytest

from agentws.doors.mcp.dispatch.resources import LineRange, parse_lines

TEXT = "one\ntwo\nthree\nfour\n"


@pytest.mark.parametrize(
    ("value", "expected", "cut"),
    [
        ("2", LineRange(2, 2), "two\n"),
        ("2-3", LineRange(2, 3), "two\nthree\n"),
        ("3-", LineRange(3, None), "three\nfour\n"),
        (" 1-9 ", LineRange(1, 9), TEXT),
        ("9", LineRange(9, 9), ""),
    ],
)
def test_ranges(value: str, expected: LineRange, cut: str) -> None:
    assert parse_lines(value) == expected
    assert expected.cut(TEXT) == cut


@pytest.mark.parametrize("value", ["", "0", "0-2", "3-2", "a", "1-2-3", "-4", "1,2"])
def test_bad_ranges_say_what_a_range_is(value: str) -> None:
    with pytest.raises(ValueError, match="lines="):
        parse_lines(value)
