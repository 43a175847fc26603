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
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from html.parser import HTMLParser
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
_HIDDEN = "***"
# Query parameters (and name=value pairs in text) whose values are credentials.
_SECRET_NAME = r"[\w.-]*(?:pass|pwd|secret|token|key|sig|auth|cred|session|code)[\w.-]*"  # noqa: S105 (a pattern of names)
_SECRET_PARAM = re.compile(rf"(?i)(^|[?&;])({_SECRET_NAME})=([^&;#\s]*)")
_SECRET_PAIR = re.compile(
    rf"(?i)(?<![\w.-])({_SECRET_NAME})(\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s&;,\"'<>]+)"
)
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+")
# A URL's user info: everything between the scheme and the last "@" of its authority.
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", re.I)
_TAG = re.compile(r"<[^>]*>")
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
    """``text`` with every URL in it redacted, and ``password=…``-like pairs hidden."""
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _SECRET_PAIR.sub(_hide_pair, text)


def _hide_pair(match: re.Match[str]) -> str:
    if match.group(3) == _HIDDEN:
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{_HIDDEN}"


class _Text(HTMLParser):
    """The text of an HTML document, without scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


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
    text = text[:_SCAN_CHARS]
    if _looks_like_html(text):
        parser = _Text()
        parser.feed(text)
        parser.close()
        text = "".join(parser.parts)
    text = html.unescape(text) if "&" in text else text
    # Escaped markup that decoding turned back into tags.
    text = _TAG.sub(" ", text)
    for secret in _secret_forms(secrets):
        text = text.replace(secret, _HIDDEN)
    text = _SPACE.sub(" ", redact_urls(text)).strip()
    text = "".join(c for c in text if c.isprintable())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
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
