-- Failure alerts and bulk replays.
--
-- A webhook's alert settings: after alert_after failed events in a row (0:
-- never) one alert goes to alerts_channel (NULL: the webhook's own channel);
-- with pause_on_failure it also pauses the webhook: a draft (active false)
-- whose paused_at says the alert made it one.
ALTER TABLE webhooks ADD COLUMN alert_after INTEGER NOT NULL DEFAULT 3;
ALTER TABLE webhooks ADD COLUMN alerts_channel TEXT;
ALTER TABLE webhooks ADD COLUMN pause_on_failure {bool} NOT NULL DEFAULT FALSE;
ALTER TABLE webhooks ADD COLUMN paused_at {ts};

-- A webhook's failed events in a row: one open streak per webhook (ended_at
-- NULL), counted in the transaction that fails each event and ended by the
-- one that finishes an event done. Its alert and its recovery are posted
-- once each, by whichever instance takes them (notice_owner until
-- notice_until).
CREATE TABLE webhook_streaks (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    failures INTEGER NOT NULL,
    started_at {ts} NOT NULL,
    last_failed_at {ts} NOT NULL,
    last_event_id TEXT,
    last_error TEXT,
    alerted_at {ts},
    paused_at {ts},
    alert_posted_at {ts},
    alert_message_id TEXT,
    ended_at {ts},
    recovered_event_id TEXT,
    recovery_posted_at {ts},
    recovery_message_id TEXT,
    notice_error TEXT,
    notice_owner TEXT,
    notice_until {ts}
);
CREATE UNIQUE INDEX webhook_streaks_open ON webhook_streaks (webhook_id) WHERE ended_at IS NULL;
CREATE INDEX webhook_streaks_webhook ON webhook_streaks (webhook_id, started_at);
CREATE INDEX webhook_streaks_due ON webhook_streaks (alerted_at)
    WHERE alerted_at IS NOT NULL AND recovery_posted_at IS NULL;

-- A bulk replay skips events already replayed. Deliveries (replay_of NULL)
-- are not in this index, so the door's inserts do not maintain it.
CREATE INDEX events_replay_of ON events (replay_of) WHERE replay_of IS NOT NULL;
