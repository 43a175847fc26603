"""The dashboard's escape of invisible and bidi characters (agentws.doors.dashboard.visible)."""

from __future__ import annotations

from jinja2 import Environment
from markupsafe import Markup

from agentws.doors.dashboard.visible import exact, has_hidden, visible


def _render(source: str, **values: object) -> str:
    env = Environment(autoescape=True, finalize=visible)
    env.filters["exact"] = exact
    return env.from_string(source).render(**values)


def test_each_hidden_character_is_written_as_its_escape() -> None:
    assert visible("a\u202eb\u2066c\u200bd\ufeffe") == "a\\u202eb\\u2066c\\u200bd\\ufeffe"
    assert visible("\x1b[31m\x85\x00\x7f") == "\\u001b[31m\\u0085\\u0000\\u007f"
    assert visible("hidden\U000e0041\U000e0042") == "hidden\\U000e0041\\U000e0042"
    assert visible("\u2028\u2029\u00ad\u061c") == "\\u2028\\u2029\\u00ad\\u061c"


def test_ordinary_text_and_values_are_left_alone() -> None:
    text = "line\n\ttab\r\nnaïve café — 日本語 👍 שלום"
    assert visible(text) is text
    assert visible(7) == 7 and visible(None) is None and visible(True) is True
    assert not has_hidden(text) and has_hidden("x\u202e")


def test_in_a_template_markup_stays_markup_and_exact_is_exact() -> None:
    page = _render(
        '<p>{{ a }}</p><p>{{ m }}</p><input value="{{ a | exact }}">',
        a="<b>\u202e",
        m=Markup("<i>\u202e</i>"),
    )
    assert page == '<p>&lt;b&gt;\\u202e</p><p><i>\\u202e</i></p><input value="&lt;b&gt;\u202e">'
    # Any object is printed as its text, escaped the same way.
    assert _render("{{ x }}", x=["\u202e"]) == "[&#39;\\u202e&#39;]"
