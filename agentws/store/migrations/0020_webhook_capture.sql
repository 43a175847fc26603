-- A draft webhook may capture: its deliveries are checked as an active
-- webhook's are and kept as samples (the newest 50 per webhook), never run,
-- so that a prompt can be tried on real payloads before the webhook goes live.

ALTER TABLE webhooks ADD COLUMN capture {bool} NOT NULL DEFAULT FALSE;

CREATE TABLE webhook_samples (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    body {bytes} NOT NULL,
    headers {json} NOT NULL,
    received_at {ts} NOT NULL
);
CREATE INDEX webhook_samples_webhook ON webhook_samples (webhook_id, received_at);
