"""Samples: the deliveries a capturing draft webhook kept, to try prompts on."""

from __future__ import annotations

from datetime import datetime

import attrs

from agentws.domain.record_fields import id_field, now_field

__all__ = ["WebhookSample"]


@attrs.frozen(kw_only=True)
class WebhookSample:
    """A delivery to a capturing draft: checked as an active webhook's, kept, never run.

    A webhook keeps its newest few (:data:`agentws.webhooks.samples.KEEP`);
    they stay when it is activated, and go with it when it is deleted.
    """

    id: str = id_field("smp")
    webhook_id: str
    #: The event as an active webhook would have stored it (JSON; a form's event).
    body: bytes = attrs.field(repr=False)
    #: Allow-listed request headers, as an event keeps them.
    headers: dict[str, str] = attrs.field(factory=dict)
    received_at: datetime = now_field()
