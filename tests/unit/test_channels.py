"""Channel references (``agentws.chat.channels.parse_channel``): what a webhook may post to."""

from __future__ import annotations

import pytest

from agentws.chat.channels import SINKS, ChannelRef, parse_channel
from agentws.errors import ValidationError


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
    ("text", "what"), [("slack:C1", "Slack"), ("webhook:x", "incoming-webhook")]
)
def test_sinks_of_later_versions_are_named_as_such(text: str, what: str) -> None:
    with pytest.raises(ValidationError, match="not available in this version") as caught:
        parse_channel(text)
    assert caught.value.message.startswith(f"{what} channels")
    assert "local:ops" in caught.value.message  # says what to use instead
    # Whatever the case of the sink.
    with pytest.raises(ValidationError, match="not available in this version"):
        parse_channel(text.upper())


@pytest.mark.parametrize("text", ["teams:x", "discord:ops", ":ops", "irc:#ops"])
def test_unknown_sinks(text: str) -> None:
    with pytest.raises(ValidationError, match="unknown chat sink") as caught:
        parse_channel(text)
    assert repr(text) in caught.value.message
    assert "local:<name>" in caught.value.message


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


def test_only_local_is_available() -> None:
    assert SINKS == ("local",)
