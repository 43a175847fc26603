"""SlackSink: messages to Slack channels with ``chat.postMessage``.

The bot token is the Slack connector's secret (opened for each post, never
logged); the request goes to the connector's URL through the outbound URL
guard. The text is converted to ``mrkdwn``; an event that names a thread
is answered in it (``thread_ts``).

Idempotency: each post carries the event id in Slack's message
``metadata``. Before a retry posts, :meth:`SlackSink.posted` looks for the
recorded message and, failing that, asks Slack's history for a message with
that metadata since the event arrived (a post whose record was lost to a
crash or a store failure is found, not posted again). A bot without the
``channels:history`` scope cannot ask: then the record alone decides.

Errors: a rate limit (HTTP 429, ``Retry-After``) is waited out within the
attempt when short, else it comes back as a retryable error saying when;
Slack's transient errors (5xx, ``internal_error``...) are retryable; a bad
token, an unknown channel or a missing scope fail the event at once, with
Slack's error code and what to do.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import httpx2

from agentws.chat.connectors import chat_connector
from agentws.chat.mrkdwn import to_mrkdwn
from agentws.chat.rate_limits import within_rate_limits
from agentws.chat.sinks import ConnectorSink, OutgoingMessage, SinkError, record_of, recorded
from agentws.connectors.admin import connector_headers
from agentws.connectors.native import send_to_connector, upstream_deadline
from agentws.core.errors import UnsafeUrlError, UpstreamError, ValidationError
from agentws.core.redaction import upstream_excerpt
from agentws.domain.models import ChatMessage, Connector

__all__ = ["METADATA_EVENT_TYPE", "SlackSink"]

log = logging.getLogger("agentws.chat")

#: ``metadata.event_type`` of the messages agentws posts; the payload names the event.
METADATA_EVENT_TYPE = "agentws_event"
_TIMEOUT_S = 15.0
# Slack's errors that say "later", not "wrong".
_TRANSIENT = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
_BAD_TOKEN = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
    }
)
_ADVICE = {
    "channel_not_found": "check the channel id, and that the bot can see the channel",
    "not_in_channel": "invite the bot to the channel (/invite @your-bot)",
    "is_archived": "the channel is archived",
    "missing_scope": "give the Slack app the chat:write scope and reinstall it",
    "msg_too_long": "the message is too long",
    "restricted_action": "the workspace does not let the bot post there",
}


@attrs.define(eq=False)
class SlackSink(ConnectorSink):
    async def posted(self, message: OutgoingMessage) -> ChatMessage | None:
        found = await recorded(self.store, message)
        if found is not None or message.event_id is None or message.since is None:
            return found
        try:
            connector = await self._connector(message)
            ts, text = await self._find_posted(connector, message)
        except SinkError as exc:
            log.info("slack: cannot check for an earlier post (%s)", exc.message)
            return None
        if ts is None:
            return None
        log.info("event %s: found its Slack message %s; not posting again", message.event_id, ts)
        return await self.store.post_chat_message(
            record_of(attrs.evolve(message, text=text), external_id=ts)
        )

    async def post(self, message: OutgoingMessage) -> ChatMessage:
        connector = await self._connector(message)
        body: dict[str, Any] = {
            "channel": message.channel.name,
            "text": to_mrkdwn(message.text, mentions=message.allow_mentions),
            "mrkdwn": True,
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if message.thread:
            body["thread_ts"] = message.thread
        if message.event_id:
            body["metadata"] = {
                "event_type": METADATA_EVENT_TYPE,
                "event_payload": {"event_id": message.event_id},
            }
        data = await self._call(connector, "POST", "/chat.postMessage", json=body)
        ts = data.get("ts")
        if not isinstance(ts, str):
            raise SinkError("Slack answered chat.postMessage without a message ts", retryable=True)
        return await self.store.post_chat_message(record_of(message, external_id=ts))

    async def _connector(self, message: OutgoingMessage) -> Connector:
        try:
            return await chat_connector(self.store, message.workspace_id, message.channel)
        except ValidationError as exc:
            raise SinkError(exc.message, retryable=False) from None

    async def _find_posted(
        self, connector: Connector, message: OutgoingMessage
    ) -> tuple[str | None, str]:
        """The ts and text of the message posted for the event since it arrived, if any."""
        since = message.since.timestamp() if message.since is not None else 0.0
        params = {
            "channel": message.channel.name,
            "oldest": f"{since:.6f}",
            "include_all_metadata": "true",
            "limit": "200",
        }
        method = "/conversations.history"
        if message.thread:
            method = "/conversations.replies"
            params["ts"] = message.thread
        data = await self._call(connector, "GET", method, params=params)
        for item in data.get("messages") or []:
            metadata = item.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if (
                metadata.get("event_type") == METADATA_EVENT_TYPE
                and payload.get("event_id") == message.event_id
                and isinstance(item.get("ts"), str)
            ):
                return item["ts"], str(item.get("text") or "")
        return None, ""

    async def _call(
        self,
        connector: Connector,
        verb: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Call a Web API method; its JSON when ``ok``, waiting out short rate limits.

        Error handling:
            :class:`SinkError`, retryable or not, naming Slack's error.
        """
        method = path.lstrip("/")
        headers = connector_headers(connector, self.keys.box())

        async def send() -> httpx2.Response:
            try:
                with upstream_deadline(connector, _TIMEOUT_S):
                    return await send_to_connector(
                        connector,
                        lambda http: http.request(verb, path, json=json, params=params),
                        headers=headers,
                        allowlist=self.settings.connector_allowlist,
                        resolve=self.resolve,
                    )
            except UpstreamError as exc:
                raise SinkError(f"Slack {method}: {exc.message}", retryable=True) from None
            except UnsafeUrlError as exc:
                raise SinkError(f"Slack {method}: {exc.message}", retryable=False) from None

        return _ok(method, await within_rate_limits(send, what=f"Slack {method}"))


def _ok(method: str, response: httpx2.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code >= 500:
        raise SinkError(f"Slack {method}: HTTP {response.status_code}", retryable=True)
    if not isinstance(data, dict):
        raise SinkError(
            f"Slack {method}: HTTP {response.status_code} without a JSON answer",
            retryable=False,
        )
    if data.get("ok") is True:
        return data
    error = upstream_excerpt(str(data.get("error") or "")) or f"HTTP {response.status_code}"
    if error in _TRANSIENT:
        raise SinkError(f"Slack {method}: {error}", retryable=True)
    if error in _BAD_TOKEN:
        raise SinkError(
            f"Slack {method}: the bot token was refused ({error}); give the Slack connector a "
            "valid token and check it with `agentws connector test WORKSPACE CONNECTOR`",
            retryable=False,
        )
    advice = _ADVICE.get(error)
    raise SinkError(
        f"Slack {method}: {error}" + (f" ({advice})" if advice else ""), retryable=False
    )
