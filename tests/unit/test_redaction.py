"""URL secrets redacted and upstream bodies cut to one clean line (agentws.redaction)."""

from __future__ import annotations

import pytest

from agentws.redaction import EXCERPT_CHARS, redact_url, redact_urls, upstream_excerpt


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("postgresql://app:s3cret@db/agentws", "postgresql://app:***@db/agentws"),
        # The finding: a password in the query string was kept.
        ("postgresql://app@db/agentws?password=s3cret", "postgresql://app@db/agentws?password=***"),
        (
            "postgresql://db/x?sslpassword=a&application_name=agentws",
            "postgresql://db/x?sslpassword=***&application_name=agentws",
        ),
        (
            "https://api.example/v1?api_key=k&token=t&q=1",
            "https://api.example/v1?api_key=***&token=***&q=1",
        ),
        ("https://x.example/s?sig=abc#top", "https://x.example/s?sig=***#top"),
        ("https://x.example/plain?q=1", "https://x.example/plain?q=1"),
        ("sqlite:///var/lib/agentws.db", "sqlite:///var/lib/agentws.db"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_redact_urls_in_text() -> None:
    text = "GET https://u:pw@h.example/p?token=abc failed; retry with password=hunter2, code: 500"
    assert redact_urls(text) == (
        "GET https://u:***@h.example/p?token=*** failed; retry with password=***, code: 500"
    )


def test_an_html_page_becomes_one_short_line_without_tags_scripts_or_secrets() -> None:
    hook = "https://chat.example/hooks/T0/B0/SECRETPATH"
    page = (
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title>"
        "<style>body{color:red}</style><script>var t = 'x';</script></head><body>\n"
        f"<h1>Bad\n\n  Gateway</h1><p>POST /hooks/T0/B0/SECRETPATH &amp; {hook}?password=p</p>"
        + "<p>filler</p>" * 5000
        + "</body></html>"
    )
    excerpt = upstream_excerpt(page.encode(), secrets=(hook,))
    assert excerpt.startswith("502 Bad Gateway Bad Gateway POST *** & ***?password=*** filler")
    assert len(excerpt) == EXCERPT_CHARS and excerpt.endswith("…")
    for word in ("<", ">", "\n", "  ", "SECRETPATH", "color:red", "var t"):
        assert word not in excerpt


def test_plain_and_json_answers_are_kept_but_bounded() -> None:
    assert upstream_excerpt(b'{"message": "Bad credentials"}') == '{"message": "Bad credentials"}'
    assert upstream_excerpt("  no_service\n") == "no_service"
    assert upstream_excerpt("") == ""
    assert upstream_excerpt(b"\xff\xfe oops") == "\ufffd\ufffd oops"
    assert len(upstream_excerpt("x" * 10_000, limit=50)) == 50
    # Escaped markup stays text, never becomes tags.
    assert upstream_excerpt("a &lt;b&gt;bold&lt;/b&gt; c") == "a bold c"
