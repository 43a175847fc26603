-- Incoming webhooks at work: the event queue, each attempt's record, and
-- the local chat channels' messages. Nothing wrote events or chat messages
-- before this version, so both tables are made anew.

DROP TABLE chat_messages;
DROP TABLE events;

CREATE TABLE events (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    body {bytes} NOT NULL,
    body_hash TEXT NOT NULL,
    headers {json} NOT NULL,
    dedup_key TEXT,
    attempts INTEGER NOT NULL,
    available_at {ts} NOT NULL,
    lease_owner TEXT,
    lease_expires_at {ts},
    error TEXT,
    message_id TEXT,
    prompt TEXT,
    replay_of TEXT,
    received_at {ts} NOT NULL,
    started_at {ts},
    finished_at {ts},
    UNIQUE (webhook_id, dedup_key)
);
CREATE INDEX events_webhook_status ON events (webhook_id, status, received_at);
CREATE INDEX events_status ON events (status, available_at);
CREATE INDEX events_received ON events (received_at);

CREATE TABLE event_attempts (
    id TEXT PRIMARY KEY,
    event_id TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    instance_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    transcript {json} NOT NULL,
    tool_calls {json} NOT NULL,
    usage {json} NOT NULL,
    started_at {ts} NOT NULL,
    finished_at {ts}
);
CREATE INDEX event_attempts_event ON event_attempts (event_id, started_at);

-- Messages outlive the webhook and event that made them: they are the channel's.
CREATE TABLE chat_messages (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    channel TEXT NOT NULL,
    text TEXT NOT NULL,
    event_id TEXT UNIQUE,
    thread TEXT,
    external_id TEXT,
    created_at {ts} NOT NULL
);
CREATE INDEX chat_messages_channel ON chat_messages (workspace_id, channel, created_at);
