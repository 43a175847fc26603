"""Webhooks: creating, updating, listing, activating, deactivating and deleting them.

The one place these operations live; the CLI (and later the dashboard and
the admin API) call these functions, and each change is audited. A
webhook's URL token is returned once, from :func:`create_webhook`, and only
its SHA-256 is stored: rotating the URL is deleting the webhook and
creating it again, after which the old URL answers 404 at once. A
verification secret is kept sealed with the service key, because checking
a signature needs the secret itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from agentws.chat.channels import parse_channel
from agentws.chat.connectors import check_channel
from agentws.common.audit import record_removed, record_webhook_action
from agentws.core.errors import ConflictError, NotFoundError, ValidationError
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import Capability, Group, VerificationScheme, Webhook
from agentws.domain.rules import WEBHOOK_TOKEN_PREFIX, hash_secret, new_secret, utcnow
from agentws.domain.signatures import check_secret
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_changes import ChangeStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "MAX_ALERT_AFTER",
    "MAX_BODY_LIMIT",
    "MAX_CONCURRENCY",
    "MAX_RATE_PER_MIN",
    "IssuedWebhook",
    "WebhookChanges",
    "WebhookOptions",
    "create_webhook",
    "delete_webhook",
    "find_webhook",
    "hook_url",
    "list_webhooks",
    "preauthorized_tools",
    "set_active",
    "update_webhook",
]

_MAX_NAME = 100
_MAX_PROMPT_CHARS = 20_000
#: The largest body limit a webhook may have. A body is parsed whole on the event loop
#: (at the door, and again by the worker), 20-45 ms a MiB for the costliest shapes (many
#: small objects or keys), so the limit bounds how long a delivery holds the loop: at
#: 10 MiB a parse took 0.25-0.6 s. Webhook senders' events are far smaller (GitHub's
#: largest pushes, Stripe's events: tens of KiB).
MAX_BODY_LIMIT = 2 * 1024 * 1024
#: The most events of one webhook run at once, deliveries a minute, and failures before an alert.
MAX_CONCURRENCY = 64
MAX_RATE_PER_MIN = 100_000
MAX_ALERT_AFTER = 1000


class _Store(RecordStore, CatalogStore, ChangeStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class IssuedWebhook:
    """A new webhook and its URL, which holds the token and is shown this once."""

    webhook: Webhook
    url: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class WebhookChanges:
    """What ``agentws webhook update`` changes; None: leave as it is."""

    prompt: str | None = None
    channel: str | None = None
    #: A group slug; "" removes the group.
    group: str | None = None
    allow_tools: tuple[str, ...] = ()
    disallow_tools: tuple[str, ...] = ()
    #: Whether its messages may ping a whole channel (``@channel``, ``@here``...).
    allow_mentions: bool | None = None
    #: Whether, while a draft, it keeps its deliveries as samples (instead of 403).
    capture: bool | None = None
    #: Failed events in a row that post an alert (0: none).
    alert_after: int | None = None
    #: Where alerts go; "" sends them to the webhook's own channel.
    alerts_channel: str | None = None
    #: Whether the alert also pauses the webhook.
    pause_on_failure: bool | None = None


@attrs.frozen(kw_only=True)
class WebhookOptions:
    """What a webhook is created with besides its name, channel and prompt."""

    group: str | None = None
    active: bool = True
    concurrency: int = 4
    verification: VerificationScheme = VerificationScheme.NONE
    secret: str | None = attrs.field(default=None, repr=False)
    rate_per_min: int = 60
    #: Deliveries accepted at once before the rate applies; default min(30, rate).
    burst: int | None = None
    #: Default: ``AGENTWS_MAX_BODY_BYTES``.
    max_body_bytes: int | None = None
    #: Write tools of the group its runs may use without an admin's approval.
    allow_tools: tuple[str, ...] = ()
    #: Its messages may ping a whole channel; off: mass mentions are made inert.
    allow_mentions: bool = False
    #: A draft that keeps its deliveries as samples (:mod:`agentws.webhooks.samples`).
    capture: bool = False
    #: Failed events in a row that post an alert (0: none); see :mod:`agentws.webhooks.alerts`.
    alert_after: int = 3
    #: Where alerts go (None: the webhook's own channel).
    alerts_channel: str | None = None
    #: The alert also pauses the webhook (a draft until activated again).
    pause_on_failure: bool = False


def hook_url(base_url: str, token: str) -> str:
    """The URL a sender POSTs to."""
    return f"{base_url.rstrip('/')}/hooks/{token}"


async def _alerts_channel(
    store: RecordStore,
    workspace_id: str,
    channel: str | None,
    allowlist: Allowlist,
    current: str | None = None,
) -> str | None:
    """The alerts channel as stored, checked as a webhook's channel is (its URL only
    when it changes from ``current``); None for none: the webhook's own channel."""
    if channel is None or not channel.strip():
        return None
    channel_ref = parse_channel(channel)
    moved = str(channel_ref) != current
    await check_channel(store, workspace_id, channel_ref, allowlist if moved else None)
    return str(channel_ref)


def _check_range(value: int, low: int, high: int, what: str) -> int:
    if not low <= value <= high:
        raise ValidationError(f"{what} must be {low} to {high}, got {value}")
    return value


async def create_webhook(
    store: _Store,
    settings: Settings,
    keys: Keys,
    workspace_slug: str,
    *,
    name: str,
    channel: str,
    prompt: str,
    options: WebhookOptions,
    actor: str,
) -> IssuedWebhook:
    """Create a webhook; its URL (with the token) is in the result and nowhere else.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` for a bad value (saying
        which), :class:`~agentws.core.errors.NotFoundError` for an unknown
        workspace or group, :class:`~agentws.core.errors.ConflictError` if the
        name is taken, :class:`~agentws.core.errors.ConfigError` when a secret
        must be kept and there is no service key.
    """
    workspace = await store.workspace_by_slug(workspace_slug)
    name = name.strip()
    if not name or len(name) > _MAX_NAME:
        raise ValidationError(f"webhook name must be 1 to {_MAX_NAME} characters")
    if not prompt.strip():
        raise ValidationError("the prompt is empty: say what the events are and what to post")
    if len(prompt) > _MAX_PROMPT_CHARS:
        raise ValidationError(f"the prompt is longer than {_MAX_PROMPT_CHARS} characters")
    channel_ref = parse_channel(channel)
    await check_channel(store, workspace.id, channel_ref, settings.connector_allowlist)
    group: Group | None = None
    if options.group is not None:
        group = await store.group_by_slug(workspace_slug, options.group)
    _check_range(options.concurrency, 1, MAX_CONCURRENCY, "concurrency")
    _check_range(options.rate_per_min, 1, MAX_RATE_PER_MIN, "rate (per minute)")
    burst = options.burst if options.burst is not None else min(30, options.rate_per_min)
    _check_range(burst, 1, MAX_RATE_PER_MIN, "burst")
    max_body = options.max_body_bytes or settings.max_body_bytes
    _check_range(max_body, 1, MAX_BODY_LIMIT, "max body bytes")
    _check_range(options.alert_after, 0, MAX_ALERT_AFTER, "alert after (failed events)")
    alerts_channel = await _alerts_channel(
        store, workspace.id, options.alerts_channel, settings.connector_allowlist
    )
    allowed = await preauthorized_tools(store, group, options.allow_tools)
    if options.capture and options.active:
        raise ValidationError("a webhook that captures is a draft: create it as a draft")
    check_secret(options.verification, options.secret)
    sealed = keys.box().seal(options.secret) if options.secret else None
    token = new_secret(WEBHOOK_TOKEN_PREFIX)
    webhook = Webhook(
        workspace_id=workspace.id,
        group_id=group.id if group else None,
        name=name,
        channel=str(channel_ref),
        prompt=prompt,
        active=options.active,
        token_hash=hash_secret(token),
        allowed_tools=allowed,
        verification=options.verification,
        secret=sealed,
        rate_per_min=options.rate_per_min,
        burst=burst,
        max_body_bytes=max_body,
        concurrency=options.concurrency,
        allow_mentions=options.allow_mentions,
        capture=options.capture,
        alert_after=options.alert_after,
        alerts_channel=alerts_channel,
        pause_on_failure=options.pause_on_failure,
    )
    try:
        await store.insert(webhook)
    except ConflictError:
        raise ConflictError(
            f"webhook {name!r} already exists in workspace {workspace_slug!r}"
        ) from None
    await record_webhook_action(
        store,
        webhook,
        actor,
        "webhook.create",
        workspace_slug=workspace_slug,
        channel=webhook.channel,
        active=webhook.active,
        verification=webhook.verification.value,
        allowed_tools=sorted(allowed),
        allow_mentions=webhook.allow_mentions,
        capture=webhook.capture,
        alert_after=webhook.alert_after,
        alerts_channel=webhook.alerts_channel,
        pause_on_failure=webhook.pause_on_failure,
    )
    return IssuedWebhook(webhook, hook_url(settings.public_base_url, token))


async def list_webhooks(store: RecordStore, workspace_slug: str) -> list[Webhook]:
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.select(Webhook, workspace_id=workspace.id)


async def find_webhook(store: RecordStore, workspace_slug: str, ref: str) -> Webhook:
    """The workspace's webhook with id or name ``ref``; NotFoundError saying where to look."""
    workspace = await store.workspace_by_slug(workspace_slug)
    found = await store.find(Webhook, workspace_id=workspace.id, id=ref)
    found = found or await store.find(Webhook, workspace_id=workspace.id, name=ref)
    if found is None:
        raise NotFoundError(
            f"no webhook {ref!r} in workspace {workspace_slug!r} "
            f"(see `agentws webhook list {workspace_slug}`)"
        )
    return found


async def set_active(
    store: RecordStore, workspace_slug: str, ref: str, *, active: bool, actor: str
) -> Webhook:
    """Activate a webhook (it accepts deliveries) or make it a draft (403).

    Activating a webhook its failure alert paused ends the pause; its streak
    goes on until an event succeeds (which posts the recovery).
    """
    webhook = await find_webhook(store, workspace_slug, ref)
    if webhook.active != active:
        webhook = await store.update(
            attrs.evolve(webhook, active=active, paused_at=None, updated_at=utcnow())
        )
        action = "webhook.activate" if active else "webhook.deactivate"
        await record_webhook_action(store, webhook, actor, action, workspace_slug=workspace_slug)
    return webhook


async def delete_webhook(
    store: RecordStore, workspace_slug: str, ref: str, *, actor: str
) -> Webhook:
    """Delete a webhook: its URL stops working at once; its queued events are dropped."""
    webhook = await find_webhook(store, workspace_slug, ref)
    target = f"{workspace_slug}/{webhook.name}"
    return await record_removed(
        store, webhook, webhook.workspace_id, actor, "webhook.delete", target, webhook_id=webhook.id
    )


async def preauthorized_tools(
    store: _Store, group: Group | None, names: Iterable[str], already: Mapping[str, str] = {}
) -> dict[str, str]:
    """``already`` plus the write tools ``names`` of ``group``, each bound to its definition.

    A pre-authorized tool runs in the webhook's runs without an admin's
    approval, for as long as its definition is the one authorized here.

    Error handling:
        ValidationError: no group; a tool the group does not have; a read
        tool (it needs nothing); a destructive tool (never pre-authorized).
    """
    allowed = dict(already)
    names = list(dict.fromkeys(n.strip() for n in names))
    if not names:
        return allowed
    if group is None:
        raise ValidationError(
            "--allow-tool needs --group: a webhook's runs have tools only through a group"
        )
    from agentws.tools.catalog import Catalog

    listing = await Catalog(store).tools(group)
    by_name = {t.name: t for t in listing.tools}
    for name in names:
        tool = by_name.get(name)
        if tool is None:
            raise ValidationError(
                f"group {group.slug!r} has no tool {name!r} (see `agentws tool list`)"
            )
        if tool.capability is Capability.DESTRUCTIVE:
            raise ValidationError(
                f"{name} is destructive: destructive tools can never be pre-authorized; "
                "their calls always need a person"
            )
        if tool.capability is Capability.READ:
            raise ValidationError(f"{name} is a read tool: runs may use it without authorization")
        allowed[name] = tool.definition_hash
    return allowed


async def _alert_changes(
    store: RecordStore, webhook: Webhook, changes: WebhookChanges, allowlist: Allowlist
) -> dict[str, Any]:
    """The alert settings ``changes`` changes, checked."""
    fields: dict[str, Any] = {}
    if changes.alert_after is not None and changes.alert_after != webhook.alert_after:
        after = changes.alert_after
        fields["alert_after"] = _check_range(after, 0, MAX_ALERT_AFTER, "alert after")
    if changes.alerts_channel is not None:
        channel = await _alerts_channel(
            store, webhook.workspace_id, changes.alerts_channel, allowlist, webhook.alerts_channel
        )
        if channel != webhook.alerts_channel:
            fields["alerts_channel"] = channel
    pause = changes.pause_on_failure
    if pause is not None and pause != webhook.pause_on_failure:
        fields["pause_on_failure"] = pause
    return fields


async def update_webhook(
    store: _Store,
    workspace_slug: str,
    ref: str,
    *,
    changes: WebhookChanges,
    allowlist: Allowlist,
    actor: str,
) -> Webhook:
    """Change what a webhook's runs do: prompt, channel, group, pre-authorized tools, mentions,
    whether it captures while a draft (its samples stay either way), and its
    failure alerts.

    Changing the group drops the pre-authorizations (they were for the old
    group's tools) unless tools are named again. A new channel's connector
    URL is checked against ``allowlist`` (``AGENTWS_CONNECTOR_ALLOWLIST``)
    as when a connector is saved.

    Error handling:
        ValidationError, NotFoundError as :func:`create_webhook`.
    """
    webhook = await find_webhook(store, workspace_slug, ref)
    fields: dict[str, Any] = {}
    if changes.prompt is not None and changes.prompt != webhook.prompt:
        if not changes.prompt.strip():
            raise ValidationError("the prompt is empty: say what the events are and what to post")
        if len(changes.prompt) > _MAX_PROMPT_CHARS:
            raise ValidationError(f"the prompt is longer than {_MAX_PROMPT_CHARS} characters")
        fields["prompt"] = changes.prompt
    if changes.channel is not None:
        channel_ref = parse_channel(changes.channel)
        moved = str(channel_ref) != webhook.channel
        # Its URL is checked when the channel changes, not at every edit of the prompt.
        await check_channel(store, webhook.workspace_id, channel_ref, allowlist if moved else None)
        if moved:
            fields["channel"] = str(channel_ref)
    group_id = webhook.group_id
    allowed = dict(webhook.allowed_tools)
    if changes.group is not None:
        group_id = (
            (await store.group_by_slug(workspace_slug, changes.group)).id if changes.group else None
        )
        if group_id != webhook.group_id:
            fields["group_id"] = group_id
            allowed = {}
    for name in changes.disallow_tools:
        if allowed.pop(name, None) is None:
            raise ValidationError(f"{name} is not pre-authorized for webhook {webhook.name!r}")
    group = await store.get(Group, group_id) if group_id is not None else None
    allowed = await preauthorized_tools(store, group, changes.allow_tools, allowed)
    if allowed != webhook.allowed_tools:
        fields["allowed_tools"] = allowed
    if changes.allow_mentions is not None and changes.allow_mentions != webhook.allow_mentions:
        fields["allow_mentions"] = changes.allow_mentions
    if changes.capture is not None and changes.capture != webhook.capture:
        fields["capture"] = changes.capture
    fields.update(await _alert_changes(store, webhook, changes, allowlist))
    if not fields:
        return webhook
    updated = await store.update(attrs.evolve(webhook, **fields, updated_at=utcnow()))
    detail = {k: v for k, v in fields.items() if k != "prompt"}
    if "allowed_tools" in detail:
        detail["allowed_tools"] = sorted(allowed)
    await record_webhook_action(
        store,
        webhook,
        actor,
        "webhook.update",
        workspace_slug=workspace_slug,
        changed=sorted(fields),
        **detail,
    )
    return updated
