"""What the webhook door hands deliveries to: webhooks by token, rate buckets,
verification secrets, the batcher that commits accepted deliveries, and the
delivery log.

Built once by the service (it outlives every request); the door
(:mod:`agentws.doors.webhooks.ingest`) holds it from its constructor.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Protocol

import attrs
import trio

from agentws.core.errors import StoreError
from agentws.domain.deliveries import TokenBucket
from agentws.domain.models import Webhook
from agentws.domain.rules import hash_secret, utcnow
from agentws.settings.secret_box import Keys
from agentws.store.sql_ingest import IngestStore
from agentws.store.sql_rate_limits import RateLimitStore
from agentws.store.sql_records import RecordStore
from agentws.webhooks.batcher import IngestBatcher
from agentws.webhooks.delivery_log import DeliveryLog

__all__ = ["Intake", "Reached"]

# Active webhooks remembered by the door; more than this many starts afresh.
_MAX_REMEMBERED = 10_000


class _Store(RecordStore, IngestStore, RateLimitStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class Reached:
    """A webhook as a delivery reached it: through the URL of ``generation``.

    That is the webhook's current URL, or the one before it while its grace
    lasts (:mod:`agentws.webhooks.rotation`).
    """

    webhook: Webhook
    generation: int

    @property
    def through_previous(self) -> bool:
        return self.generation != self.webhook.token_generation


@attrs.define(eq=False)
class _Lookup:
    """A webhook read in flight, which concurrent deliveries wait for."""

    done: trio.Event = attrs.field(factory=trio.Event)
    answered: bool = False
    reached: Reached | None = None
    error: StoreError | None = None


@attrs.define(eq=False)
class Intake:
    """What the door needs of the running service: the store, the batcher, rate buckets."""

    store: _Store
    batcher: IngestBatcher
    keys: Keys
    #: Where every answer to a known webhook's URL is logged (None: nowhere).
    log: DeliveryLog | None = None
    _buckets: dict[str, tuple[tuple[int, int], TokenBucket]] = attrs.field(factory=dict)
    _secrets: dict[bytes, str] = attrs.field(factory=dict)
    _lookups: dict[str, _Lookup] = attrs.field(factory=dict)
    # token -> an active webhook, as read. By the token itself: a delivery
    # to a remembered webhook then hashes nothing.
    _active: dict[str, Reached] = attrs.field(factory=dict)
    # token hash -> its token in _active (to forget a webhook by its hash)
    _tokens: dict[str, str] = attrs.field(factory=dict)

    async def webhook(self, token: str) -> Reached | None:
        """The webhook whose URL holds ``token`` (its current or, in grace, its previous), or None.

        An active webhook is remembered: a webhook changes after it is made
        only by being deactivated, deleted or rotated, and the transaction
        that stores an event checks all three again (see :meth:`forget`). So
        a delivery costs no read of its own, and a deleted webhook's URL (or
        a rotated one whose grace is over) still answers 404 from that
        moment, by any process.

        Otherwise concurrent deliveries to one webhook share one read in
        flight. A read begun before a request arrived answers it too, which
        is no staler than the request arriving a moment earlier.
        """
        known = self.known(token)
        if known is not None:
            return known
        digest = hash_secret(token)
        flight = self._lookups.get(digest)
        if flight is not None:
            await flight.done.wait()
            if flight.answered:
                if flight.error is not None:
                    raise flight.error
                return flight.reached
        flight = self._lookups[digest] = _Lookup()
        try:
            flight.reached = await self._read(digest)
            flight.answered = True
        except StoreError as exc:
            flight.error, flight.answered = exc, True
            raise
        finally:
            if self._lookups.get(digest) is flight:
                del self._lookups[digest]
            flight.done.set()
        reached = flight.reached
        if reached is not None and reached.webhook.active:
            if len(self._active) >= _MAX_REMEMBERED:
                self._active.clear()
                self._tokens.clear()
            self._active[token] = reached
            self._tokens[digest] = token
        return reached

    async def _read(self, digest: str) -> Reached | None:
        webhook = await self.store.find(Webhook, token_hash=digest)
        if webhook is not None:
            return Reached(webhook, webhook.token_generation)
        webhook = await self.store.find(Webhook, previous_token_hash=digest)
        if webhook is None or not _in_grace(webhook.previous_token_until):
            return None
        return Reached(webhook, webhook.token_generation - 1)

    def known(self, token: str) -> Reached | None:
        """The active webhook whose URL holds ``token``, if remembered (see :meth:`webhook`)."""
        reached = self._active.get(token)
        if (
            reached is not None
            and reached.through_previous
            and not _in_grace(reached.webhook.previous_token_until)
        ):
            self.forget(reached.webhook)
            return None
        return reached

    def forget(self, webhook: Webhook) -> None:
        """Read ``webhook`` afresh next time: storing its event found it deleted, a draft,
        or its URL rotated past the one the delivery came through."""
        for digest in (webhook.token_hash, webhook.previous_token_hash):
            token = self._tokens.pop(digest, None) if digest else None
            if token is not None:
                self._active.pop(token, None)

    async def take(self, webhook: Webhook) -> int | None:
        """A token from the webhook's bucket: None, or the whole seconds to wait for one.

        This process's bucket answers first (:meth:`take_here`). On
        PostgreSQL, where several instances may share the database, a
        delivery this process would let through also takes a token from the
        webhook's shared bucket in the store (:meth:`take_shared`), so that
        a sender cannot multiply the rate by the number of instances. (This
        process's deliveries are a part of all of them: a refusal here would
        be a refusal there too, and costs no query.)

        Error handling:
            StoreError from the shared bucket.
        """
        wait = self.take_here(webhook)
        if wait is not None or not self.shares_buckets:
            return wait
        return await self.take_shared(webhook)

    @property
    def shares_buckets(self) -> bool:
        """Whether a delivery let through here also takes from the store's bucket (PostgreSQL)."""
        return self.store.dialect == "postgres"

    def take_here(self, webhook: Webhook) -> int | None:
        """A token from this process's bucket of ``webhook`` (see :meth:`take`)."""
        shape = (webhook.rate_per_min, webhook.burst)
        held = self._buckets.get(webhook.id)
        if held is None or held[0] != shape:
            held = (shape, TokenBucket(webhook.rate_per_min, webhook.burst))
            self._buckets[webhook.id] = held
        return held[1].take(trio.current_time())

    async def take_shared(self, webhook: Webhook) -> int | None:
        """A token from the store's bucket of ``webhook``, shared by every instance.

        Error handling:
            StoreError.
        """
        shared = await self.store.take_rate_token(
            webhook.id, rate_per_min=webhook.rate_per_min, burst=webhook.burst, now=utcnow()
        )
        return None if shared is None else max(1, math.ceil(shared))

    def secret(self, webhook: Webhook) -> str | None:
        """The webhook's verification secret, unsealed (and kept in memory)."""
        return self._unsealed(webhook.secret)

    def previous_secret(self, webhook: Webhook) -> str | None:
        """The secret before the last rotation, while it still verifies; else None."""
        if not _in_grace(webhook.previous_secret_until):
            return None
        return self._unsealed(webhook.previous_secret)

    def _unsealed(self, sealed: bytes | None) -> str | None:
        if sealed is None:
            return None
        found = self._secrets.get(sealed)
        if found is None:
            found = self.keys.box().open(sealed)
            if len(self._secrets) > 10_000:
                self._secrets.clear()
            self._secrets[sealed] = found
        return found


def _in_grace(until: datetime | None) -> bool:
    return until is not None and until > utcnow()
