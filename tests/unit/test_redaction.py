"""URL secrets redacted and upstream bodies cut to one clean line (agentws.core.redaction)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentws.core.redaction import EXCERPT_CHARS, redact_url, redact_urls, upstream_excerpt
from tests.scaling import LINEAR, growth


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


# --- work bounded by the input, whatever an upstream sends -----------------------------------

# Texts that made the old patterns backtrack: each candidate name, scheme or tag inside one
# long run of its characters was read to the end of the run again (quadratic time).
_ADVERSARIAL = {
    "secret words": "pass",
    "name and dots": "a.",
    "token words": "token",
    "tag openings": "<",
    "pairs": "x=",
    "secret pairs": "pass=",
    "schemes": "a://",
    "entities": "&#",
    "html tag openings": "<p><",
    "html comments": "<p><!--",
    "html end tags": "<p></",
    "html attributes": "<p a=",
    "html declarations": "<p><![",
}


def _repeated(unit: str) -> Callable[[int], str]:
    return lambda n: unit * (n // len(unit))


@pytest.mark.parametrize("unit", _ADVERSARIAL.values(), ids=_ADVERSARIAL.keys())
def test_an_upstream_answer_of_64_kib_costs_linear_time(unit: str) -> None:
    answer = _repeated(unit)(64 * 1024)
    assert len(upstream_excerpt(answer)) <= EXCERPT_CHARS
    assert growth(_repeated(unit), upstream_excerpt, 16 * 1024) < LINEAR


@pytest.mark.parametrize("unit", _ADVERSARIAL.values(), ids=_ADVERSARIAL.keys())
def test_redacting_urls_costs_linear_time(unit: str) -> None:
    # redact_urls and redact_url take text of any length (an exception's message, a URL).
    assert growth(_repeated(unit), redact_urls, 8 * 1024) < LINEAR
    assert growth(lambda n: "https://h.example/p?" + _repeated(unit)(n), redact_url, 8 * 1024) < (
        LINEAR
    )


def test_a_long_name_before_a_secret_pair_is_still_read_as_its_name() -> None:
    name = "x." * 500 + "api_key"
    assert redact_urls(f"{name}=hunter2 and db.password = 'p w'") == (
        f"{name}=*** and db.password = ***"
    )
    assert redact_url(f"https://h.example/p?{name}=k&q=1") == f"https://h.example/p?{name}=***&q=1"
    # A scheme after a run of other scheme characters is still a URL's.
    assert redact_urls("see 1.2.https://u:pw@h.example/x") == "see 1.2.https://u:***@h.example/x"


@pytest.mark.parametrize(
    ("markup", "bound"),
    [
        # The text is cut to 4 KiB before secrets are looked for in it...
        ("", 4096),
        # ... and a body to 64 KiB before its markup is dropped.
        ("<html><body>" + "<i></i>" * 9000, 64 * 1024),
    ],
    ids=["text", "markup"],
)
def test_a_secret_cut_by_a_bound_is_never_half_shown(markup: str, bound: int) -> None:
    hook = "https://chat.example/hooks/T0/B0/SECRETPATH"
    # The long value is hidden, which brings what follows it into the excerpt.
    for cut_after in range(1, len(hook)):
        value = "v" * (bound - len(markup) - len("password= ") - cut_after)
        answer = f"{markup}password={value} {hook} and more"
        assert answer[bound - 1 : bound + 1] == hook[cut_after - 1 : cut_after + 1]
        excerpt = upstream_excerpt(answer, secrets=(hook,))
        assert excerpt.startswith("password=***"), excerpt
        assert "chat.example" not in excerpt and "/hooks" not in excerpt, (cut_after, excerpt)
    # A text of one word keeps its start, but not the start of a secret at its end.
    answer = "x" * (bound - 20) + hook
    assert upstream_excerpt(answer, secrets=(hook,), limit=bound).endswith("x***")


def test_invisible_characters_cannot_split_a_secret_out_of_sight() -> None:
    hook = "https://chat.example/hooks/T0/B0/SECRETPATH"
    answer = "bad hook https://chat.example/hooks/T0/B0/SECRET\u200bPATH"
    assert upstream_excerpt(answer, secrets=(hook,)) == "bad hook ***"
