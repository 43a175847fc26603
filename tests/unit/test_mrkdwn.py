"""``agentws.chat.mrkdwn.to_mrkdwn``: Markdown as models write it, to Slack's ``mrkdwn``.

Example tests pin each rule (escaping, bold, italic, strike, links,
headings, bullets, code left alone, the length cut); property tests
(hypothesis) check what must hold of any text: nothing but a link the
function made can reach Slack as ``<…>`` markup (``<!channel>`` must never
ping), and text without markup only gets escaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.chat.mrkdwn import MAX_TEXT_CHARS, to_mrkdwn
from tests.scaling import BOUNDED, LINEAR, growth

_SETTINGS = settings(database=None, max_examples=300, deadline=None)
CUT_NOTE = "\n… (cut: the message was too long)"
# The only <…> the conversion may emit: links it made from [text](http(s)://url).
_EMITTED_LINK = re.compile(r"<https?://[^|<>\s]+\|[^<>]*>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# --- escaping -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("", ""),
        ("plain text, nothing else.", "plain text, nothing else."),
        ("a & b", "a &amp; b"),
        ("1 < 2 > 0", "1 &lt; 2 &gt; 0"),
        ("<!channel> deploy failed", "&lt;!channel&gt; deploy failed"),
        ("ping <@U0123456> and <!here|here>", "ping &lt;@U0123456&gt; and &lt;!here|here&gt;"),
        # Already-escaped text is escaped again: the model's text is text, not mrkdwn.
        ("&lt;", "&amp;lt;"),
        ("<https://evil.example|click me>", "&lt;https://evil.example|click me&gt;"),
    ],
)
def test_slacks_control_characters_are_escaped(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


# --- emphasis -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("**bold**", "*bold*"),
        ("__bold__", "*bold*"),
        ("a **bold** word", "a *bold* word"),
        ("**two words**", "*two words*"),
        ("**a** and **b**", "*a* and *b*"),
        ("*italic*", "_italic_"),
        ("an *italic* word", "an _italic_ word"),
        ("*a* *b*", "_a_ _b_"),
        ("see *this*, then", "see _this_, then"),
        ("_already italic_", "_already italic_"),
        ("~~gone~~", "~gone~"),
        ("it was ~~wrong~~ right", "it was ~wrong~ right"),
        ("**a** and *b* and ~~c~~", "*a* and _b_ and ~c~"),
        ("**bold with *italic* inside**", "*bold with _italic_ inside*"),
    ],
)
def test_emphasis(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


@pytest.mark.parametrize(
    "markdown",
    [
        "2 * 3 * 4 = 24",
        "a*b*c",
        "glob *.py and *.txt",
        "snake_case_name",
        "a_b_c",
        "** not bold **",
        "~~ not struck ~~",
        "~one tilde~",
        "**unclosed bold",
        "*",
        "**",
    ],
)
def test_what_is_not_emphasis_is_left_alone(markdown: str) -> None:
    assert to_mrkdwn(markdown) == markdown


def test_emphasis_does_not_span_lines() -> None:
    assert to_mrkdwn("**one\ntwo**") == "**one\ntwo**"
    assert to_mrkdwn("*one\ntwo*") == "*one\ntwo*"


# --- links ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("[docs](https://example.com/docs)", "<https://example.com/docs|docs>"),
        ("[plain](http://example.com)", "<http://example.com|plain>"),
        ("see [the run](https://ci.example/r/1) now", "see <https://ci.example/r/1|the run> now"),
        # & in the URL is escaped, as Slack wants it inside <…> too.
        ("[q](https://x.example/?a=1&b=2)", "<https://x.example/?a=1&amp;b=2|q>"),
        # | would end the URL part of Slack's link: the label's is replaced.
        ("[a|b](https://x.example)", "<https://x.example|a¦b>"),
        ("[a & b](https://x.example)", "<https://x.example|a &amp; b>"),
        (
            "[one](https://a.example) and [two](https://b.example)",
            "<https://a.example|one> and <https://b.example|two>",
        ),
    ],
)
def test_links(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


@pytest.mark.parametrize(
    "markdown",
    [
        "[x](javascript:alert(1))",
        "[x](ftp://files.example/a)",
        "[x](mailto:a@example.com)",
        "[x](/relative/path)",
        "[x](https://has space.example)",
        "[x]",
        "[](https://empty.example)",
    ],
)
def test_only_http_links_become_slack_links(markdown: str) -> None:
    out = to_mrkdwn(markdown)
    assert "<" not in out
    assert out == markdown


def test_link_text_is_not_reformatted_as_emphasis() -> None:
    out = to_mrkdwn("[*x* and ~~y~~](https://a.example)")
    assert out == "<https://a.example|*x* and ~~y~~>"


# --- headings and bullets -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("# Title", "*Title*"),
        ("## Deploy report", "*Deploy report*"),
        ("###### Six", "*Six*"),
        ("### Closed ###", "*Closed*"),
        ("#   Spaced   ", "*Spaced*"),
        ("# Summary\nAll green.", "*Summary*\nAll green."),
        ("Intro\n## Details\nMore", "Intro\n*Details*\nMore"),
    ],
)
def test_headings_become_bold_lines(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


@pytest.mark.parametrize(
    "markdown", ["#hashtag", "####### seven", "a # not a heading", "issue #42 closed"]
)
def test_what_is_not_a_heading_is_left_alone(markdown: str) -> None:
    assert to_mrkdwn(markdown) == markdown


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("- one\n- two", "• one\n• two"),
        ("* one\n* two", "• one\n• two"),
        ("- top\n  - nested\n    * deeper", "• top\n  • nested\n    • deeper"),
        ("- *italic* item", "• _italic_ item"),
        ("* **bold** item", "• *bold* item"),
        ("Intro:\n- a\n\nEnd.", "Intro:\n• a\n\nEnd."),
    ],
)
def test_bullets(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


@pytest.mark.parametrize("markdown", ["-dash", "1. numbered", "a - b", "---", "x * y"])
def test_what_is_not_a_bullet_is_left_alone(markdown: str) -> None:
    assert to_mrkdwn(markdown) == markdown


# --- code -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("`**not bold**`", "`**not bold**`"),
        ("run `rm *.pyc` then *wait*", "run `rm *.pyc` then _wait_"),
        ("`[x](https://a.example)`", "`[x](https://a.example)`"),
        ("`a < b && c`", "`a &lt; b &amp;&amp; c`"),
        ("`# not a heading`", "`# not a heading`"),
        (
            "```\n# comment\n- item\n**x** *y* ~~z~~ <tag>\n```",
            "```\n# comment\n- item\n**x** *y* ~~z~~ &lt;tag&gt;\n```",
        ),
        (
            "**before**\n```python\nif a < b:\n    print('*')\n```\n*after*",
            "*before*\n```python\nif a &lt; b:\n    print('*')\n```\n_after_",
        ),
    ],
)
def test_code_is_left_alone_but_for_escaping(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


def test_an_unclosed_code_block_is_prose() -> None:
    assert to_mrkdwn("```\n**x**") == "```\n*x*"


# --- length ---------------------------------------------------------------------------------


def test_text_up_to_the_limit_is_kept_whole() -> None:
    text = "x" * MAX_TEXT_CHARS
    assert to_mrkdwn(text) == text


def test_longer_text_is_cut_and_says_so() -> None:
    text = "word " * (MAX_TEXT_CHARS // 4)
    out = to_mrkdwn(text)
    assert len(out) <= MAX_TEXT_CHARS
    assert out.endswith(CUT_NOTE)
    kept = out.removesuffix(CUT_NOTE)
    assert text.startswith(kept)
    assert len(kept) >= MAX_TEXT_CHARS - 45  # cut near the limit, not far before it


def test_the_limit_applies_to_the_escaped_text() -> None:
    """Escaping makes text longer: ``&`` is five characters once escaped."""
    text = "&" * (MAX_TEXT_CHARS // 5 + 1)
    assert len(text) < MAX_TEXT_CHARS
    out = to_mrkdwn(text)
    assert len(out) <= MAX_TEXT_CHARS
    assert out.endswith(CUT_NOTE)
    kept = out.removesuffix(CUT_NOTE)
    assert kept
    assert ("&amp;" * len(text)).startswith(kept)


# --- properties -----------------------------------------------------------------------------


@_SETTINGS
@given(st.text(st.characters(blacklist_characters="\x00"), max_size=300))
def test_no_slack_markup_gets_through_but_the_links_it_makes(text: str) -> None:
    """Whatever the text (a quoted payload, a model told to ping), no ``<!channel>``."""
    out = to_mrkdwn(text)
    rest = _EMITTED_LINK.sub("", out)
    assert "<" not in rest
    assert ">" not in rest
    if "[" not in text:
        assert "<" not in out


_PLAIN = st.text(
    st.characters(
        blacklist_categories=("Cs", "Cc"),
        blacklist_characters="*_~[]()#-`\\",
    )
    | st.sampled_from(["\n", " ", "&", "<", ">"]),
    max_size=300,
)


@_SETTINGS
@given(_PLAIN)
def test_text_without_markup_is_only_escaped(text: str) -> None:
    assert to_mrkdwn(text) == _escape(text)


@_SETTINGS
@given(st.text(st.characters(blacklist_characters="\x00"), max_size=300))
def test_code_spans_keep_their_text(text: str) -> None:
    """A code span's content is kept as written (but for escaping)."""
    body = text.replace("`", "").replace("\n", " ")
    if not body:
        return
    assert f"`{_escape(body)}`" in to_mrkdwn(f"see `{body}` here")


# --- edge cases ----------------------------------------------------------------------------


def test_nul_characters_in_text_do_not_break_the_conversion() -> None:
    assert to_mrkdwn("a\x000\x00b") == "a\x000\x00b"


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [("## **Summary**", "*Summary*"), ("# Deploy **failed**", "*Deploy failed*")],
)
def test_a_heading_with_bold_text_is_one_bold_line(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


def test_a_heading_ending_in_a_hash_keeps_it() -> None:
    assert to_mrkdwn("# Notes on C#") == "*Notes on C#*"


# --- work bounded by the text, whatever the model writes ---------------------------------------

# Texts that made the old patterns backtrack: each opening was read to the end of its
# line again (quadratic time; 40,000 characters took seconds).
_ADVERSARIAL = {
    "bold openings": "**a ",
    "underscore bold openings": "__a ",
    "strike openings": "~~a ",
    "link openings": "[",
    "link labels": "[a",
    "heading spaces": "  ",
    "italic openings": "*a ",
    "code openings": "`a ",
}


def _repeated(unit: str) -> Callable[[int], str]:
    # A heading: its text is what the pattern searched for a closing sequence in.
    return lambda n: "# a" + unit * (n // len(unit)) + "b"


@pytest.mark.parametrize("unit", _ADVERSARIAL.values(), ids=_ADVERSARIAL.keys())
def test_converting_costs_linear_time(unit: str) -> None:
    assert growth(_repeated(unit), to_mrkdwn, 9_000) < LINEAR
    assert growth(lambda n: unit * (n // len(unit)), to_mrkdwn, 9_000) < LINEAR


def test_a_text_over_the_limit_is_cut_before_it_is_converted() -> None:
    # Eight times the limit costs what twice does: the rest is never read.
    assert growth(lambda n: "**a " * (n // 4), to_mrkdwn, 2 * MAX_TEXT_CHARS) < BOUNDED
    out = to_mrkdwn("**bold** " * MAX_TEXT_CHARS)
    assert out.startswith("*bold* *bold*")
    assert out.endswith(CUT_NOTE)
    assert len(out) <= MAX_TEXT_CHARS


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("**2*3**", "*2*3*"),
        ("__snake_case__", "*snake_case*"),
        ("~~a~b~~", "~a~b~"),
        ("[a [b](https://x.example)", "[a <https://x.example|b>"),
        ("# Title ##   ", "*Title*"),
        ("# Title #x", "*Title #x*"),
        ("#   ", "#   "),
    ],
)
def test_emphasis_links_and_headings_keep_their_meaning(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected
