"""Capturing drafts' samples, in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

A sample is written by the webhook door, so it goes through the same group
commit as deliveries' events (:meth:`~agentws.store.database.Database.execute_grouped_nowait`),
never a transaction of its own: one statement stores it, only while its
webhook exists and is a draft that captures (checked in the transaction
that stores it, as an event's insert checks its webhook is active); the
next, queued right behind it, drops that webhook's samples beyond the
newest ``keep``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import outcome

from agentws.domain.models import Webhook, WebhookSample
from agentws.errors import NotFoundError
from agentws.store.tables import Dialect, table_for

if TYPE_CHECKING:
    from agentws.store.database import Database

__all__ = ["SampleQueries"]

log = logging.getLogger("agentws.store")

_TRIM = (
    "DELETE FROM webhook_samples WHERE webhook_id = $1 AND id NOT IN"
    " (SELECT id FROM webhook_samples WHERE webhook_id = $1"
    " ORDER BY received_at DESC, id DESC LIMIT $2)"
)


@functools.cache
def _capture_sql(dialect: Dialect) -> tuple[str, Any, Any]:
    """The insert of a sample (made once); how ``active`` false and ``capture`` true are written."""
    table = table_for(WebhookSample)
    count = len(table.columns)
    marks = ", ".join(f"${i}" for i in range(1, count + 1))
    insert = (
        f"INSERT INTO webhook_samples ({', '.join(table.columns)}) SELECT {marks}"
        " WHERE EXISTS (SELECT 1 FROM webhooks"
        f" WHERE id = ${count + 1} AND active = ${count + 2} AND capture = ${count + 3})"
    )
    webhooks = table_for(Webhook)
    return (
        insert,
        webhooks.encode_value("active", False, dialect),
        webhooks.encode_value("capture", True, dialect),
    )


def _stored(result: outcome.Outcome[int]) -> outcome.Outcome[bool]:
    """Whether the insert stored its row (a webhook deleted meanwhile: it did not)."""
    try:
        return outcome.Value(bool(result.unwrap()))
    except NotFoundError:
        return outcome.Value(False)
    except Exception as exc:
        return outcome.Error(exc)


class SampleQueries:
    """Samples' writes; mixed into :class:`~agentws.store.sql.SqlStore`."""

    _db: Database

    def capture_nowait(
        self,
        sample: WebhookSample,
        *,
        keep: int,
        answer: Callable[[outcome.Outcome[bool]], None],
    ) -> None:
        insert, draft, capturing = _capture_sql(self._db.dialect)
        row = table_for(WebhookSample).encode(sample, self._db.dialect)
        stored: list[outcome.Outcome[bool]] = []
        self._db.execute_grouped_nowait(
            insert, [*row, sample.webhook_id, draft, capturing], lambda r: stored.append(_stored(r))
        )

        def trimmed(result: outcome.Outcome[int]) -> None:
            # Answered once the trim behind it is committed too (statements are
            # committed in order): the caller then sees at most ``keep`` samples.
            if isinstance(result, outcome.Error):
                log.warning(
                    "old samples of webhook %s were not dropped: %r",
                    sample.webhook_id,
                    result.error,
                )
            answer(stored[0] if stored else outcome.Value(False))

        self._db.execute_grouped_nowait(_TRIM, [sample.webhook_id, keep], trimmed)
