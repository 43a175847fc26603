"""Text from outside made fit for errors, logs and tables.

:func:`redact_url` hides the secrets a URL carries (a password in its
userinfo, a ``?password=``, ``?token=``, ``?sig=``... value);
:func:`hide_url_credentials` hides those of every URL in a text, user info
whole (the offline digest shows a sender's values through it);
:func:`upstream_excerpt` turns what an upstream answered (a JSON message, a
proxy's whole HTML error page) into one short line: tags, scripts and styles
dropped, whitespace collapsed, URL secrets and the caller's own secrets (a
chat incoming-webhook URL is one) removed, cut to a bound. Event errors,
connector status and tool results quote upstream bodies only through it, so
an answer can neither flood a table nor leak a credential.

Everything here runs on the event loop over text a third party chose, so
every pass is linear in its input: no pattern backtracks over a run of
characters it has read, and no stdlib HTML parser (quadratic on some
unclosed markup) reads the page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "EXCERPT_CHARS",
    "hide_url_credentials",
    "redact_url",
    "redact_urls",
    "upstream_excerpt",
]

#: An excerpt of an upstream answer is at most this long: enough for a status
#: line or an API's message, short enough for one table row.
EXCERPT_CHARS = 300
# Only the start of a body is read: the excerpt is short, an error page may be large.
_SCAN_CHARS = 64 * 1024
# The text left once markup is gone is cut to this (or 4 x the excerpt's limit) before
# secrets are looked for in it: hiding a secret only shortens the text.
_REDACT_CHARS = 4096
_HIDDEN = "***"
# Query parameters (and name=value pairs in text) whose values are credentials. A name is
# the whole run of name characters; the lookahead finds a secret word in it, and the run
# is taken possessively, so each run is read a bounded number of times. (The form
# ``[\w.-]*(?:pass|...)[\w.-]*`` backtracked over every candidate inside one long name:
# quadratic time.)
_SECRET_WORDS = "pass|pwd|secret|token|key|sig|auth|cred|session|code"  # noqa: S105 (names)
_SECRET_NAME = rf"(?=[\w.-]*?(?:{_SECRET_WORDS}))[\w.-]++"
_SECRET_PARAM = re.compile(rf"(?i)(^|[?&;])({_SECRET_NAME})=([^&;#\s]*)")
_SECRET_PAIR = re.compile(
    rf"(?i)(?<![\w.-])({_SECRET_NAME})(\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s&;,\"'<>]+)"
)
# A URL: a scheme from the first letter of a run of scheme characters, ``://``, and what
# follows up to a space or a quote. Anchored at the run's start, each run is read once
# (``\b[a-z][a-z0-9+.-]*://`` read ``a.a.a…`` again from each of its letters).
_URL = re.compile(r"(?i)(?<![a-z0-9+.-])[0-9+.-]*+([a-z][a-z0-9+.-]*+://[^\s\"'<>]+)")
# A tag, not spanning another's start (``<[^>]*>`` read ``<<<…`` to the end from each ``<``).
# A URL's user info: everything between the scheme and the last "@" of its authority.
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", re.I)
_TAG = re.compile(r"<[^<>]*>")
# In an HTML page: a comment's start, a script or a style (up to its end tag), or a tag.
_MARKUP = re.compile(r"<!--|<(script|style)\b[^<>]*>|<[^<>]*>", re.IGNORECASE)
_END_TAGS = {name: re.compile(rf"</{name}\b[^<>]*>", re.IGNORECASE) for name in ("script", "style")}
_SPACE = re.compile(r"\s+")


def redact_url(url: str) -> str:
    """``url`` with its password and secret query values replaced, fit for messages and logs."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return _SECRET_PAIR.sub(_hide_pair, url)
    netloc = parts.netloc
    if password is not None:
        netloc = netloc.replace(f":{password}@", f":{_HIDDEN}@", 1)
    query = _SECRET_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={_HIDDEN}", parts.query)
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # as written (urlunsplit would drop the empty host of sqlite:///)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def hide_url_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden, and nothing else changed.

    A URL's user info goes whole (``https://user:pass@host`` and
    ``https://TOKEN@host`` both become ``https://***@host``: a token often
    stands where the user would), and so do secret query values
    (``?token=***``), as :func:`redact_url` hides them.
    """
    return _URL.sub(lambda m: redact_url(_USERINFO.sub(r"\1***@", m.group(0))), text)


def redact_urls(text: str) -> str:
    """``text`` with every URL in it redacted, and ``password=…``-like pairs hidden.

    Linear in the length of ``text``, whatever it holds.
    """
    text = _URL.sub(_redact_found_url, text)
    return _SECRET_PAIR.sub(_hide_pair, text)


def _redact_found_url(match: re.Match[str]) -> str:
    lead = match.start(1) - match.start(0)  # scheme characters before the scheme's letter
    return match.group(0)[:lead] + redact_url(match.group(1))


def _hide_pair(match: re.Match[str]) -> str:
    if match.group(3) == _HIDDEN:
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{_HIDDEN}"


def _html_text(page: str) -> str:
    """The text of an HTML page: tags, comments, scripts and styles dropped, in linear time.

    Not :class:`html.parser.HTMLParser`, which takes quadratic time on some
    unclosed constructs (``<p a=`` repeated: 10 s for 64 KiB) and raises
    AssertionError on others (``<![``): an upstream chooses its error page.
    What is not closed runs to the end of the page, as in a browser.
    """
    parts: list[str] = []
    at = 0
    while (found := _MARKUP.search(page, at)) is not None:
        parts.extend((page[at : found.start()], " "))
        if found.group() == "<!--":
            end = page.find("-->", found.end())
            at = len(page) if end < 0 else end + 3
        elif found.group(1):  # a script or a style: its content is not text
            end_tag = _END_TAGS[found.group(1).lower()].search(page, found.end())
            at = len(page) if end_tag is None else end_tag.end()
        else:
            at = found.end()
    parts.append(page[at:])
    return "".join(parts)


def _looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype", "<html", "<?xml", "<head", "<body")) or bool(
        re.search(r"</?(html|body|head|title|div|p|h1|pre|table)\b", text[:4096], re.IGNORECASE)
    )


def upstream_excerpt(
    body: str | bytes, *, secrets: Iterable[str] = (), limit: int = EXCERPT_CHARS
) -> str:
    """One line, at most ``limit`` characters, that says what an upstream answered.

    Args:
        body: what it answered (bytes are read as UTF-8, bad bytes replaced).
        secrets: strings that must not appear (a secret URL: also its path
            and query, which error pages echo).
        limit: the longest excerpt, ``…`` included.

    Returns:
        The text, tags and scripts dropped, entities decoded, whitespace
        collapsed, secrets replaced with ``***``; "" when nothing is left.
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    cut = len(text) > _SCAN_CHARS
    text = text[:_SCAN_CHARS]
    if _looks_like_html(text):
        text = _html_text(text)
    text = html.unescape(text) if "&" in text else text
    # Escaped markup that decoding turned back into tags.
    text = _TAG.sub(" ", text)
    # Invisible characters go before secrets are looked for: one inside a secret
    # would hide it from the search, and then vanish from the excerpt.
    text = _SPACE.sub(" ", text)
    text = "".join(c for c in text if c.isprintable()).strip()
    # Only the start can be shown: secrets are looked for there alone.
    keep = max(_REDACT_CHARS, 4 * limit)
    if len(text) > keep:
        text, cut = text[:keep], True
    forms = _secret_forms(secrets)
    if cut:
        text = _without_cut_word(text, forms)
    for secret in forms:
        text = text.replace(secret, _HIDDEN)
    text = _SPACE.sub(" ", redact_urls(text)).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _without_cut_word(text: str, forms: list[str]) -> str:
    """``text``, cut short, without the word the cut went through: it may be half a secret.

    A text of one word keeps it, but not a start of one of ``forms`` at its end.
    """
    head, space, _ = text.rpartition(" ")
    if space:
        return head
    for form in forms:
        start = max(0, len(text) - len(form) + 1)
        while (found := text.find(form[0], start)) >= 0:
            if form.startswith(text[found:]):
                return text[:found] + _HIDDEN
            start = found + 1
    return text


def _secret_forms(secrets: Iterable[str]) -> list[str]:
    """Each secret, and for a URL its path and query too; longest first."""
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) < 4:
            continue  # too short to replace without garbling the text
        forms.add(secret)
        try:
            parts = urlsplit(secret)
        except ValueError:
            continue
        if parts.scheme and parts.netloc:
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            if len(path.strip("/")) >= 4:
                forms.update({path, parts.path})
    return sorted((f for f in forms if len(f.strip("/")) >= 4), key=len, reverse=True)
