"""Pure rules: identifiers, slugs, secrets and their hashes. No I/O.

Secrets agentws hands out (MCP tokens, webhook URL tokens) carry a
recognisable prefix so secret scanners can find leaked ones, are shown once,
and are stored only as their SHA-256. Comparing hashes in constant time
keeps a timing side channel from revealing how much of a guess was right.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime

from agentws.core.errors import ValidationError

__all__ = [
    "ADMIN_TOKEN_PREFIX",
    "MCP_TOKEN_PREFIX",
    "WEBHOOK_TOKEN_PREFIX",
    "check_identifier",
    "check_slug",
    "hash_secret",
    "new_id",
    "new_secret",
    "secret_matches",
    "utcnow",
]

MCP_TOKEN_PREFIX = "agws_"  # noqa: S105 - a prefix, not a secret
WEBHOOK_TOKEN_PREFIX = "agwh_"  # noqa: S105
ADMIN_TOKEN_PREFIX = "agwa_"  # noqa: S105 - a prefix, not a secret

# 32 random bytes: far beyond guessing, short enough to paste.
_SECRET_BYTES = 32
# 80 bits of randomness in ids: unique without coordination between instances.
_ID_BYTES = 10

_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")


def utcnow() -> datetime:
    """The current time, timezone-aware UTC, to the microsecond."""
    return datetime.now(UTC)


def new_id(kind: str) -> str:
    """A new random id such as ``ws_k3q9...``: the prefix says what it names."""
    raw = base64.b32encode(secrets.token_bytes(_ID_BYTES)).decode("ascii").lower()
    return f"{kind}_{raw}"


def new_secret(prefix: str) -> str:
    """A new bearer secret: ``prefix`` followed by 43 URL-safe characters."""
    return prefix + secrets.token_urlsafe(_SECRET_BYTES)


def hash_secret(secret: str) -> str:
    """The SHA-256 of ``secret`` in hex: the only form in which secrets are stored."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(secret: str, stored_hash: str) -> bool:
    """Whether ``secret`` hashes to ``stored_hash``, compared in constant time."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)


def check_slug(value: str, *, what: str = "slug") -> str:
    """Return ``value`` if it is a slug (``[a-z0-9][a-z0-9-]*``, at most 63 characters).

    Raises:
        ValidationError: saying what a slug looks like.
    """
    return _matching(_SLUG, value, what, "'-', starting with a letter or digit")


def check_identifier(value: str, *, what: str = "name") -> str:
    """Return ``value`` if it is an identifier (``[a-z][a-z0-9_]*``, at most 63 characters).

    Connector names are identifiers because tools are named ``<connector>_<action>``.

    Raises:
        ValidationError: saying what an identifier looks like.
    """
    return _matching(_IDENTIFIER, value, what, "'_', starting with a letter")


def _matching(pattern: re.Pattern[str], value: str, what: str, rule: str) -> str:
    if not pattern.fullmatch(value):
        raise ValidationError(
            f"invalid {what} {value!r}: use lowercase letters, digits and {rule}, "
            "at most 63 characters"
        )
    return value
