-- Webhook rate limits shared by every instance on one database: one token
-- bucket per webhook, in thousandths of a delivery, as of ``at``.

CREATE TABLE webhook_rate_limits (
    webhook_id TEXT PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
    milli_tokens BIGINT NOT NULL,
    at {ts} NOT NULL
);
