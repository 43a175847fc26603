-- Webhook rotation without downtime: a new URL (or signing secret) while the
-- previous one keeps working for a grace period. Each has a generation, and
-- every event records the generations it came through, so that an operator
-- sees when the senders have moved.

ALTER TABLE webhooks ADD COLUMN token_generation INTEGER NOT NULL DEFAULT 1;
ALTER TABLE webhooks ADD COLUMN previous_token_hash TEXT;
ALTER TABLE webhooks ADD COLUMN previous_token_until {ts};
ALTER TABLE webhooks ADD COLUMN token_rotated_at {ts};
ALTER TABLE webhooks ADD COLUMN secret_generation INTEGER NOT NULL DEFAULT 1;
ALTER TABLE webhooks ADD COLUMN previous_secret {bytes};
ALTER TABLE webhooks ADD COLUMN previous_secret_until {ts};
ALTER TABLE webhooks ADD COLUMN secret_rotated_at {ts};
CREATE UNIQUE INDEX webhooks_previous_token ON webhooks (previous_token_hash);

ALTER TABLE events ADD COLUMN url_generation INTEGER;
ALTER TABLE events ADD COLUMN secret_generation INTEGER;
