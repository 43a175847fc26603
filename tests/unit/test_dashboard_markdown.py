"""Chat messages drawn as safe HTML (agentws.doors.dashboard.markdown), hostile ones included."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from jinja2 import Environment
from markupsafe import Markup

from agentws.agent.offline import OFFLINE_NOTE
from agentws.doors.dashboard.markdown import DRAWN_CHARS, LINK_REL, render_markdown
from agentws.doors.dashboard.visible import visible

#: What a message's HTML may hold, and no more.
_TAGS = {"p", "br", "strong", "em", "s", "a", "code", "pre", "ul", "ol", "li", "blockquote",
         "h1", "h2", "h3", "h4", "h5", "h6", "hr"}  # fmt: skip
_ATTRIBUTES = {"href", "rel", "title", "start"}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """The elements of ``html`` as a browser parses them; fails on anything not allowed."""
    parser = _Elements()
    parser.feed(html)
    parser.close()
    for tag, attributes in parser.found:
        assert tag in _TAGS, html
        assert set(attributes) <= _ATTRIBUTES, html
        href = attributes.get("href")
        if href is not None:
            assert href.startswith(("https://", "http://", "mailto:")), html
    return parser.found


def _tags(html: str) -> set[str]:
    return {tag for tag, _ in _elements(html)}


def _hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def test_slack_style_and_markdown_style_both_read_right() -> None:
    html = render_markdown("*ci*: build 7 **failed** on _main_ ~flaky~ ~~gone~~")
    assert "<strong>ci</strong>" in html
    assert "<strong>failed</strong>" in html
    assert "<em>main</em>" in html
    assert "<s>flaky</s>" in html and "<s>gone</s>" in html
    assert "*" not in html and "_main_" not in html


def test_the_offline_digest_reads_as_it_was_meant() -> None:
    html = render_markdown(f"*ci*: push to main\n\nKey fields:\n• build: 7\n\n{OFFLINE_NOTE}")
    assert html.startswith("<p><strong>ci</strong>: push to main</p>")
    assert "Key fields:<br />\n• build: 7" in html
    assert "<em>Digest written without a language model" in html


def test_slack_links_become_links_with_their_text() -> None:
    html = render_markdown(
        "See <https://ci.example.com/b/7?x=1&y=2|build [7]> and <https://a.example>"
    )
    assert _tags(html) == {"p", "a"}
    assert _hrefs(html) == ["https://ci.example.com/b/7?x=1&amp;y=2", "https://a.example"]
    assert ">build [7]</a>" in html


def test_every_link_is_marked_noopener_noreferrer_nofollow() -> None:
    html = render_markdown(
        "[a](https://a.example) <https://b.example> <c@d.example> [m](mailto:x@y)"
    )
    assert [tag for tag, _ in _elements(html)].count("a") == 4
    assert html.count(f'rel="{LINK_REL}"') == 4
    assert _hrefs(html) == [
        "https://a.example",
        "https://b.example",
        "mailto:c@d.example",
        "mailto:x@y",
    ]


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<svg onload=alert(1)></svg>",
        "<iframe src=https://evil.example></iframe>",
        "<div style='background:url(javascript:alert(1))'>x</div>",
        "x <b onmouseover=alert(1)>y</b>",
    ],
)
def test_raw_html_is_text(source: str) -> None:
    html = render_markdown(source)
    assert _tags(html) <= {"p"}, html
    assert "&lt;" in html


@pytest.mark.parametrize(
    "source",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](  javascript:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x](file:///etc/passwd)",
        "<javascript:alert(1)>",
        "<data:text/html,<script>alert(1)</script>>",
        "![x](data:image/png;base64,AAAA)",
        "![x](javascript:alert(1))",
        "[x](/dashboard/logout)",
        "[x](//evil.example/)",
        '[x](https://a.example" onclick="alert(1))',
    ],
)
def test_links_only_go_to_http_https_or_mailto(source: str) -> None:
    html = render_markdown(source)
    assert _tags(html) <= {"p"}, html


def test_an_attribute_cannot_be_broken_out_of() -> None:
    html = render_markdown('[x](https://a.example/"onmouseover="alert(1) "t\\" onclick=\\"y")')
    ((_, attributes),) = [e for e in _elements(html) if e[0] == "a"]
    assert attributes["title"] == 't" onclick="y'  # a title's text, not an attribute


def test_an_image_is_a_link_never_loaded() -> None:
    html = render_markdown(
        '![the chart](https://evil.example/pixel.png "Chart") ![](http://x.example/a.gif)'
    )
    assert _tags(html) == {"p", "a"}
    assert _hrefs(html) == ["https://evil.example/pixel.png", "http://x.example/a.gif"]
    assert ">image: the chart</a>" in html and ">image: http://x.example/a.gif</a>" in html
    assert 'title="Chart"' in html


def test_code_is_left_as_it_is() -> None:
    html = render_markdown("`*x* <https://a|b> <script>`\n\n```\n*y* ~z~\n<b>\n```")
    assert "<code>*x* &lt;https://a|b&gt; &lt;script&gt;</code>" in html
    assert "<pre><code>*y* ~z~\n&lt;b&gt;\n</code></pre>" in html


def test_hidden_characters_are_written_as_escapes() -> None:
    html = render_markdown(
        "invoice\u202efdp.exe\u200b [a\u2066b](https://x.example/\u200b) `c\u202ed`"
    )
    assert "invoice\\u202efdp.exe\\u200b" in html
    assert ">a\\u2066b</a>" in html
    assert "<code>c\\u202ed</code>" in html
    assert visible(html) == html  # nothing left for the page's own escape
    assert not re.search("[\u200b\u202e\u2066]", html)


def test_as_a_jinja_filter_it_is_markup_and_survives_the_page_escape() -> None:
    env = Environment(autoescape=True, finalize=visible)
    env.filters["markdown"] = render_markdown
    page = env.from_string("<div>{{ m | markdown }}</div>").render(m="*hi* <b>\u202e")
    assert page == "<div><p><strong>hi</strong> &lt;b&gt;\\u202e</p>\n</div>"
    assert isinstance(render_markdown("x"), Markup)
    assert render_markdown(None) == ""


def test_a_long_message_is_drawn_from_its_start_to_a_line_end() -> None:
    """Drawing is pure Python: what a page draws of a message is bounded."""
    first = "**first** line\n" * 500  # 7,500 characters, then a line past the bound
    html = render_markdown(first + "x" * 2000 + "\n**last**")
    assert html.count("<strong>first</strong>") == 500
    assert "xx" not in html and "last" not in html
    assert html.endswith("<p>…</p>\n")
    whole = render_markdown("**a** " * 1000)  # 6,000 characters: drawn whole
    assert whole.count("<strong>a</strong>") == 1000 and "…" not in whole
    one_line = render_markdown("y" * 20_000)
    assert str(one_line) == "<p>" + "y" * DRAWN_CHARS + "</p>\n<p>…</p>\n"
