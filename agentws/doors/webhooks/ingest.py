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
draft (or paused) webhook   403     ``webhook_inactive`` (a capturing draft: see below)
body over the limit         413     ``payload_too_large``
body not all there in time  408     ``body_read_timeout`` (connection closed)
neither JSON nor a form     415     ``unsupported_media_type``
body not JSON               400     ``invalid_json``
form body not a form        400     ``invalid_form``
JSON but not an object      422     ``not_an_object``
bad or missing signature    401     ``invalid_signature``
over the rate limit         429     ``rate_limited`` + ``Retry-After``
store unavailable           503     ``store_unavailable`` + ``Retry-After``
==========================  ======  =====================

A form (``application/x-www-form-urlencoded``) is verified on the body as
sent and stored as the event it carries: its ``payload`` field's JSON, or
its fields (:mod:`agentws.domain.form_bodies`). The checks of the body
itself, from the media type to the signature, are
:mod:`agentws.doors.webhooks.delivery_checks`'s.

Every answer to a known webhook's URL is in its delivery log
(:mod:`agentws.webhooks.delivery_log`), never waited for: an accepted
delivery is its event (which keeps the address it came from), any other
answer is a row queued as it is answered. A refusal is counted per webhook
in ``/metrics``.

Then: a new event → 202 ``{"event_id", "status": "queued"}``; a redelivery
(same delivery id, same body) → 200 with the first ``event_id`` and
``"status": "duplicate"`` (for a signed delivery, the id its signature
vouches for: see :func:`agentws.domain.deliveries.dedup_key`); the same id with another body → 409
``idempotency_conflict``. An id that is not usable as a key (empty, over
200 characters) → 400 ``invalid_delivery_id``.

A draft that captures goes through the same checks and keeps the delivery
as a sample (:mod:`agentws.webhooks.samples`), never run: 202
``{"status": "captured", "sample_id"}``; 503 ``webhook_changed`` (retry) if
it was activated, deleted or stopped capturing while the delivery was taken
(or became a capturing draft: the retry is captured).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable
from json.encoder import encode_basestring_ascii
from typing import Any, TypeVar

import attrs
import trio

from agentws.core.errors import StoreError, error_body
from agentws.core.logs import add_log_context
from agentws.core.metrics import INGEST_SECONDS, REJECTED, WEBHOOK_DELIVERIES, WEBHOOK_REFUSALS
from agentws.domain.deliveries import IngestOutcome, allowed_headers, dedup_key
from agentws.domain.delivery_log import DUPLICATE, source_address
from agentws.domain.models import Webhook
from agentws.doors.webhooks.delivery_checks import STORE_RETRY_S, Checked, check_delivery
from agentws.http.asgi import (
    ASGIApp,
    BodyReader,
    BodyRefusals,
    HttpRefusal,
    Receive,
    Scope,
    Send,
    late_body,
    respond,
    respond_json,
)
from agentws.settings.config import Settings
from agentws.webhooks.admin import MAX_BODY_LIMIT
from agentws.webhooks.intake import Intake, Reached
from agentws.webhooks.samples import capture

__all__ = ["HookDoor", "inactive_refusal"]

log = logging.getLogger("agentws.webhooks")

T = TypeVar("T")

_PREFIX = "/hooks/"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,200}")
_NOT_FOUND = "no webhook at this URL (it may have been deleted)"
_INACTIVE = "this webhook is a draft: an admin must activate it"
# The largest Content-Length the delivery log records (any integer column holds it).
_MAX_SIZE = 2**53


_REFUSALS = BodyRefusals(
    too_large=lambda limit: HttpRefusal(
        413, "payload_too_large", f"the body is larger than this webhook's limit of {limit} bytes"
    ),
    late=late_body,
    gone=lambda: HttpRefusal(400, "disconnected", "the client went away before the body ended"),
)


# What an answered delivery costs past its commit is kept to a minimum: the
# answer is formatted, not serialised, and its metric's child is looked up once.
_ANSWER_HEADERS = [(b"content-type", b"application/json")]
_STATUS_WORD = {202: b"queued", 200: b"duplicate"}
_ANSWERED = {202: WEBHOOK_DELIVERIES.labels("queued"), 200: WEBHOOK_DELIVERIES.labels("duplicate")}
_REFUSED = WEBHOOK_DELIVERIES.labels("refused")
_CAPTURED = WEBHOOK_DELIVERIES.labels("captured")


class _Captured(Exception):
    """A capturing draft kept the delivery as a sample: answered 202, never run."""

    def __init__(self, sample_id: str) -> None:
        super().__init__(sample_id)
        self.sample_id = sample_id


class _Seen:
    """What a request was found to be for, for its delivery log row."""

    __slots__ = ("event_id", "headers", "webhook")

    def __init__(self) -> None:
        #: Its webhook, once known (None: an unknown URL, which has no log).
        self.webhook: Webhook | None = None
        self.headers: dict[str, str] | None = None
        #: The event a refused delivery is about (an idempotency conflict's).
        self.event_id: str | None = None


def _answer(status: int, event_id: str) -> bytes:
    """``{"event_id": ..., "status": ...}``, as ``json.dumps`` writes it."""
    quoted = encode_basestring_ascii(event_id).encode()
    return b'{"event_id": %s, "status": "%s"}' % (quoted, _STATUS_WORD[status])


def inactive_refusal(webhook: Webhook) -> HttpRefusal:
    """The 403 of a draft; a webhook its failure alert paused says so, and since when."""
    if webhook.paused_at is None:
        return HttpRefusal(403, "webhook_inactive", _INACTIVE)
    since = webhook.paused_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    return HttpRefusal(
        403,
        "webhook_inactive",
        f"this webhook was paused at {since} after its events kept failing: "
        "an admin must activate it again",
    )


@attrs.define(eq=False)
class HookDoor:
    """The ASGI handler of ``/hooks/...``; everything else goes to ``app``."""

    app: ASGIApp
    settings: Settings
    intake: Intake

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        body = BodyReader(receive, self.settings.body_read_timeout_s)
        started = time.perf_counter()
        seen = _Seen()
        try:
            status, event_id = await self._handle(scope, body, seen)
            add_log_context(event=event_id)
            _ANSWERED[status].inc()
            await respond(send, status, _answer(status, event_id), _ANSWER_HEADERS)
            INGEST_SECONDS.observe(time.perf_counter() - started)
        except _Captured as captured:
            add_log_context(sample=captured.sample_id)
            _CAPTURED.inc()
            answer = {"status": "captured", "sample_id": captured.sample_id}
            await respond_json(send, 202, answer)
        except HttpRefusal as refusal:
            _REFUSED.inc()
            REJECTED.labels("webhook", refusal.code).inc()
            self._refused(scope, body, seen, refusal.status, refusal.code)
            # A body still coming is dropped as the answer goes, and the connection closed.
            refusing = body.answering(scope, send)
            await respond_json(refusing, refusal.status, refusal.body(), refusal.headers)
            if refusal.status == 405:
                await self._refused_method(scope, body)
        except Exception:
            REJECTED.labels("webhook", "internal_error").inc()
            log.exception("webhook delivery to %s failed", _PREFIX + "…")
            self._refused(scope, body, seen, 500, "internal_error")
            # The body may be unread: the rest is dropped as the answer goes.
            answer = error_body("internal_error", "see the server log")
            await respond_json(body.answering(scope, send), 500, answer)

    def _refused(self, scope: Scope, body: BodyReader, seen: _Seen, status: int, code: str) -> None:
        """Count a refusal of a known webhook's delivery, and log it (never waiting)."""
        webhook = seen.webhook
        if webhook is None:
            return  # an unknown URL: counted by REJECTED alone
        WEBHOOK_REFUSALS.labels(webhook.id, code).inc()
        headers = seen.headers if seen.headers is not None else _headers(scope)
        self._logged(scope, seen, status, code, _body_size(body, headers))

    def _logged(self, scope: Scope, seen: _Seen, status: int, reason: str, size: int) -> None:
        """Log an answer the store's commit of its event did not log (never waiting)."""
        delivery_log, webhook = self.intake.log, seen.webhook
        if delivery_log is None or webhook is None:
            return
        try:
            delivery_log.answered(
                webhook.id,
                status,
                reason,
                headers=seen.headers if seen.headers is not None else _headers(scope),
                body_bytes=size,
                client=scope.get("client"),
                event_id=seen.event_id,
            )
        except Exception:  # the log never changes an answer
            log.exception("a webhook delivery could not be logged")

    async def _refused_method(self, scope: Scope, body: BodyReader) -> None:
        """Log a request with another method than POST to a known webhook's URL.

        Its answer does not wait for the webhook to be read (the method is
        checked first): it is read after the answer went, within the
        store's deadline, and an unknown URL is not logged.
        """
        token = scope["path"][len(_PREFIX) :]
        if not _TOKEN.fullmatch(token):
            return
        seen = _Seen()
        with trio.move_on_after(self.settings.store_timeout_s):
            try:
                reached = await self.intake.webhook(token)
            except StoreError:
                return
            seen.webhook = reached.webhook if reached else None
        self._refused(scope, body, seen, 405, "method_not_allowed")

    async def _handle(self, scope: Scope, body_in: BodyReader, seen: _Seen) -> tuple[int, str]:
        """The status (202 or 200) and the event id of a delivery taken, or a refusal."""
        if scope["method"] != "POST":
            raise HttpRefusal(
                405,
                "method_not_allowed",
                f"{scope['method']} is not supported here; deliver events with POST",
                {"Allow": "POST"},
            )
        token = scope["path"][len(_PREFIX) :]
        intake = self.intake
        if not _TOKEN.fullmatch(token):
            raise HttpRefusal(404, "not_found", _NOT_FOUND)
        remembered = intake.known(token)
        if remembered is None:
            reached = await self._current(intake, token, seen)
            return await self._accept(scope, body_in, intake, reached, token, seen)
        try:
            return await self._accept(
                scope, body_in, intake, remembered, token, seen, remembered=True
            )
        except HttpRefusal as refusal:
            # A remembered webhook may have been deleted, deactivated or
            # rotated since: that answer comes before any other, as if it had
            # been read now.
            intake.forget(remembered.webhook)
            await self._current(intake, token, seen)
            if refusal.code == "webhook_inactive":
                # Now a draft that captures (or active again): its retry is taken.
                raise _changed() from None
            raise

    async def _current(self, intake: Intake, token: str, seen: _Seen) -> Reached:
        """The webhook at ``token`` as the store has it now; refused if gone or a draft."""
        reached: Reached | None = await self._store_call(intake.webhook(token))
        seen.webhook = reached.webhook if reached else None
        if reached is None:
            raise HttpRefusal(404, "not_found", _NOT_FOUND)
        if not reached.webhook.active and not reached.webhook.capture:
            raise inactive_refusal(reached.webhook)
        return reached

    async def _accept(
        self,
        scope: Scope,
        body_in: BodyReader,
        intake: Intake,
        reached: Reached,
        token: str,
        seen: _Seen,
        *,
        remembered: bool = False,
    ) -> tuple[int, str]:
        webhook = reached.webhook
        add_log_context(webhook=webhook.id)
        headers = _headers(scope)
        seen.webhook, seen.headers = webhook, headers
        # A webhook stored with a larger limit (earlier versions allowed 10 MiB) takes no more.
        limit = min(webhook.max_body_bytes, MAX_BODY_LIMIT)
        body = await body_in.read(headers.get("content-length"), limit, _REFUSALS)
        try:
            checked = check_delivery(intake, webhook, body, headers)
        except HttpRefusal as refusal:
            if refusal.status != 401 or not remembered:
                raise
            # The secret may have been rotated since the webhook was remembered:
            # check the signature again against the webhook as it is now.
            intake.forget(webhook)
            reached = await self._current(intake, token, seen)
            webhook = reached.webhook
            checked = check_delivery(intake, webhook, body, headers)
        return await self._take_checked(
            intake,
            webhook,
            headers,
            checked,
            url_generation=reached.generation,
            scope=scope,
            seen=seen,
            size=len(body),
        )

    async def take(
        self, intake: Intake, webhook: Webhook, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str]:
        """A delivery to an active ``webhook`` whose body is read (``headers`` in lower case),
        not through its URL: the checks from the content type on, then the commit.

        Returns the status (202 or 200) and the event id, or raises the
        refusal. Test events are taken here (:mod:`agentws.doors.webhooks.sample_sends`).
        """
        checked = check_delivery(intake, webhook, body, headers)
        return await self._take_checked(
            intake, webhook, headers, checked, url_generation=None, size=len(body)
        )

    async def _take_checked(
        self,
        intake: Intake,
        webhook: Webhook,
        headers: dict[str, str],
        checked: Checked,
        *,
        url_generation: int | None,
        size: int,
        scope: Scope | None = None,
        seen: _Seen | None = None,
    ) -> tuple[int, str]:
        """The rest of a delivery whose body passed :meth:`_checked`: the rate limit, the
        delivery id, then the capture or the commit."""
        payload, event_body, signed, secret_generation = checked
        wait = intake.take_here(webhook)
        if wait is None and intake.shares_buckets:
            wait = await self._store_call(intake.take_shared(webhook))
        if wait is not None:
            raise HttpRefusal(
                429,
                "rate_limited",
                f"this webhook takes {webhook.rate_per_min} events a minute; retry in {wait} s",
                {"Retry-After": str(wait)},
            )
        try:
            key = dedup_key(headers, payload, signed)
        except ValueError as exc:
            raise HttpRefusal(400, "invalid_delivery_id", str(exc)) from None
        if not webhook.active:  # a draft that captures: the only draft let this far
            raise _Captured(await self._capture(intake, webhook, event_body, headers))
        # The batcher keeps the store's deadline (a cancel scope per delivery
        # would cost more than the rest of its wait).
        deadline = trio.current_time() + self.settings.store_timeout_s
        stored = await _stored(
            intake.batcher.deliver(
                webhook.id,
                event_body,
                allowed_headers(headers),
                key,
                deadline=deadline,
                url_generation=url_generation,
                secret_generation=secret_generation,
                # Its entry in the delivery log: the event, from where it came.
                source=source_address(scope.get("client")) if scope is not None else None,
            )
        )
        # Accepted and duplicate answers always name their event.
        if stored.outcome is IngestOutcome.ACCEPTED:
            return 202, str(stored.event_id)
        if stored.outcome is IngestOutcome.DUPLICATE:
            if scope is not None and seen is not None:
                seen.event_id = stored.event_id
                self._logged(scope, seen, 200, DUPLICATE, size)
            return 200, str(stored.event_id)
        if seen is not None:
            seen.event_id = stored.event_id
        if stored.outcome is IngestOutcome.CONFLICT:
            raise HttpRefusal(
                409,
                "idempotency_conflict",
                f"delivery id {key!r} was already used for event {stored.event_id} with a "
                "different body",
            )
        intake.forget(webhook)
        if stored.outcome is IngestOutcome.INACTIVE:
            raise inactive_refusal(webhook)
        if stored.outcome is IngestOutcome.UNVERIFIED:
            raise HttpRefusal(
                401,
                "invalid_signature",
                "signature check failed: it was made with a secret rotated out meanwhile",
            )
        if seen is not None:
            seen.webhook = None  # deleted meanwhile: it has no log any more
        raise HttpRefusal(404, "not_found", _NOT_FOUND)

    async def _capture(
        self, intake: Intake, webhook: Webhook, event_body: bytes, headers: dict[str, str]
    ) -> str:
        """Keep the delivery as a sample of ``webhook``; the sample's id."""
        kept = await self._store_call(
            capture(intake.store, webhook, event_body, allowed_headers(headers))
        )
        if kept is None:
            raise _changed()
        return str(kept.id)

    async def _store_call(self, work: Awaitable[Any]) -> Any:
        """``work``'s result within the store's deadline (a webhook read: not every delivery's)."""
        with trio.CancelScope(deadline=trio.current_time() + self.settings.store_timeout_s):
            return await _stored(work)
        raise _unavailable("no answer in time")


async def _stored(work: Awaitable[T]) -> T:
    """``work``'s result; a store error refused as the store being unavailable."""
    try:
        return await work
    except StoreError as exc:
        raise _unavailable(exc.message) from None


def _changed() -> HttpRefusal:
    """The webhook became or stopped being a capturing draft while a delivery was taken."""
    return HttpRefusal(
        503,
        "webhook_changed",
        "the webhook was changed while this delivery was taken; send it again",
        {"Retry-After": "1"},
    )


def _unavailable(detail: str) -> HttpRefusal:
    log.error("webhook delivery refused, the store is unavailable: %s", detail)
    return HttpRefusal(
        503,
        "store_unavailable",
        "the event could not be stored; retry later",
        {"Retry-After": str(STORE_RETRY_S)},
    )


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers, names in lower case (the last of a repeated one)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _body_size(body: BodyReader, headers: dict[str, str]) -> int:
    """The body's size as received; announced by ``Content-Length`` if refused before its end."""
    if body.complete:
        return body.received
    declared = headers.get("content-length", "").strip()
    if declared.isdigit():
        return max(body.received, min(int(declared), _MAX_SIZE))
    return body.received
