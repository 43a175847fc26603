"""Rotating a webhook's URL or signing secret without downtime.

A rotation issues a new URL (or takes a new signing secret) while the one
before keeps working for a grace period (24 hours unless told otherwise),
so that senders can be moved one by one. Then the old URL answers 404 and
the old secret verifies nothing. The grace can be ended early. A rotation
during a grace ends that grace: only the last two URLs (or secrets) are
ever valid at once.

Each URL and secret has a generation (1 when made, one more at each
rotation), and every event records the generations it came through
(``Event.url_generation``, ``Event.secret_generation``):
:func:`rotation_status` counts the deliveries of the grace period by them,
so the operator sees when the senders have moved.

The old URL stops being accepted at the instant its grace ends, by every
process: the transaction that stores an event checks the generation it
came through against the webhook's row (:mod:`agentws.store.sql_events`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

import attrs

from agentws.common.audit import record_webhook_action
from agentws.core.errors import ValidationError
from agentws.domain.deliveries import RotationStatus
from agentws.domain.models import VerificationScheme, Webhook
from agentws.domain.rules import WEBHOOK_TOKEN_PREFIX, hash_secret, new_secret, utcnow
from agentws.domain.signatures import check_secret
from agentws.domain.typed_numbers import span
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_records import RecordStore
from agentws.store.sql_rotation import RotationStore
from agentws.webhooks.admin import IssuedWebhook, find_webhook, hook_url

__all__ = [
    "DEFAULT_GRACE",
    "MAX_GRACE",
    "RotationStatus",
    "end_grace",
    "parse_grace",
    "rotate_secret",
    "rotate_url",
    "rotation_status",
]

DEFAULT_GRACE = timedelta(hours=24)
MAX_GRACE = timedelta(days=30)

Which = Literal["url", "secret", "both"]


def parse_grace(text: str, *, name: str = "grace") -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d`` or ``0`` (no grace) as a duration, at most 30 days.

    Error handling:
        :class:`~agentws.domain.typed_numbers.NumberError` naming ``name``.
    """
    return span(text, name=name, high=MAX_GRACE, examples="24h, 30m, 7d or 0")


def _checked(grace: timedelta) -> timedelta:
    if grace < timedelta(0) or grace > MAX_GRACE:
        raise ValidationError(f"the grace period must be 0 to {MAX_GRACE.days} days")
    return grace


async def rotate_url(
    store: RecordStore,
    settings: Settings,
    workspace_slug: str,
    ref: str,
    *,
    grace: timedelta = DEFAULT_GRACE,
    actor: str,
) -> IssuedWebhook:
    """Issue a new URL; the current one keeps working for ``grace`` (0: stops at once).

    The new URL is in the result and nowhere else (only its hash is kept).
    """
    webhook = await find_webhook(store, workspace_slug, ref)
    now = utcnow()
    token = new_secret(WEBHOOK_TOKEN_PREFIX)
    grace = _checked(grace)
    rotated = attrs.evolve(
        webhook,
        token_hash=hash_secret(token),
        token_generation=webhook.token_generation + 1,
        previous_token_hash=webhook.token_hash if grace else None,
        previous_token_until=now + grace if grace else None,
        token_rotated_at=now,
        updated_at=now,
    )
    rotated = await _changed(
        store,
        rotated,
        workspace_slug,
        actor,
        "webhook.rotate_url",
        generation=rotated.token_generation,
        grace_s=int(grace.total_seconds()),
    )
    return IssuedWebhook(rotated, hook_url(settings.public_base_url, token))


async def rotate_secret(
    store: RecordStore,
    keys: Keys,
    workspace_slug: str,
    ref: str,
    *,
    secret: str,
    grace: timedelta = DEFAULT_GRACE,
    actor: str,
) -> Webhook:
    """Verify with ``secret`` from now on; the current secret still verifies for ``grace``.

    Error handling:
        ValidationError for a webhook without a signature scheme, or a
        secret its scheme does not take (a Standard Webhooks secret is
        ``whsec_<base64>``), or the same secret again.
    """
    webhook = await find_webhook(store, workspace_slug, ref)
    if webhook.verification is VerificationScheme.NONE:
        raise ValidationError(
            f"webhook {webhook.name!r} checks no signature (--verify none): its URL is its "
            "only credential; rotate that with `agentws webhook rotate`"
        )
    check_secret(webhook.verification, secret)
    box = keys.box()
    if webhook.secret is not None and box.open(webhook.secret) == secret:
        raise ValidationError("that is the webhook's current secret: nothing to rotate")
    now = utcnow()
    grace = _checked(grace)
    keep = grace and webhook.secret is not None
    rotated = attrs.evolve(
        webhook,
        secret=box.seal(secret),
        secret_generation=webhook.secret_generation + 1,
        previous_secret=webhook.secret if keep else None,
        previous_secret_until=now + grace if keep else None,
        secret_rotated_at=now,
        updated_at=now,
    )
    return await _changed(
        store,
        rotated,
        workspace_slug,
        actor,
        "webhook.rotate_secret",
        generation=rotated.secret_generation,
        grace_s=int(grace.total_seconds()) if keep else 0,
    )


async def end_grace(
    store: RecordStore, workspace_slug: str, ref: str, *, which: Which = "both", actor: str
) -> Webhook:
    """End the grace of the previous URL, secret or both now: they stop working at once."""
    webhook = await find_webhook(store, workspace_slug, ref)
    fields: dict[str, Any] = {}
    if which in ("url", "both") and webhook.previous_token_hash is not None:
        fields |= {"previous_token_hash": None, "previous_token_until": None}
    if which in ("secret", "both") and webhook.previous_secret is not None:
        fields |= {"previous_secret": None, "previous_secret_until": None}
    if not fields:
        return webhook
    return await _changed(
        store,
        attrs.evolve(webhook, **fields, updated_at=utcnow()),
        workspace_slug,
        actor,
        "webhook.end_grace",
        url="previous_token_hash" in fields,
        secret="previous_secret" in fields,
    )


async def _changed(
    store: RecordStore,
    changed: Webhook,
    workspace_slug: str,
    actor: str,
    action: str,
    **details: Any,
) -> Webhook:
    """``changed`` stored, and the change audited as ``action`` with ``details``."""
    stored = await store.update(changed)
    await record_webhook_action(
        store, changed, actor, action, workspace_slug=workspace_slug, **details
    )
    return stored


async def rotation_status(store: RotationStore, webhook: Webhook) -> RotationStatus:
    """How far the senders have moved to the new URL and secret (see :class:`RotationStatus`)."""
    now = utcnow()
    url_until = webhook.previous_token_until
    url_until = url_until if webhook.previous_token_hash and url_until and url_until > now else None
    secret_until = webhook.previous_secret_until
    secret_until = (
        secret_until if webhook.previous_secret and secret_until and secret_until > now else None
    )
    since = webhook.token_rotated_at or webhook.created_at
    url = await store.delivery_generations(webhook.id, "url", webhook.token_generation, since)
    since = webhook.secret_rotated_at or webhook.created_at
    secret = await store.delivery_generations(
        webhook.id, "secret", webhook.secret_generation, since
    )
    return RotationStatus(
        url_generation=webhook.token_generation,
        previous_url_until=url_until,
        via_new_url=url.current,
        via_previous_url=url.previous,
        last_via_previous_url=url.last_previous,
        secret_generation=webhook.secret_generation,
        previous_secret_until=secret_until,
        via_new_secret=secret.current,
        via_previous_secret=secret.previous,
        last_via_previous_secret=secret.last_previous,
    )
