"""IncomingWebhookSink: messages to a chat's incoming-webhook URL.

Slack, Mattermost and Discord (and many others) take a JSON POST at a
secret URL. The URL is the ``incoming_webhook`` connector's secret, sealed
at rest, opened for each post and never logged or shown (errors name its
host only); the request goes through the outbound URL guard. The body
follows the host: Slack (``hooks.slack.com``) gets ``{"text"}`` in
``mrkdwn``, Discord gets ``{"content"}`` (Markdown, at most 2000
characters), anything else ``{"text"}`` in Markdown (Mattermost, Rocket.Chat
and the Slack-compatible rest). Mass mentions are made inert in each
(:mod:`agentws.chat.mentions`) unless the webhook allows them.

Idempotency: these URLs cannot be asked what was posted, so the recorded
message decides: an event with a record is not posted again. (A crash
between the post and its record can repeat a message; nothing else can.)
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx2

from agentws.chat.connectors import chat_connector
from agentws.chat.mentions import quiet_mentions
from agentws.chat.mrkdwn import to_mrkdwn
from agentws.chat.rate_limits import within_rate_limits
from agentws.chat.sinks import ConnectorSink, OutgoingMessage, SinkError, record_of, recorded
from agentws.connectors.url_guard import (
    Allowlist,
    GuardedTransport,
    url_origin,
)
from agentws.core.deadlines import deadline, time_left_s
from agentws.core.errors import UnsafeUrlError, UpstreamError, ValidationError
from agentws.core.redaction import upstream_excerpt
from agentws.domain.models import ChatMessage, Connector
from agentws.settings.secret_box import SecretBox

__all__ = ["IncomingWebhookSink", "probe_hook"]

_TIMEOUT_S = 15.0
_DISCORD_MAX_CHARS = 2000
# Answers that mean the URL itself is no good (removed, revoked, archived).
_GONE = frozenset({401, 403, 404, 410})


def _flavour(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    if host == "hooks.slack.com":
        return "slack"
    if host in ("discord.com", "discordapp.com") or host.endswith(".discord.com"):
        return "discord"
    return "markdown"


def _body(url: str, text: str, *, mentions: bool) -> dict[str, Any]:
    flavour = _flavour(url)
    if flavour == "slack":
        return {"text": to_mrkdwn(text, mentions=mentions)}
    if not mentions:
        text = quiet_mentions(text)
    if flavour == "discord":
        if len(text) > _DISCORD_MAX_CHARS:
            text = text[: _DISCORD_MAX_CHARS - 30].rstrip() + "\n… (cut: too long)"
        if mentions:
            return {"content": text}
        # Mentions in a quoted payload must not ping anyone, whatever their spelling.
        return {"content": text, "allowed_mentions": {"parse": []}}
    return {"text": text}


@attrs.define(eq=False)
class IncomingWebhookSink(ConnectorSink):
    async def posted(self, message: OutgoingMessage) -> ChatMessage | None:
        # These URLs answer no questions: the record decides.
        return await recorded(self.store, message)

    async def post(self, message: OutgoingMessage) -> ChatMessage:
        try:
            connector = await chat_connector(self.store, message.workspace_id, message.channel)
        except ValidationError as exc:
            raise SinkError(exc.message, retryable=False) from None
        url = self._url(connector)
        response = await self._send(
            connector, url, _body(url, message.text, mentions=message.allow_mentions)
        )
        where = f"incoming webhook {connector.name!r} ({url_origin(url)})"
        if response.is_success:
            external: str | None = None
            try:
                data = response.json()
                if isinstance(data, dict) and isinstance(data.get("id"), str):
                    external = data["id"]
            except ValueError:
                pass
            return await self.store.post_chat_message(record_of(message, external_id=external))
        # The URL is the secret: error pages that echo the request must not carry it.
        detail = upstream_excerpt(response.content, secrets=(url,))
        what = f"{where}: HTTP {response.status_code}" + (f" {detail}" if detail else "")
        if response.status_code >= 500 or response.status_code == 408:
            raise SinkError(what, retryable=True)
        if response.status_code in _GONE:
            raise SinkError(
                f"{what}: the URL was refused; it may have been removed or revoked "
                "(replace the connector's secret)",
                retryable=False,
            )
        raise SinkError(f"{what}: the message was refused", retryable=False)

    def _url(self, connector: Connector) -> str:
        if connector.secret is None:
            raise SinkError(f"connector {connector.name!r} has no URL", retryable=False)
        return self.keys.box().open(connector.secret)

    async def _send(self, connector: Connector, url: str, body: dict[str, Any]) -> httpx2.Response:
        """POST ``body`` to ``url``, waiting out short rate limits.

        Error handling:
            SinkError (retryable when the chat could not be reached or
            limits the rate for long).
        """
        where = f"incoming webhook {connector.name!r} ({url_origin(url)})"
        guard = GuardedTransport(self.settings.connector_allowlist, resolve=self.resolve)

        def too_slow() -> SinkError:
            return SinkError(f"{where} did not answer within {_TIMEOUT_S:g} s", retryable=True)

        async def send() -> httpx2.Response:
            try:
                with deadline(_TIMEOUT_S, too_slow):
                    async with httpx2.AsyncClient(
                        transport=guard, timeout=_TIMEOUT_S, headers={"User-Agent": "agentws"}
                    ) as http:
                        return await http.post(url, json=body)
            except UnsafeUrlError as exc:
                raise SinkError(f"{where}: {exc.message}", retryable=False) from None
            except httpx2.HTTPError as exc:
                # The exception's text may hold the URL: name its kind only.
                raise SinkError(
                    f"cannot reach {where}: {type(exc).__name__}", retryable=True
                ) from None

        return await within_rate_limits(send, what=where)


def _hook_url(connector: Connector, box: SecretBox) -> str:
    if connector.secret is None:
        raise UpstreamError(f"connector {connector.name!r} has no URL (its secret)")
    return box.open(connector.secret)


def hook_deadline(
    connector: Connector, box: SecretBox, seconds: float
) -> AbstractContextManager[None]:
    """A deadline for the connector's webhook URL to answer within the block.

    Error handling:
        UpstreamError naming the URL's origin (never its secret path) when
        ``seconds`` pass.
    """

    def too_slow() -> UpstreamError:
        where = url_origin(_hook_url(connector, box))
        return UpstreamError(f"{where} did not answer within {seconds:g} s")

    return deadline(seconds, too_slow)


async def probe_hook(connector: Connector, box: SecretBox, allowlist: Allowlist) -> str:
    """Check the URL answers, without posting, within the caller's deadline
    (:func:`hook_deadline`): what it proved.

    A GET posts nothing; a live webhook answers it with some HTTP status
    (405, 400 or 200 by service), a removed one with 401/403/404/410.

    Error handling:
        UpstreamError (unreachable, refused); UnsafeUrlError from the guard.
    """
    url = _hook_url(connector, box)
    where = url_origin(url)
    try:
        async with httpx2.AsyncClient(
            transport=GuardedTransport(allowlist), timeout=time_left_s()
        ) as http:
            response = await http.get(url)
    except httpx2.HTTPError as exc:
        raise UpstreamError(f"cannot reach {where}: {type(exc).__name__}") from None
    if response.status_code in _GONE:
        raise UpstreamError(
            f"{where} answered HTTP {response.status_code}: the URL was refused "
            "(removed or revoked?)"
        )
    return f"{where} answers (HTTP {response.status_code} to a GET; nothing was posted)"
