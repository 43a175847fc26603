"""The webhook door: ``POST /hooks/<token>``, answered 202 once the event is stored.

A plain ASGI handler in front of the Quart app, like the MCP door: it reads
the body itself, so a body over the limit is refused as soon as the limit is
passed (a chunked upload is not read to its end) and memory stays bounded
by the limit.

Checks, in this order, each refusal a JSON body ``{"error": {"code",
"message"}}``:

==========================  ======  =====================
method other than POST      405     ``method_not_allowed``
unknown token               404     ``not_found``
draft webhook               403     ``webhook_inactive``
body over the limit         413     ``payload_too_large``
body not all there in time  408     ``body_read_timeout`` (connection closed)
not ``application/json``    415     ``unsupported_media_type``
body not JSON               400     ``invalid_json``
JSON but not an object      422     ``not_an_object``
bad or missing signature    401     ``invalid_signature``
over the rate limit         429     ``rate_limited`` + ``Retry-After``
store unavailable           503     ``store_unavailable`` + ``Retry-After``
==========================  ======  =====================

Then: a new event → 202 ``{"event_id", "status": "queued"}``; a redelivery
(same delivery id, same body) → 200 with the first ``event_id`` and
``"status": "duplicate"`` (for a signed delivery, the id its signature
vouches for: see :func:`agentws.domain.deliveries.dedup_key`); the same id with another body → 409
``idempotency_conflict``. An id that is not usable as a key (empty, over
200 characters) → 400 ``invalid_delivery_id``.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from agentws.config import Settings
from agentws.domain.deliveries import IngestOutcome, TokenBucket, allowed_headers, dedup_key
from agentws.domain.models import Event, Webhook
from agentws.domain.rules import hash_secret, utcnow
from agentws.domain.signatures import SignatureError, verify
from agentws.errors import ConfigError, StoreError
from agentws.logs import add_log_context
from agentws.metrics import INGEST_SECONDS, REJECTED, WEBHOOK_DELIVERIES
from agentws.secret_box import SecretBox
from agentws.store import Store
from agentws.webhooks.batcher import IngestBatcher

__all__ = ["HookDoor", "Intake"]

log = logging.getLogger("agentws.webhooks")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_PREFIX = "/hooks/"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,200}")
# Retry-After for a store that is down: soon, but not in a tight loop.
_STORE_RETRY_S = 5
_JSON = [(b"content-type", b"application/json")]
_NOT_FOUND = "no webhook at this URL (it may have been deleted)"
_INACTIVE = "this webhook is a draft: an admin must activate it"
# Active webhooks remembered by the door; more than this many starts afresh.
_MAX_REMEMBERED = 10_000


# A \ud800-\udfff escape: only then can a parsed body hold a lone surrogate,
# which json accepts and no UTF-8 encoder (nor the agent's run) does.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _Refusal(Exception):
    def __init__(self, status: int, code: str, message: str, **headers: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


@attrs.define(eq=False)
class _Lookup:
    """A webhook read in flight, which concurrent deliveries wait for."""

    done: trio.Event = attrs.field(factory=trio.Event)
    answered: bool = False
    webhook: Webhook | None = None
    error: StoreError | None = None


@attrs.define(eq=False)
class Intake:
    """What the door needs of the running service: the store, the batcher, rate buckets."""

    store: Store
    settings: Settings
    batcher: IngestBatcher
    _buckets: dict[str, tuple[tuple[int, int], TokenBucket]] = attrs.field(factory=dict)
    _secrets: dict[bytes, str] = attrs.field(factory=dict)
    _lookups: dict[str, _Lookup] = attrs.field(factory=dict)
    # token hash -> an active webhook, as read
    _active: dict[str, Webhook] = attrs.field(factory=dict)
    _box: SecretBox | None = attrs.field(default=None, init=False)

    async def webhook(self, token: str) -> Webhook | None:
        """The webhook whose URL holds ``token``, or None.

        An active webhook is remembered: a webhook changes after it is made
        only by being deactivated or deleted, and the transaction that stores
        an event checks both again (see :meth:`forget`). So a delivery costs
        no read of its own, and a deleted webhook's URL still answers 404 from
        the moment it is deleted, by any process.

        Otherwise concurrent deliveries to one webhook share one read in
        flight. A read begun before a request arrived answers it too, which
        is no staler than the request arriving a moment earlier.
        """
        digest = hash_secret(token)
        known = self._active.get(digest)
        if known is not None:
            return known
        flight = self._lookups.get(digest)
        if flight is not None:
            await flight.done.wait()
            if flight.answered:
                if flight.error is not None:
                    raise flight.error
                return flight.webhook
        flight = self._lookups[digest] = _Lookup()
        try:
            flight.webhook = await self.store.find(Webhook, token_hash=digest)
            flight.answered = True
        except StoreError as exc:
            flight.error, flight.answered = exc, True
            raise
        finally:
            if self._lookups.get(digest) is flight:
                del self._lookups[digest]
            flight.done.set()
        if flight.webhook is not None and flight.webhook.active:
            if len(self._active) >= _MAX_REMEMBERED:
                self._active.clear()
            self._active[digest] = flight.webhook
        return flight.webhook

    def known(self, token: str) -> Webhook | None:
        """The active webhook whose URL holds ``token``, if remembered (see :meth:`webhook`)."""
        return self._active.get(hash_secret(token))

    def forget(self, webhook: Webhook) -> None:
        """Read ``webhook`` afresh next time: storing its event found it deleted or a draft."""
        self._active.pop(webhook.token_hash, None)

    async def take(self, webhook: Webhook) -> int | None:
        """A token from the webhook's bucket: None, or the whole seconds to wait for one.

        This process's bucket answers first. On PostgreSQL, where several
        instances may share the database, a delivery this process would let
        through also takes a token from the webhook's shared bucket in the
        store, so that a sender cannot multiply the rate by the number of
        instances. (This process's deliveries are a part of all of them: a
        refusal here would be a refusal there too, and costs no query.)

        Error handling:
            StoreError from the shared bucket.
        """
        shape = (webhook.rate_per_min, webhook.burst)
        held = self._buckets.get(webhook.id)
        if held is None or held[0] != shape:
            held = (shape, TokenBucket(webhook.rate_per_min, webhook.burst))
            self._buckets[webhook.id] = held
        wait = held[1].take(trio.current_time())
        if wait is not None or self.store.dialect != "postgres":
            return wait
        shared = await self.store.take_rate_token(
            webhook.id, rate_per_min=webhook.rate_per_min, burst=webhook.burst, now=utcnow()
        )
        return None if shared is None else max(1, math.ceil(shared))

    def secret(self, webhook: Webhook) -> str | None:
        """The webhook's verification secret, unsealed (and kept in memory)."""
        if webhook.secret is None:
            return None
        found = self._secrets.get(webhook.secret)
        if found is None:
            if self._box is None:
                self._box = SecretBox.from_settings(self.settings)
            found = self._box.open(webhook.secret)
            if len(self._secrets) > 10_000:
                self._secrets.clear()
            self._secrets[webhook.secret] = found
        return found


@attrs.define(eq=False)
class HookDoor:
    """The ASGI handler of ``/hooks/...``; everything else goes to ``app``."""

    app: ASGIApp
    settings: Settings
    intake: Callable[[], Intake]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        body = _Body(receive, self.settings.body_read_timeout_s)
        started = time.perf_counter()
        try:
            status, answer = await self._handle(scope, body)
            add_log_context(event=answer["event_id"])
            WEBHOOK_DELIVERIES.labels(answer["status"]).inc()
            await _respond(send, status, answer)
            INGEST_SECONDS.observe(time.perf_counter() - started)
        except _Refusal as refusal:
            WEBHOOK_DELIVERIES.labels("refused").inc()
            REJECTED.labels("webhook", refusal.code).inc()
            error = {"error": {"code": refusal.code, "message": refusal.message}}
            if body.complete:
                await _respond(send, refusal.status, error, refusal.headers)
            else:
                await _refuse_unread(body, send, refusal.status, error, refusal.headers)
        except Exception:
            REJECTED.labels("webhook", "internal_error").inc()
            log.exception("webhook delivery to %s failed", _PREFIX + "…")
            error = {"error": {"code": "internal_error", "message": "see the server log"}}
            await _respond(send, 500, error)

    async def _handle(self, scope: Scope, body_in: _Body) -> tuple[int, dict[str, Any]]:
        if scope["method"] != "POST":
            raise _Refusal(
                405,
                "method_not_allowed",
                f"{scope['method']} is not supported here; deliver events with POST",
                Allow="POST",
            )
        token = scope["path"][len(_PREFIX) :]
        intake = self.intake()
        if not _TOKEN.fullmatch(token):
            raise _Refusal(404, "not_found", _NOT_FOUND)
        remembered = intake.known(token)
        if remembered is None:
            return await self._accept(scope, body_in, intake, await self._current(intake, token))
        try:
            return await self._accept(scope, body_in, intake, remembered)
        except _Refusal:
            # A remembered webhook may have been deleted or deactivated since:
            # that answer comes before any other, as if it had been read now.
            intake.forget(remembered)
            await self._current(intake, token)
            raise

    async def _current(self, intake: Intake, token: str) -> Webhook:
        """The webhook at ``token`` as the store has it now; refused if gone or a draft."""
        webhook: Webhook | None = await self._store_call(intake.webhook(token))
        if webhook is None:
            raise _Refusal(404, "not_found", _NOT_FOUND)
        if not webhook.active:
            raise _Refusal(403, "webhook_inactive", _INACTIVE)
        return webhook

    async def _accept(
        self, scope: Scope, body_in: _Body, intake: Intake, webhook: Webhook
    ) -> tuple[int, dict[str, Any]]:
        add_log_context(webhook=webhook.id)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = await body_in.read(headers.get("content-length"), webhook.max_body_bytes)
        if not _is_json(headers.get("content-type")):
            raise _Refusal(
                415, "unsupported_media_type", "send the event as Content-Type: application/json"
            )
        try:
            payload = json.loads(body, parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise _Refusal(400, "invalid_json", "the body is not valid JSON") from None
        if not isinstance(payload, dict):
            raise _Refusal(
                422, "not_an_object", f"the body must be a JSON object, not {_kind(payload)}"
            )
        if _SURROGATE_ESCAPE.search(body) and not _encodable(payload):
            raise _Refusal(
                400,
                "invalid_json",
                "the body has an unpaired UTF-16 surrogate escape (\\ud800-\\udfff), "
                "which is not text",
            )
        try:
            secret = intake.secret(webhook)
            signed = verify(webhook.verification, secret, body, headers, now=time.time())
        except SignatureError as exc:
            raise _Refusal(
                401, "invalid_signature", f"signature check failed: {exc.reason}"
            ) from None
        except (ConfigError, StoreError) as exc:
            log.error("cannot check the signature of webhook %s: %s", webhook.id, exc)
            raise _Refusal(
                503,
                "verification_unavailable",
                "the webhook's secret cannot be read; retry later",
                **{"Retry-After": str(_STORE_RETRY_S)},
            ) from None
        wait = await self._store_call(intake.take(webhook))
        if wait is not None:
            raise _Refusal(
                429,
                "rate_limited",
                f"this webhook takes {webhook.rate_per_min} events a minute; retry in {wait} s",
                **{"Retry-After": str(wait)},
            )
        try:
            key = dedup_key(headers, payload, signed)
        except ValueError as exc:
            raise _Refusal(400, "invalid_delivery_id", str(exc)) from None
        event = Event(
            webhook_id=webhook.id, body=body, headers=allowed_headers(headers), dedup_key=key
        )
        stored = await self._store_call(intake.batcher.submit(event))
        if stored.outcome is IngestOutcome.ACCEPTED:
            return 202, {"event_id": stored.event_id, "status": "queued"}
        if stored.outcome is IngestOutcome.DUPLICATE:
            return 200, {"event_id": stored.event_id, "status": "duplicate"}
        if stored.outcome is IngestOutcome.CONFLICT:
            raise _Refusal(
                409,
                "idempotency_conflict",
                f"delivery id {key!r} was already used for event {stored.event_id} with a "
                "different body",
            )
        intake.forget(webhook)
        if stored.outcome is IngestOutcome.INACTIVE:
            raise _Refusal(403, "webhook_inactive", _INACTIVE)
        raise _Refusal(404, "not_found", _NOT_FOUND)

    async def _store_call(self, work: Awaitable[Any]) -> Any:
        # A bare cancel scope: this runs for every delivery, and fail_after
        # costs a generator-based context manager on top of it.
        deadline = trio.current_time() + self.settings.store_timeout_s
        with trio.CancelScope(deadline=deadline):
            try:
                return await work
            except StoreError as exc:
                raise _unavailable(exc.message) from None
        raise _unavailable("no answer in time")


def _unavailable(detail: str) -> _Refusal:
    log.error("webhook delivery refused, the store is unavailable: %s", detail)
    return _Refusal(
        503,
        "store_unavailable",
        "the event could not be stored; retry later",
        **{"Retry-After": str(_STORE_RETRY_S)},
    )


@attrs.define(eq=False)
class _Body:
    """The request body as the door reads it: up to a limit, and whether it was all read."""

    receive: Receive
    #: The whole body must be there this long after the door starts reading it.
    timeout_s: float
    complete: bool = False

    async def read(self, length: str | None, limit: int) -> bytes:
        too_large = _Refusal(
            413,
            "payload_too_large",
            f"the body is larger than this webhook's limit of {limit} bytes",
        )
        if length is not None and length.strip().isdigit() and int(length) > limit:
            raise too_large
        # One deadline for the whole body, not one per chunk: a deadline that
        # each chunk renews lets a client sending a byte now and then hold the
        # connection (and a task) for as long as it likes, which is the attack.
        # Hypercorn's own timers do not help here: its keep-alive timer stops
        # once the headers are in, and a read timeout would cut idle SSE streams.
        with trio.move_on_after(self.timeout_s):
            return await self._read(limit, too_large)
        raise _Refusal(
            408,
            "body_read_timeout",
            f"the body did not all arrive within {self.timeout_s:g} s; send it again, "
            "whole and without pauses",
        )

    async def _read(self, limit: int, too_large: _Refusal) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.complete = True
                raise _Refusal(400, "disconnected", "the client went away before the body ended")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                self.complete = True
                return b"".join(chunks)


async def _refuse_unread(
    body: _Body, send: Send, status: int, error: dict[str, Any], headers: dict[str, str]
) -> None:
    """Refuse a request whose body is still coming, and end its connection.

    The server hands the body over through a small queue: while nobody reads
    it, a full queue stalls the connection (and the server cannot even tell
    the app the client left). So the rest is read and dropped while the
    answer goes out, and the answer says the connection closes: the upload
    stops there instead of being read to its end.
    """

    async def discard() -> None:
        while (await body.receive())["type"] != "http.disconnect":
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(discard)
        await _respond(send, status, error, {**headers, "Connection": "close"})
        nursery.cancel_scope.cancel()


def _encodable(payload: Any) -> bool:
    try:
        json.dumps(payload, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


async def _respond(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(body).encode()
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*_JSON, *extra, (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data, "more_body": False})
