-- Instances of the service sharing this database, for routing MCP sessions:
-- a session's id names its instance, and a request for it that reaches
-- another instance is forwarded to ``internal_url`` while the owner's
-- heartbeat is recent.

CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    internal_url TEXT NOT NULL,
    started_at {ts} NOT NULL,
    heartbeat_at {ts} NOT NULL,
    draining {bool} NOT NULL
);
