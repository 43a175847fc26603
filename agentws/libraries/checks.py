"""What a library may store: the size limits and the checks of text, names, MIME types and JSON.

Everything stored is text: UTF-8 without NUL characters (PostgreSQL cannot
keep NUL in text, and SQLite would, so refusing it keeps the stores alike),
at most :data:`MAX_DOCUMENT_BYTES` per document and :data:`MAX_SKILL_BYTES`
per skill with its assets. Both the file loaders
(:mod:`agentws.libraries.loading`) and the library service
(:mod:`agentws.libraries.service`) check with these.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentws.core.errors import ValidationError
from agentws.domain.models import DocumentPolicy

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_NAME_CHARS",
    "MAX_SKILL_BYTES",
    "MAX_TITLE_CHARS",
    "check_mime",
    "check_name",
    "check_policy",
    "check_size",
    "format_bytes",
    "pretty_json",
    "text_bytes",
]

#: A document's body, in UTF-8 bytes: big enough for any handbook page, small
#: enough to hand whole to a model or an MCP client.
MAX_DOCUMENT_BYTES = 1024 * 1024
#: A skill's SKILL.md and assets together, in UTF-8 bytes (the same reasoning).
MAX_SKILL_BYTES = 1024 * 1024
# Names show in lists and MCP resource listings: one line, readable.
MAX_NAME_CHARS = 100
MAX_TITLE_CHARS = 200
_MIME = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")


def format_bytes(n: int) -> str:
    """``n`` bytes for people: ``512 bytes``, ``1.5 KiB``, ``1.0 MiB``."""
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


def pretty_json(text: str, what: str) -> str:
    """``text`` parsed as JSON and written back indented; ValidationError if it does not parse."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        value = json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        raise ValidationError(f"{what} is not valid JSON: {exc}") from None
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def text_bytes(text: str, what: str) -> int:
    """The UTF-8 size of ``text``, which must be storable in both stores."""
    if "\x00" in text:
        raise ValidationError(f"{what} contains NUL characters: only text can be stored")
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(f"{what} contains unpaired surrogates: not valid Unicode") from None


def check_size(size: int, what: str, limit: int) -> None:
    """ValidationError naming ``what`` if ``size`` bytes is over ``limit``."""
    if size > limit:
        raise ValidationError(
            f"{what} is {size:,} bytes: the most allowed is {limit:,} ({format_bytes(limit)})"
        )


def check_name(name: str, what: str, limit: int = MAX_NAME_CHARS) -> str:
    """``name`` on one line, whitespace collapsed; ValidationError if empty or too long."""
    # One line: names and titles show in lists and in MCP clients' menus.
    name = " ".join(name.split())
    if not name or len(name) > limit:
        raise ValidationError(f"{what} must be 1 to {limit} characters")
    text_bytes(name, what)
    return name


def check_mime(mime_type: str) -> str:
    """``mime_type`` lowercased; ValidationError unless it reads TYPE/SUBTYPE."""
    mime = mime_type.strip().lower()
    if not _MIME.fullmatch(mime):
        raise ValidationError(f"invalid MIME type {mime_type!r}: use TYPE/SUBTYPE, e.g. text/plain")
    return mime


def check_policy(policy: DocumentPolicy | str) -> DocumentPolicy:
    """``policy`` as a :class:`DocumentPolicy`; ValidationError naming the allowed ones."""
    try:
        return DocumentPolicy(policy)
    except ValueError:
        allowed = ", ".join(p.value for p in DocumentPolicy)
        raise ValidationError(f"invalid policy {policy!r}: use one of {allowed}") from None
