"""Mass mentions made inert in the text agentws posts.

A run's text quotes payloads that anyone who knows a webhook's URL can
write, so ``@channel`` in an issue title must not ping a whole channel.
Chats ping everyone for these words: Slack ``@channel``/``@here``/
``@everyone`` and its markup ``<!channel>``, ``<!here>``, ``<!everyone>``;
Mattermost ``@channel``/``@all``/``@here`` (and, in its Slack-compatible
incoming webhooks, Slack's ``<!channel>`` markup); Rocket.Chat
``@all``/``@here``; Discord ``@everyone``/``@here``. A zero-width joiner
after the ``@`` (or the ``<``) breaks every one of them while the text reads
the same. Sinks quiet them unless the webhook allows mentions
(``allow_mentions``); Slack's mrkdwn escapes ``<`` already, and Discord is
also told, with ``allowed_mentions``.
"""

from __future__ import annotations

import re

__all__ = ["JOINER", "quiet_at_mentions", "quiet_mentions"]

#: ZERO WIDTH JOINER: invisible, and not a word character to any chat's mention parser.
JOINER = "\u200d"
_WORDS = r"(?:channel|here|all|everyone)"
# Not inside a word or an address (ops@all.example is mail, not a mention).
_AT = re.compile(rf"(?<![\w.+-])@(?={_WORDS}\b)", re.IGNORECASE)
_MARKUP = re.compile(rf"<!(?={_WORDS}\b|subteam\^)", re.IGNORECASE)


def quiet_at_mentions(text: str) -> str:
    """``text`` with its ``@channel``, ``@here``, ``@all`` and ``@everyone`` inert."""
    return _AT.sub("@" + JOINER, text)


def quiet_mentions(text: str) -> str:
    """``text`` with its ``@…`` mass mentions and Slack's ``<!channel>`` markup inert."""
    return _MARKUP.sub("<" + JOINER + "!", quiet_at_mentions(text))
