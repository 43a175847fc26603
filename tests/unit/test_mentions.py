"""Mass mentions in posted text: inert by default, in each chat's own syntax."""

from __future__ import annotations

import pytest

from agentws.chat.incoming_webhook import _body
from agentws.chat.mentions import JOINER, quiet_mentions
from agentws.chat.mrkdwn import to_mrkdwn

TEXT = "@channel @HERE @all @everyone <!channel> <!here|here> <!subteam^S1> ops@all.example"


@pytest.mark.parametrize(
    ("raw", "inert"),
    [
        ("@channel", f"@{JOINER}channel"),
        ("@here, now", f"@{JOINER}here, now"),
        ("(@All)", f"(@{JOINER}All)"),
        ("<!everyone>", f"<{JOINER}!everyone>"),
        ("<!subteam^S123|@ops>", f"<{JOINER}!subteam^S123|@ops>"),
        # Not mentions: mail, a longer name, a word.
        ("ops@all.example", "ops@all.example"),
        ("@channels", "@channels"),
        ("channel", "channel"),
    ],
)
def test_quiet_mentions(raw: str, inert: str) -> None:
    assert quiet_mentions(raw) == inert


def test_discord_gets_inert_text_and_no_allowed_mentions_unless_allowed() -> None:
    url = "https://discord.com/api/webhooks/1/x"
    quiet = _body(url, TEXT, mentions=False)
    assert quiet == {"content": quiet_mentions(TEXT), "allowed_mentions": {"parse": []}}
    assert _body(url, TEXT, mentions=True) == {"content": TEXT}


def test_mattermost_and_the_rest_get_inert_text_unless_allowed() -> None:
    url = "https://chat.example/hooks/abc"
    assert _body(url, TEXT, mentions=False) == {"text": quiet_mentions(TEXT)}
    assert _body(url, TEXT, mentions=True) == {"text": TEXT}


def test_slack_keeps_its_own_mentions_only_when_allowed() -> None:
    assert to_mrkdwn("<!here> @channel", mentions=True) == "<!here> @channel"
    assert to_mrkdwn("<!here> @channel") == f"&lt;!here&gt; @{JOINER}channel"
    assert to_mrkdwn("`<!here>`", mentions=True) == "`&lt;!here&gt;`"  # code stays code
