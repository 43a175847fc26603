"""Request paths of native actions: arguments checked against each API's grammar, then encoded.

An argument that becomes part of a request's path (a GitHub owner,
repository or branch, a Stripe object id) must first match what the remote
API itself accepts for it; then each path segment is percent-encoded on its
own and the path is joined from segments, never formatted from a string.
Together these mean nothing a caller sends can add, remove or climb out of
a segment: no ``..``, ``/``, ``?``, ``#``, percent-escapes (``%2e``,
``%2f``), backslashes, control characters or non-ASCII look-alikes of them
(which some servers fold to ASCII) ever reach the upstream's router.

Every check is a :class:`Grammar`: what the value must be, and a function
saying why a given value is not it (None when it is).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import quote

import attrs

__all__ = [
    "GITHUB_OWNER",
    "GITHUB_REPOSITORY",
    "GIT_BRANCH",
    "STRIPE_ID",
    "Grammar",
    "branch_segments",
    "join_path",
]

# Values are shown in errors up to this many characters (as ascii(), so
# control characters and look-alikes are visible for what they are).
_SHOWN_CHARS = 60


@attrs.frozen
class Grammar:
    """What an argument must be, and why a value is not that."""

    #: Completes "is not ...": ``a GitHub owner name``.
    what: str
    why_not: Callable[[str], str | None] = attrs.field(repr=False)

    def problem(self, argument: str, value: object) -> str | None:
        """``"<argument>: <value> is not <what>: <why>"``, or None if ``value`` is one."""
        if not isinstance(value, str):
            return f"{argument}: must be a string"
        why = self.why_not(value)
        if why is None:
            return None
        shown = ascii(value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "...")
        return f"{argument}: {shown} is not {self.what}: {why}"


def _pattern(regex: str, rule: str) -> Callable[[str], str | None]:
    compiled = re.compile(regex)

    def why_not(value: str) -> str | None:
        return None if compiled.fullmatch(value) else rule

    return why_not


# GitHub logins: letters, digits and hyphens, 39 at most, not starting with a
# hyphen; Enterprise Managed Users add "_<shortcode>", so underscores too.
GITHUB_OWNER = Grammar(
    "a GitHub owner name",
    _pattern(
        r"[A-Za-z0-9][A-Za-z0-9_-]{0,38}",
        "owner names are 1 to 39 ASCII letters, digits, '-' or '_', starting with a "
        "letter or digit",
    ),
)


def _repository(value: str) -> str | None:
    if value in {".", ".."}:
        return "'.' and '..' are not repository names"
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", value):
        return "repository names are 1 to 100 ASCII letters, digits, '.', '-' or '_'"
    return None


GITHUB_REPOSITORY = Grammar("a GitHub repository name", _repository)

# git check-ref-format forbids these anywhere in a ref (with control
# characters and DEL); '%' is refused as well, so that no proxy on the way
# can decode an escape inside a name into a path separator.
_NOT_IN_BRANCH = set(" ~^:?*[\\%")


def _branch(value: str) -> str | None:
    if not value:
        return "it is empty"
    if len(value.encode()) > 255:
        return "it is longer than 255 bytes"
    for char in value:
        if not char.isascii():
            return "only ASCII is accepted in branch names here (no look-alike characters)"
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return "control characters are not allowed"
        if char in _NOT_IN_BRANCH:
            return f"git does not allow {char!r} in a branch name"
    if ".." in value:
        return "git does not allow '..' in a branch name"
    if "@{" in value or value == "@":
        return "git does not allow '@{' or a lone '@' as a branch name"
    if value.startswith("-") or value == "HEAD":
        return "git does not allow a branch name starting with '-' or named HEAD"
    if value.endswith("."):
        return "git does not allow a branch name ending with '.'"
    for part in value.split("/"):
        if not part:
            return "a branch name may not start or end with '/' or contain '//'"
        if part.startswith("."):
            return "no part of a branch name between slashes may start with '.'"
        if part.endswith(".lock"):
            return "no part of a branch name between slashes may end with '.lock'"
    return None


GIT_BRANCH = Grammar("a git branch name", _branch)

# Stripe ids: a type prefix, an underscore and letters or digits (cus_NffrFeUfNV2Hib).
STRIPE_ID = Grammar(
    "a Stripe object id",
    _pattern(
        r"[A-Za-z0-9]{1,50}_[A-Za-z0-9_]{1,200}",
        "Stripe ids are a prefix, '_' and ASCII letters or digits, like cus_NffrFeUfNV2Hib",
    ),
)


def branch_segments(branch: str) -> list[str]:
    """A branch's path segments after ``git/refs/heads``: its parts between slashes.

    GitHub's own ref URLs (the ``url`` of a ref it returns) keep a branch's
    slashes: ``.../git/refs/heads/feature/x``. ``branch`` must have passed
    :data:`GIT_BRANCH`, so no part is empty or a dot segment.
    """
    return branch.split("/")


def join_path(*segments: str) -> str:
    """``/seg/seg/...`` with each segment percent-encoded on its own (only ``A-Za-z0-9-._~`` kept).

    Error handling:
        ValueError for an empty, ``.`` or ``..`` segment: a caller checked
        its arguments too little (a bug, never a caller's input).
    """
    for segment in segments:
        if segment in {"", ".", ".."}:
            raise ValueError(f"not a path segment: {segment!r}")
    return "/" + "/".join(quote(segment, safe="") for segment in segments)
