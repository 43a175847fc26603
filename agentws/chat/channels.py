"""Channel references: ``<sink>:<name>``, checked when a webhook is saved.

``local:ops`` is the channel ``ops`` of the embedded chat (messages kept in
the store, read with ``agentws channel tail``); a bare name means
``local:``, and a leading ``#`` is dropped (``#ops`` is ``local:ops``).
"""

from __future__ import annotations

import re

import attrs

from agentws.errors import ValidationError

__all__ = ["SINKS", "ChannelRef", "parse_channel"]

#: Sinks this version can post to.
SINKS = ("local",)
# Sinks that exist in later versions: saying so beats "unknown sink".
_LATER = {"slack": "Slack", "webhook": "incoming-webhook"}
_LOCAL_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")


@attrs.frozen
class ChannelRef:
    """A sink and a channel name in it."""

    sink: str
    name: str

    def __str__(self) -> str:
        return f"{self.sink}:{self.name}"


def parse_channel(text: str) -> ChannelRef:
    """The channel ``text`` names.

    Raises:
        ValidationError: saying what a channel reference looks like.
    """
    raw = text.strip()
    sink, sep, name = raw.partition(":")
    if not sep:
        sink, name = "local", raw
    sink = sink.strip().lower()
    name = name.strip().removeprefix("#")
    if sink in _LATER:
        raise ValidationError(
            f"{_LATER[sink]} channels ({sink}:…) are not available in this version; "
            "use a local channel such as local:ops"
        )
    if sink not in SINKS:
        raise ValidationError(
            f"unknown chat sink {sink!r} in channel {text!r}: use local:<name> (or just <name>)"
        )
    if not _LOCAL_NAME.fullmatch(name):
        raise ValidationError(
            f"invalid local channel name {name!r}: use lowercase letters, digits, '.', '_' "
            "and '-', starting with a letter or digit, at most 80 characters"
        )
    return ChannelRef(sink, name)
