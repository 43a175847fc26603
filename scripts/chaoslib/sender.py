"""A webhook sender that behaves like a good real one: it retries until it is acknowledged.

Each delivery carries an ``Idempotency-Key`` (as GitHub, Stripe and Standard
Webhooks senders carry a delivery id), so a retry of a delivery that was
stored but whose answer was lost is answered 200 with the same event, not
stored twice. The sender retries:

- on any transport error (connection refused while the server is down, a
  connection cut by a crash, no answer in ``request_timeout_s``), after
  ``retry_s`` (plus a little jitter);
- on 429 and 5xx, after the ``Retry-After`` the answer gives (else 1 s);

and stops on 202 or 200 (acknowledged) or another 4xx (refused: a lost
delivery), or when ``give_up_s`` have passed since its first try.

Deliveries go out open-loop (:meth:`Sender.paced`): each on time, in a
task of its own, whatever the earlier ones are doing.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections import Counter
from typing import Any

import attrs
import httpx2
import trio

__all__ = ["Delivery", "Sender", "longest_gap"]

# Bytes of padding in each body, so that it looks like a real event (about 1 KB).
_PADDING = "x" * 800


@attrs.define
class Delivery:
    n: int
    key: str
    first_try_at: float
    tries: int = 0
    acked_at: float | None = None
    event_id: str | None = None
    #: The last HTTP status, or the last transport error's name.
    last: str = ""
    #: Every answer and error, counted.
    answers: Counter[str] = attrs.field(factory=Counter)


@attrs.define(eq=False)
class Sender:
    url: str
    tag: str
    retry_s: float = 0.2
    request_timeout_s: float = 10.0
    give_up_s: float = 120.0
    deliveries: list[Delivery] = attrs.field(factory=list)
    #: Times of acknowledgements (202/200), in order.
    acks: list[float] = attrs.field(factory=list)
    #: Retry-After values seen (s), by status.
    retry_after: Counter[str] = attrs.field(factory=Counter)
    _client: httpx2.AsyncClient | None = None

    def key(self, n: int) -> str:
        return f"chaos-key-{self.tag}-{n}"

    def body(self, n: int) -> bytes:
        payload: dict[str, Any] = {
            "chaos_key": self.key(n),
            "n": n,
            "action": "completed",
            "workflow_run": {"name": "ci", "conclusion": "success", "notes": _PADDING},
        }
        return json.dumps(payload).encode()

    async def paced(self, rate: float, count: int, *, first: int = 0) -> None:
        """``count`` deliveries at ``rate`` a second, each in a task of its own; until all end."""
        limits = httpx2.Limits(max_connections=64, max_keepalive_connections=64)
        async with (
            httpx2.AsyncClient(timeout=self.request_timeout_s, limits=limits) as client,
            trio.open_nursery() as nursery,
        ):
            self._client = client
            start = trio.current_time()
            for i in range(count):
                await trio.sleep_until(start + i / rate)
                nursery.start_soon(self.deliver, first + i)

    async def deliver(self, n: int) -> Delivery:
        if self._client is None:
            raise RuntimeError("deliver() runs inside paced()")
        delivery = Delivery(n=n, key=self.key(n), first_try_at=time.monotonic())
        self.deliveries.append(delivery)
        body = self.body(n)
        headers = {"content-type": "application/json", "idempotency-key": delivery.key}
        give_up_at = delivery.first_try_at + self.give_up_s
        while True:
            delivery.tries += 1
            wait = self.retry_s + random.uniform(0, self.retry_s / 2)  # noqa: S311 - jitter
            try:
                response = await self._client.post(self.url, content=body, headers=headers)
            except httpx2.TransportError as exc:
                delivery.last = type(exc).__name__
            else:
                status = response.status_code
                delivery.last = str(status)
                if status in (200, 202):
                    delivery.acked_at = time.monotonic()
                    delivery.event_id = str(response.json()["event_id"])
                    delivery.answers[delivery.last] += 1
                    self.acks.append(delivery.acked_at)
                    return delivery
                if status != 429 and status < 500:
                    delivery.answers[delivery.last] += 1
                    return delivery  # refused: the sender gives up on it
                after = response.headers.get("retry-after")
                if after is not None and after.isdigit():
                    wait = float(after)
                    self.retry_after[f"{status}: {after} s"] += 1
                else:
                    wait = 1.0
                    self.retry_after[f"{status}: none"] += 1
            delivery.answers[delivery.last] += 1
            if time.monotonic() + wait > give_up_at:
                return delivery
            await trio.sleep(wait)

    def summary(self) -> dict[str, Any]:
        answers: Counter[str] = Counter()
        for d in self.deliveries:
            answers.update(d.answers)
        retried = [d for d in self.deliveries if d.tries > 1]
        acked = [d for d in self.deliveries if d.acked_at is not None]
        waits = sorted((d.acked_at or 0) - d.first_try_at for d in acked)
        return {
            "deliveries": len(self.deliveries),
            "acknowledged": len(acked),
            "retried_deliveries": len(retried),
            "tries": sum(d.tries for d in self.deliveries),
            "answers": dict(answers),
            "retry_after": dict(self.retry_after),
            "max_time_to_ack_s": waits[-1] if waits else None,
        }


def longest_gap(times: list[float], start: float, end: float) -> tuple[float, float]:
    """The longest time between consecutive acknowledgements in [start, end]: (length, its start).

    (0, start) when fewer than two fall in the window.
    """
    inside = sorted(t for t in times if start <= t <= end)
    best, at = 0.0, start
    for a, b in itertools.pairwise(inside):
        if b - a > best:
            best, at = b - a, a
    return best, at
