"""Channel references: ``<sink>:<name>``, checked when a webhook is saved.

- ``local:ops``: the channel ``ops`` of the embedded chat (messages kept in
  the store, read with ``agentws channel tail``). A bare name means
  ``local:``, and a leading ``#`` is dropped (``#ops`` is ``local:ops``).
- ``slack:C0123456789``: a Slack channel, by its id, posted to with the bot
  token of the workspace's Slack connector; ``slack:<connector>/C0123456789``
  names the connector when the workspace has several.
- ``webhook:<connector>``: the chat incoming-webhook URL kept by an
  ``incoming_webhook`` connector (Slack, Mattermost, Discord and compatible).

Only the syntax is checked here; that the connector exists is checked by
the webhook's configuration (:func:`agentws.chat.connectors.check_channel`).
"""

from __future__ import annotations

import re

import attrs

from agentws.core.errors import ValidationError

__all__ = ["SINKS", "ChannelRef", "parse_channel"]

#: Sinks messages can go to.
SINKS = ("local", "slack", "webhook")
_LOCAL_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")
# Conversation ids: channels (C), private channels (G), DMs (D), a user (U/W: their DM).
_SLACK_CHANNEL = re.compile(r"[CDGUW][A-Z0-9]{6,23}")
_CONNECTOR = re.compile(r"[a-z][a-z0-9_]{0,62}")
# The sinks whose channel is one name: what it looks like, and what is wrong otherwise.
_ONE_NAME = {
    "local": (
        _LOCAL_NAME,
        "invalid local channel name {name!r}: use lowercase letters, digits, '.', '_' "
        "and '-', starting with a letter or digit, at most 80 characters",
    ),
    "webhook": (
        _CONNECTOR,
        "invalid channel {text!r}: webhook:<connector> names an incoming_webhook "
        "connector (see `agentws connector add WORKSPACE NAME --kind incoming_webhook`)",
    ),
}


@attrs.frozen
class ChannelRef:
    """A sink and a channel name in it (and, for Slack, the connector if named)."""

    sink: str
    name: str
    connector: str | None = None

    def __str__(self) -> str:
        if self.connector is not None:
            return f"{self.sink}:{self.connector}/{self.name}"
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
    if sink in _ONE_NAME:
        pattern, problem = _ONE_NAME[sink]
        if not pattern.fullmatch(name):
            raise ValidationError(problem.format(name=name, text=text))
        return ChannelRef(sink, name)
    if sink == "slack":
        return _slack(name, text)
    raise ValidationError(
        f"unknown chat sink {sink!r} in channel {text!r}: use local:<name>, "
        "slack:<channel-id> or webhook:<connector>"
    )


def _slack(name: str, text: str) -> ChannelRef:
    connector, slash, channel = name.rpartition("/")
    if slash and not _CONNECTOR.fullmatch(connector):
        raise ValidationError(f"invalid Slack connector name {connector!r} in channel {text!r}")
    if not _SLACK_CHANNEL.fullmatch(channel):
        raise ValidationError(
            f"invalid Slack channel {text!r}: use the channel's id, such as "
            "slack:C0123456789 (in Slack: channel details, at the bottom), not its name"
        )
    return ChannelRef("slack", channel, connector or None)
