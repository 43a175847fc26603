-- The delivery log: every request to a webhook's URL, accepted or refused.
-- An accepted one is its event (which now keeps where it came from); the
-- others (refusals, duplicates) are rows of webhook_deliveries, the newest
-- AGENTWS_DELIVERY_LOG_KEEP of each webhook (trimmed by the service, see
-- agentws.webhooks.delivery_log). Ids grow with each row, so a webhook's
-- rows are read newest first, and trimmed, by its index alone. No index on
-- received_at: the sweep of old rows runs every few minutes and finds them
-- first in id order.

ALTER TABLE events ADD COLUMN source TEXT;

CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    received_at TEXT NOT NULL,
    status INTEGER NOT NULL,
    reason TEXT NOT NULL,
    body_bytes INTEGER NOT NULL,
    headers TEXT NOT NULL,
    source TEXT,
    event_id TEXT,
    omitted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
