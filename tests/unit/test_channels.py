"""Channel references (``agentws.chat.channels.parse_channel``): what a webhook may post to."""

from __future__ import annotations

import pytest

from agentws.chat.channels import SINKS, ChannelRef, parse_channel
from agentws.core.errors import ValidationError


@pytest.mark.parametrize(
    "text",
    [
        "ops",
        "#ops",
        "local:ops",
        "LOCAL:ops",
        "Local:#ops",
        "  ops  ",
        "local: ops",
        " #ops",
        "ops\n",
    ],
)
def test_the_local_ops_channel_however_it_is_written(text: str) -> None:
    ref = parse_channel(text)
    assert ref == ChannelRef("local", "ops")
    assert str(ref) == "local:ops"


@pytest.mark.parametrize(
    "name", ["a", "0", "ops-alerts", "build.logs", "team_a", "9lives", "a" * 80, "a.b_c-d"]
)
def test_good_local_names(name: str) -> None:
    assert parse_channel(name) == ChannelRef("local", name)
    assert parse_channel(f"local:{name}") == ChannelRef("local", name)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("slack:C0123456789", ChannelRef("slack", "C0123456789")),
        ("Slack:#C0123456789", ChannelRef("slack", "C0123456789")),
        ("slack:G0123456", ChannelRef("slack", "G0123456")),
        ("slack:acme_slack/C0123456789", ChannelRef("slack", "C0123456789", "acme_slack")),
        ("webhook:alerts", ChannelRef("webhook", "alerts")),
        ("WEBHOOK:team_chat", ChannelRef("webhook", "team_chat")),
    ],
)
def test_slack_and_incoming_webhook_channels(text: str, expected: ChannelRef) -> None:
    ref = parse_channel(text)
    assert ref == expected
    assert parse_channel(str(ref)) == ref  # what is stored reads back the same


@pytest.mark.parametrize(
    "text", ["slack:general", "slack:#general", "slack:c0123456789", "slack:C1"]
)
def test_slack_channels_are_ids_not_names(text: str) -> None:
    with pytest.raises(ValidationError, match="use the channel's id") as caught:
        parse_channel(text)
    assert "slack:C0123456789" in caught.value.message


@pytest.mark.parametrize("text", ["slack:Bad-Name/C0123456789", "slack:/x/C0123456789"])
def test_a_bad_slack_connector_name(text: str) -> None:
    with pytest.raises(ValidationError, match="invalid Slack connector name"):
        parse_channel(text)


@pytest.mark.parametrize("text", ["webhook:", "webhook:Alerts", "webhook:https://hooks.example"])
def test_webhook_channels_name_a_connector(text: str) -> None:
    with pytest.raises(ValidationError, match="incoming_webhook") as caught:
        parse_channel(text)
    assert "agentws connector add" in caught.value.message


@pytest.mark.parametrize("text", ["teams:x", "discord:ops", ":ops", "irc:#ops"])
def test_unknown_sinks(text: str) -> None:
    with pytest.raises(ValidationError, match="unknown chat sink") as caught:
        parse_channel(text)
    assert repr(text) in caught.value.message
    assert "local:<name>" in caught.value.message
    assert "slack:<channel-id>" in caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "#",
        "local:",
        "local:#",
        "Bad Name!",
        "Ops",  # names are lower case: not folded, refused
        "local:OPS",
        "-ops",
        ".ops",
        "_ops",
        "ops channel",
        "ops/alerts",
        "ops:extra",  # read as sink "ops": unknown
        "local:ops:extra",
        "##ops",
        "a" * 81,
        "opś",
        "o\tps",
    ],
)
def test_bad_names_are_refused(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_channel(text)
    message = caught.value.message
    assert "invalid local channel name" in message or "unknown chat sink" in message, message


def test_an_invalid_name_says_what_a_name_looks_like() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_channel("Bad Name!")
    message = caught.value.message
    assert "invalid local channel name 'Bad Name!'" in message
    assert "lowercase" in message
    assert "80 characters" in message


@pytest.mark.parametrize("text", ["ops", "#ops", "LOCAL:ops", "local:a.b_c-d", "x" * 80])
def test_str_round_trips(text: str) -> None:
    ref = parse_channel(text)
    assert str(ref) == f"{ref.sink}:{ref.name}"
    assert parse_channel(str(ref)) == ref
    assert str(parse_channel(str(ref))) == str(ref)


def test_the_sinks() -> None:
    assert SINKS == ("local", "slack", "webhook")
